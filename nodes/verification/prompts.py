"""The completion check's prompts."""

from __future__ import annotations

VERIFIER_PROMPT = """\
You check whether an agent finished its subtask: every item, range, section or question \
its instructions ask for must be in the result. Agents often stop early and say they have \
"enough data"; that is not complete.
Answer through the Verdict tool:
- `reason`: what is missing, or why it is complete, in one sentence;
- `remaining_tasks`: when incomplete, self-contained instructions for exactly the missing \
work, each covering at most {batch_size} items."""

VERIFY_TEMPLATE = """\
Overall goal: {goal}

Subtask ({task_id}): {content}

Result:
{result}"""

VERIFY_EXCERPT_NOTE = """\


Some text above is shown as an excerpt to fit this request: each "[… output … are not shown \
here; the full text is kept …]" note stands for text that exists in full. Omitted text is not \
missing: never count it as missing work."""
