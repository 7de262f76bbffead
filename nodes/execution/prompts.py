"""The executing agent's prompts: the rules every subtask's system prompt ends with (after its agent type's own
prompt). The replan toolkit's tool names and the replan marker come from `replangraph.names`."""

from __future__ import annotations

from replangraph.names import REPLAN_MARKER, REVIEW_TOOL, SPLIT_TOOL

EXECUTION_RULES = f"""\
Rules:
- Your final reply (no tool calls) is the subtask's result: put the data in it; later subtasks see only that.
- More than {{batch_size}} items: process one batch of at most {{batch_size}} and call `{REVIEW_TOOL}` \
(independent calls in one reply), then `{SPLIT_TOOL}`: your data as `summary`, the rest as \
tasks of at most {{batch_size}} items. It ends your subtask.
- If it cannot be done as planned, reply with {{marker}} and the reason."""


def execution_rules(batch_size: int) -> str:
    """The rules every executing agent gets, with the batch size filled in."""
    return EXECUTION_RULES.format(batch_size=batch_size, marker=REPLAN_MARKER)


def system_prompt(agent_prompt: str, batch_size: int) -> str:
    """A subtask's system prompt: its agent type's prompt, then the rules."""
    return agent_prompt + "\n\n" + execution_rules(batch_size)
