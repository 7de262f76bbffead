"""The replan toolkit's tool and argument descriptions (what the agent reads)."""

from __future__ import annotations

REVIEW_TOOL_DESCRIPTION = "Show the whole plan: completed subtasks with result previews, yours, and the pending ones."

SPLIT_TOOL_DESCRIPTION = "End this subtask: `summary` becomes its result; `tasks`, the remaining work, run next."

SPLIT_SUMMARY_DESCRIPTION = "The data you collected or produced so far."

SPLIT_TASKS_DESCRIPTION = 'JSON list of tasks, e.g. [{"content": "Extract items 6-10"}]; a task may name an agent_type.'


REQUEST_REPLAN_DESCRIPTION = (
    "End this subtask and ask for a new plan of the remaining work, when it cannot be done as planned."
)

REPLAN_REASON_DESCRIPTION = "What blocks the plan, and what you found."
