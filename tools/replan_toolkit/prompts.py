"""The replan toolkit's tool and argument descriptions (what the agent reads)."""

from __future__ import annotations

REVIEW_TOOL_DESCRIPTION = (
    "Show the whole plan: completed subtasks with result previews, yours, and the pending ones. "
    "Call it before handing off work."
)

SPLIT_TOOL_DESCRIPTION = (
    "End this subtask: save `summary` as its result and queue `tasks` for the remaining work; they run next."
)

SPLIT_SUMMARY_DESCRIPTION = "The data you collected or produced so far (this subtask's result)."

SPLIT_TASKS_DESCRIPTION = (
    'JSON list of follow-up tasks, e.g. [{"content": "Extract items 6-10"}, {"content": "Extract items 11-15"}]. '
    "A task may name an agent_type (default: yours)."
)

REQUEST_REPLAN_DESCRIPTION = (
    "End this subtask and ask for a new plan of the remaining work, when it cannot be done as planned."
)

REPLAN_REASON_DESCRIPTION = "What blocks the plan, and what you found."
