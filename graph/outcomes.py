"""State updates that end a subtask, shared by the nodes that run subtasks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replangraph.context.compression import transcript
from replangraph.context.fitting import output_id, unique_key
from replangraph.context.kept import is_taken, keep_outputs, result_fields, window_outputs
from replangraph.events import STEP_COMPLETED, STEP_FAILED, emit
from replangraph.queue.plans import LimitReached
from replangraph.queue.tasks import preview
from replangraph.state import StateUpdate


def failed(task: Mapping[str, Any], error: str, model_calls: int, **extra: Any) -> StateUpdate:
    """State update for a failed subtask; the router then hands it to the replanner.

    A partial ``result`` in ``extra`` is kept in the workspace like any result.
    """
    task_id = task["id"]
    emit(STEP_FAILED, task_id=task_id, error=error)
    request = extra.pop("replan_request", None) or {"trigger": "failure", "reason": error}
    partial = extra.pop("result", None)
    change = {"status": "failed", "error": error, "model_calls": model_calls, "replan_request": request, **extra}
    if partial:
        change.update(result_fields(task, partial))
    return {"tasks": {task_id: change}, "windows": {task_id: None}}


def completed(task: Mapping[str, Any], result: str, model_calls: int | None = None, **event: Any) -> StateUpdate:
    """State update for a completed subtask; its result is kept in the workspace."""
    emit(STEP_COMPLETED, task_id=task["id"], result_preview=preview(result, 200), **event)
    change: dict[str, Any] = {"status": "completed", **result_fields(task, result), "error": None}
    if model_calls is not None:
        change["model_calls"] = model_calls
    return {"tasks": {task["id"]: change}, "windows": {task["id"]: None}}


def merge_updates(updates: list[StateUpdate]) -> StateUpdate:
    """One state update from several (parallel subtasks joined in one node, or one subtask's steps in
    order): a later change to a task's field wins; no empty writes."""
    merged: dict = {"tasks": {}, "windows": {}}
    for update in updates:
        for task_id, change in (update.get("tasks") or {}).items():
            before = merged["tasks"].get(task_id)
            both = isinstance(before, dict) and isinstance(change, dict)
            merged["tasks"][task_id] = {**before, **change} if both else change  # a removal or RESET as it is
        merged["windows"].update(update.get("windows") or {})
    return {key: value for key, value in merged.items() if value}


def limit_hit(task: Mapping[str, Any], limit: LimitReached | None) -> dict:
    """``{"limits_hit": {...}}`` adding what ``limit`` refused to the task's record, or {} without one."""
    if limit is None:
        return {}
    hits = dict(task.get("limits_hit") or {})
    hits[limit.limit] = max(hits.get(limit.limit, 0), limit.needed)
    return {"limits_hit": hits}


def keep_window(task: Mapping[str, Any], window: Any) -> str:
    """Keep what a subtask whose window goes had seen and written (its tool outputs, and its window's
    transcript as ``window-at-failure``) in the workspace; returns the note for the error."""
    window = list(window or [])
    if len(window) <= 2:  # only the opening: nothing seen or written yet
        return ""
    taken = is_taken(task)
    outputs = window_outputs(window, taken)
    key = unique_key("window-at-failure", lambda k: taken(k) or k in outputs)
    outputs[key] = transcript(window)
    keep_outputs(task, outputs)
    return f" (its window is kept as output {output_id(task['id'], key)})"


def failed_with_window(task: Mapping[str, Any], window: Any, error: str, model_calls: int, **extra: Any) -> StateUpdate:
    """`failed`, keeping what the subtask had seen and written (see `keep_window`); the error says where."""
    note = keep_window(task, window)
    return failed(task, error + note, model_calls, **extra)
