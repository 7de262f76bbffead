"""The subtask queue, pure (no LangGraph): tasks and their rendering, the incremental index, plans and splits.

What the package exports is the queue's public read API (used by the CLI and notebooks too).
Reading numbered ranges out of instructions is the text policy's (`replangraph.policy`), not the queue's.
"""

from replangraph.queue.tasks import (
    RESET,
    STATUSES,
    Task,
    TaskStatus,
    ordered,
    plan_summary,
    preview,
    spent_model_calls,
    status_counts,
)

__all__ = [
    "RESET",
    "STATUSES",
    "Task",
    "TaskStatus",
    "ordered",
    "plan_summary",
    "preview",
    "spent_model_calls",
    "status_counts",
]
