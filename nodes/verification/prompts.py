"""The completion check's prompts."""

from __future__ import annotations

VERIFIER_PROMPT = """\
You check whether an agent finished its subtask: every item, range, section or question \
its instructions ask for must be in the result. Judge the result against these instructions \
only, not against any larger goal. Agents often stop early and say they have "enough data"; \
that is not complete.
Answer through the Verdict tool:
- `reason`: what is missing, or why it is complete, in one sentence;
- `remaining_tasks`: when incomplete, self-contained instructions for exactly the missing \
work of this subtask (nothing its instructions do not ask for, nothing the result holds), each \
covering at most {batch_size} items."""

VERIFY_TEMPLATE = """\
Subtask ({task_id}): {content}

Result:
{result}"""

VERIFY_EXCERPT_NOTE = """\


Some text above is shown as an excerpt to fit this request: each "[… output … are not shown \
here; the full text is kept …]" note stands for text that exists in full. Omitted text is not \
missing: never count it as missing work."""

GOAL_CHECK_PROMPT = """\
You check whether the results of a run answer its whole goal: every item, range, section or \
question the goal asks for must be in the results. Agents often stop early, and plans leave \
parts out; name only what is really missing.
Answer through the Verdict tool:
- `reason`: what is missing, or why the goal is covered, in one sentence;
- `remaining_tasks`: when something is missing, self-contained instructions for exactly the \
missing work (nothing the results hold), each covering at most {batch_size} items."""

GOAL_CHECK_TEMPLATE = """\
Goal: {goal}

Results of the run, in plan order:
{results}"""

GOAL_INSTRUCTIONS_NOTE = """\


The results are too long for this request, so each subtask is listed with its status and \
instructions instead ([X] completed, [!] failed, [-] skipped). A completed subtask did what its \
instructions ask."""

SENT_BACK = """\
A check of your answer found this subtask incomplete ({reason}; missing: {missing}), and you have \
made no tool call in it yet. If the subtask needs your tools, make the calls now, as tool calls. If your \
answer is right as it is, reply with it again."""
