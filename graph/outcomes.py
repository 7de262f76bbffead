"""State updates that end a subtask, shared by the nodes that run subtasks.

The builders are pure: an update carries its effects, the ``workspace`` entries to
write and the ``events`` to emit, and the node's `collect_writes` applies them when
it returns. Called outside a graph run they write and send nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replangraph.context.compression import transcript
from replangraph.context.fitting import output_id, unique_key
from replangraph.context.kept import is_taken, keep_outputs, result_fields, window_outputs
from replangraph.context.workspace import WORKSPACE, merge_workspace
from replangraph.events import EVENTS, STEP_COMPLETED, STEP_FAILED, event
from replangraph.queue.plans import LimitReached
from replangraph.queue.tasks import preview
from replangraph.state import StateUpdate


def failed(task: Mapping[str, Any], error: str, model_calls: int, **extra: Any) -> StateUpdate:
    """State update for a failed subtask; the router then hands it to the replanner.

    A partial ``result`` in ``extra`` is kept in the workspace like any result.
    """
    task_id = task["id"]
    request = extra.pop("replan_request", None) or {"trigger": "failure", "reason": error}
    partial = extra.pop("result", None)
    change = {"status": "failed", "error": error, "model_calls": model_calls, "replan_request": request, **extra}
    fields, entries = result_fields(task, partial) if partial else ({}, {})
    change.update(fields)
    ending = {"tasks": {task_id: change}, "windows": {task_id: None}}
    return {**ending, **entries, EVENTS: [event(STEP_FAILED, task_id=task_id, error=error)]}


def completed(task: Mapping[str, Any], result: str, model_calls: int | None = None, **payload: Any) -> StateUpdate:
    """State update for a completed subtask; its result is kept in the workspace."""
    fields, entries = result_fields(task, result)
    change: dict[str, Any] = {"status": "completed", **fields, "error": None}
    if model_calls is not None:
        change["model_calls"] = model_calls
    done = event(STEP_COMPLETED, task_id=task["id"], result_preview=preview(result, 200), **payload)
    return {"tasks": {task["id"]: change}, "windows": {task["id"]: None}, **entries, EVENTS: [done]}


def announced(events: list[dict[str, Any]], update: StateUpdate) -> StateUpdate:
    """``update`` with ``events`` sent before its own."""
    return {**update, EVENTS: [*events, *(update.get(EVENTS) or [])]} if events else update


def merge_updates(updates: list[StateUpdate]) -> StateUpdate:
    """One state update from several (parallel subtasks joined in one node, or one subtask's steps in
    order): a later change to a task's field wins; workspace entries and events are joined in order;
    no empty writes."""
    merged: dict = {"tasks": {}, "windows": {}, WORKSPACE: {}, EVENTS: []}
    for update in updates:
        for task_id, change in (update.get("tasks") or {}).items():
            before = merged["tasks"].get(task_id)
            both = isinstance(before, dict) and isinstance(change, dict)
            merged["tasks"][task_id] = {**before, **change} if both else change  # a removal or RESET as it is
        merged["windows"].update(update.get("windows") or {})
        merged[WORKSPACE] = merge_workspace(merged[WORKSPACE], [update.get(WORKSPACE)])
        merged[EVENTS] += update.get(EVENTS) or []
    return {key: value for key, value in merged.items() if value}


def limit_hit(task: Mapping[str, Any], limit: LimitReached | None) -> dict:
    """``{"limits_hit": {...}}`` adding what ``limit`` refused to the task's record, or {} without one."""
    if limit is None:
        return {}
    hits = dict(task.get("limits_hit") or {})
    hits[limit.limit] = max(hits.get(limit.limit, 0), limit.needed)
    return {"limits_hit": hits}


def keep_window(task: Mapping[str, Any], window: Any) -> tuple[str, dict[str, Any]]:
    """``(note for the error, update part)`` keeping what a subtask whose window goes had seen and
    written (its tool outputs, and its window's transcript as ``window-at-failure``) in the workspace."""
    window = list(window or [])
    if len(window) <= 2:  # only the opening: nothing seen or written yet
        return "", {}
    taken = is_taken(task)
    outputs = window_outputs(window, taken)
    key = unique_key("window-at-failure", lambda k: taken(k) or k in outputs)
    outputs[key] = transcript(window)
    return f" (its window is kept as output {output_id(task['id'], key)})", keep_outputs(task, outputs)


def failed_with_window(task: Mapping[str, Any], window: Any, error: str, model_calls: int, **extra: Any) -> StateUpdate:
    """`failed`, keeping what the subtask had seen and written (see `keep_window`); the error says where."""
    note, kept = keep_window(task, window)
    return merge_updates([kept, failed(task, error + note, model_calls, **extra)])
