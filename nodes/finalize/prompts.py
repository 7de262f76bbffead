"""The finalizer's prompts: one request over every result, or parts and their merge."""

from __future__ import annotations

FINALIZER_PROMPT = """\
You write the final answer to the user's goal from the results of the subtasks that were \
run for it. Use every result; keep all items, numbers and names they contain, in order. \
Do not mention subtasks or the plan."""

FINAL_TEMPLATE = """\
Goal: {goal}

Subtask results, in plan order:
{results}"""

FINAL_PART_TEMPLATE = """\
Goal: {goal}

The subtask results are too long for one request, so the final answer is written in parts. \
Write the part of the final answer that covers the results below (a consecutive share of all \
the results, in plan order). Keep every item, number and name they contain, in order. Do not \
write an introduction or a conclusion for the whole answer.

Subtask results:
{results}"""

FINAL_MERGE_TEMPLATE = """\
Goal: {goal}

These parts of the final answer cover consecutive shares of the subtask results, in order. \
Join them into one final answer that keeps every item, number and name of every part, in order.

{parts}"""

LEFT_OUT = """\
Your answer leaves out {count} items of the results (for example: {named}), or shortens a list \
and says so. Write the whole final answer again with every item of the results; never shorten \
a list with "... and N more"."""

ADDED_ITEMS = "Items of the results that the answer above leaves out:"

UNSEEN_RESULTS = (
    "More results, as the subtasks reported them (max_steps left no model calls to write them into the answer):"
)
"""Heads the results that no finalize request showed, which follow the answer word for word."""
"""Heads what replangraph adds after a final answer that drops items of the results, word for word."""

DATA_OUTPUT = (
    "The data behind this answer, every result whole, is output {ident} "
    "(`replangraph output --thread {thread} {ident}`)."
)
"""Follows a short answer (the plan's ``answer_form`` is ``short``) that leaves out items of the results."""
