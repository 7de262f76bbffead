"""replanner node: handles subtasks that failed or asked for a new plan.

This version settles each request without a model: the flagged subtask stays
failed and everything waiting on it is skipped, so independent work goes on.
"""

from __future__ import annotations

from collections.abc import Mapping

from replangraph.events import REPLANNING, emit
from replangraph.queue import Task, ordered, skip_dependents


class Replanner:
    """Settles replan requests; each one ends its subtask's branch of the plan."""

    def __call__(self, state: Mapping) -> dict:
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        records = list(state.get("replans") or [])
        updates: dict[str, dict] = {}
        for task in ordered(tasks):
            request = task.get("replan_request")
            if not request:
                continue
            skipped = skip_dependents({**tasks, **{k: {**tasks[k], **v} for k, v in updates.items()}}, task["id"])
            updates.update(skipped)
            updates[task["id"]] = {"replan_request": None}
            records.append(
                {
                    "task_id": task["id"],
                    "trigger": request["trigger"],
                    "reason": request["reason"],
                    "new_task_ids": [],
                    "model_calls": 0,
                }
            )
            emit(
                REPLANNING,
                task_id=task["id"],
                trigger=request["trigger"],
                reason=request["reason"],
                new_task_ids=[],
                skipped=list(skipped),
            )
        return {"tasks": updates, "replans": records}
