"""State updates that end a subtask, shared by the executor and tools nodes."""

from __future__ import annotations

from typing import Any

from replangraph.events import STEP_COMPLETED, STEP_FAILED, emit
from replangraph.queue import preview


def failed(task_id: str, error: str, model_calls: int, **extra: Any) -> dict:
    """State update for a failed subtask; the router then hands it to the replanner."""
    emit(STEP_FAILED, task_id=task_id, error=error)
    request = extra.pop("replan_request", None) or {"trigger": "failure", "reason": error}
    change = {"status": "failed", "error": error, "model_calls": model_calls, "replan_request": request, **extra}
    return {"tasks": {task_id: change}, "windows": {task_id: None}}


def completed(task_id: str, result: str, model_calls: int | None = None, **event: Any) -> dict:
    """State update for a completed subtask."""
    emit(STEP_COMPLETED, task_id=task_id, result_preview=preview(result, 200), **event)
    change: dict[str, Any] = {"status": "completed", "result": result, "error": None}
    if model_calls is not None:
        change["model_calls"] = model_calls
    return {"tasks": {task_id: change}, "windows": {task_id: None}}
