"""The updates that end a subtask (`completed`, `failed`, and with their window kept: `completed_with_window`,
`failed_with_window`): each carries the task's fields, the workspace entries to write (the result, the window's
outputs) and the events to emit, and the node's `collect_writes` applies them. Pure: called outside a run they
write and send nothing."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from replangraph.context.carried import Read, own_part, read_digests, reads_in, uncarried, with_reads
from replangraph.context.compression import transcript
from replangraph.context.fitting import output_id, unique_key
from replangraph.context.results import keep_outputs, result_fields
from replangraph.context.window_outputs import is_taken, window_outputs
from replangraph.context.workspace import WORKSPACE, current_workspace, output_slot, result_slot
from replangraph.events import EVENTS, STEP_COMPLETED, STEP_FAILED, event
from replangraph.queue.tasks import preview
from replangraph.state import StateUpdate, merge_workspace
from replangraph.tracing import task_label

logger = logging.getLogger(__name__)


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
    logger.warning("%s failed after %d model calls: %s", task_label(task), model_calls, error)
    return {**ending, **entries, EVENTS: [event(STEP_FAILED, task_id=task_id, error=error)]}


def completed(task: Mapping[str, Any], result: str, model_calls: int | None = None, **payload: Any) -> StateUpdate:
    """State update for a completed subtask; its result is kept in the workspace."""
    fields, entries = result_fields(task, result)
    change: dict[str, Any] = {"status": "completed", **fields, "error": None}
    if model_calls is not None:
        change["model_calls"] = model_calls
    done = event(STEP_COMPLETED, task_id=task["id"], result_preview=preview(result, 200), **payload)
    calls = task.get("model_calls", 0) if model_calls is None else model_calls
    logger.info("%s completed after %d model calls (%d characters)", task_label(task), calls, len(result))
    return {"tasks": {task["id"]: change}, "windows": {task["id"]: None}, **entries, EVENTS: [done]}


def combined_ending(task_id: str, endings: Sequence[StateUpdate], flags: Sequence[str]) -> StateUpdate:
    """One update from the updates that ended a subtask in one turn (a hand-off, a replan request,
    a tool's own), in call order, plus ``flags``: problems the replanner should see.

    The last one that completes the subtask wins (a hand-off: its result and follow-ups), else the last;
    the others add their follow-ups, and their replan reasons join ``flags`` in the winner's
    ``replan_request``. Only the winner's events go out (one completion, one list of added tasks)."""

    def own(update: StateUpdate) -> Mapping[str, Any]:
        return (update.get("tasks") or {}).get(task_id) or {}

    winner = next((e for e in reversed(endings) if own(e).get("status") == "completed"), endings[-1])
    losers = [e for e in endings if e is not winner]
    others = [{"tasks": {k: v for k, v in (e.get("tasks") or {}).items() if k != task_id}} for e in losers]
    update = merge_updates([*others, winner])
    requests = [r for r in (own(winner).get("replan_request"), *(own(e).get("replan_request") for e in losers)) if r]
    reasons = [*(r["reason"] for r in requests), *flags]
    if reasons:
        trigger = requests[0]["trigger"] if requests else "failure"
        change = {**own(winner), "replan_request": {"trigger": trigger, "reason": "; ".join(dict.fromkeys(reasons))}}
        update.setdefault("tasks", {})[task_id] = change
    return update


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


def window_reads(task: Mapping[str, Any], window: Any) -> list[Read]:
    """The outputs of its own tools a subtask's window holds (`replangraph.context.carried.reads_in`), an
    output the window dropped read back from the workspace; of a window carried over from a stopped subtask, only
    the part that is the subtask's own (`own_part`: the rest is in the stopped subtask's result)."""
    prefix = f"{task['id']}/"
    workspace = current_workspace()

    def kept_text(ident: str) -> str | None:
        return workspace.get(output_slot(task, ident.removeprefix(prefix))) if ident.startswith(prefix) else None

    return reads_in(own_part(task["id"], list(window or [])), kept_text)


def result_with_reads(task: Mapping[str, Any], window: Any, text: str) -> str:
    """``text`` (an answer, a summary, a partial result), followed by the outputs the subtask's window holds
    whose data it does not show (`with_reads`): what the agent read reaches its result."""
    reads = window_reads(task, window)
    return with_reads(text, reads) if reads else text


def completed_with_window(
    task: Mapping[str, Any], window: Any, result: str, model_calls: int | None = None, **payload: Any
) -> StateUpdate:
    """`completed`, keeping the tool outputs still in the subtask's window that are not kept already; the result
    carries the outputs whose data the answer does not show (`result_with_reads`)."""
    kept = keep_outputs(task, window_outputs(list(window or []), is_taken(task)))
    result = result_with_reads(task, window, result)
    update = merge_updates([kept, completed(task, result, model_calls, **payload)])
    return with_read_digests(update, task, window)


def failed_with_window(task: Mapping[str, Any], window: Any, error: str, model_calls: int, **extra: Any) -> StateUpdate:
    """`failed`, keeping what the subtask had seen and written (see `keep_window`); the error says where. Its
    partial result carries the outputs it read (`result_with_reads`), so what it found reaches the replanner, the
    tasks that take its work over and the final answer."""
    note, kept = keep_window(task, window)
    partial = result_with_reads(task, window, extra.pop("result", None) or "")
    if partial:
        extra["result"] = partial
    return with_read_digests(merge_updates([kept, failed(task, error + note, model_calls, **extra)]), task, window)


def with_read_digests(update: StateUpdate, task: Mapping[str, Any], window: Any) -> StateUpdate:
    """``update`` (one that ends ``task``) with the digests of what its agent's own tools returned
    (`read_digests`), when they returned anything: its follow-ups' progress is told from them."""
    made = read_digests(window_reads(task, window))
    if made and task["id"] in (update.get("tasks") or {}):
        update["tasks"][task["id"]]["read_digests"] = made
    return update


def ending_result(update: StateUpdate, task: Mapping[str, Any]) -> str | None:
    """The whole result an update that ends ``task`` keeps (None: it keeps none)."""
    step, rest = result_slot(task)
    entry = ((update.get(WORKSPACE) or {}).get(step) or {}).get(rest)
    own = (update.get("tasks") or {}).get(task["id"]) or {}
    return str(entry["content"]) if entry and "content" in entry else own.get("result")


def earlier_reads(ending: StateUpdate, task: Mapping[str, Any], window: Any, more: str) -> str:
    """``more`` (what a turn that ended its subtask adds to its result), followed by the outputs of the turns
    before it whose data neither the result the ending keeps nor ``more`` shows (`with_reads`)."""
    reads = window_reads(task, window)
    said = "\n\n".join(part for part in (ending_result(ending, task) or "", more) if part) if reads else ""
    missing = uncarried(said, reads) if reads else []
    if not missing:
        return more
    return "\n\n".join(part for part in (more, with_reads("", missing)) if part)
