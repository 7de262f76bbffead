"""The replan toolkit's tool and argument descriptions (what the agent reads)."""

from __future__ import annotations

REVIEW_TOOL_DESCRIPTION = "The plan: completed subtasks (result previews), yours, pending ones."

SPLIT_TOOL_DESCRIPTION = "End this subtask: `summary` is its result; `tasks`, the remaining work, run next."

SPLIT_SUMMARY_DESCRIPTION = "The data you collected or produced so far."

SPLIT_TASKS_DESCRIPTION = (
    'JSON list of self-contained tasks, e.g. [{"content": "Extract items 6-10"}]; a task may name an agent_type.'
)


REQUEST_REPLAN_DESCRIPTION = "End this subtask and ask for a new plan of the remaining work."

REPLAN_REASON_DESCRIPTION = "What blocks the plan, and what you found."
