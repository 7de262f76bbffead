"""The single-agent fallback's brief."""

from __future__ import annotations

FALLBACK_TASK = """\
Finish the overall goal yourself: the plan for it stopped ({why}). You are the one agent that \
takes over. The results of the subtasks that completed come with this subtask: build on them and \
do not redo their work. Work around what failed; the reasons are listed here.
- No agent runs after you and you cannot hand off work: ignore the hand-off rule \
(replan_split_and_handoff is refused) and do all of the remaining work in this subtask, within at \
most {turns} model turns.
- Your final reply is the answer to the overall goal: write it in full.
- If the goal cannot be finished, reply with what you have, then {marker} and what is missing.

What did not finish, and why:
{unfinished}{completed}"""

FALLBACK_COMPLETED_INDEX = """

The {count} completed subtasks' results are not attached (there are too many to fit your window): \
read the ones you need with read_output(output_id="ID/result"), or the whole plan with a preview of \
each result with read_output(output_id="plan"). Completed subtasks: {ids}"""

FALLBACK_UNFINISHED_MORE = "- … and {count} more failed or skipped subtasks: {ids}"
