"""What a subtask leaves behind: its result and the text cut from its window, kept under output ids.

Text is kept in the results workspace (`replangraph.context.workspace`). Output ids are ``goal``,
``{task_id}/result`` (a subtask's whole result) and ``{task_id}/{key}`` (a tool call id for tool outputs,
``history-N`` for folded messages, ``summary-N``/``message-…`` for cut messages, ``window-at-failure``),
and ``plan`` (the current plan).

The update builders that end a subtask (`completed`, `failed`, `failed_with_window`) are pure: an update
carries its effects, the ``workspace`` entries to write and the ``events`` to emit, and the node's
`collect_writes` applies them when it returns. Called outside a graph run they write and send nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, ToolMessage

from replangraph.context.compression import transcript
from replangraph.context.fitting import (
    GOAL_ID,
    PAGE_RE,
    PLAN_ID,
    RESULT_KEY,
    excerpt,
    kept_id,
    mark_kept,
    message_key,
    output_id,
    result_id,
    unique_key,
)
from replangraph.context.workspace import (
    WORKSPACE,
    current_workspace,
    entries_of,
    entry_update,
    output_slot,
    result_slot,
)
from replangraph.llm.messages import message_text
from replangraph.names import ASK_USER, READ_OUTPUT
from replangraph.queue.plans import LimitReached
from replangraph.queue.tasks import plan_summary, preview
from replangraph.state import EVENTS, STEP_COMPLETED, STEP_FAILED, StateUpdate, event, merge_workspace

DROPPED = '[output "{id}" removed from context (only the last {keep} tool outputs are kept); {how}]'
DROPPED_START = "[output "
DROPPED_MARK = "removed from context"


def keep_outputs(task: Mapping[str, Any], outputs: Mapping[str, str]) -> dict[str, Any]:
    """The update part (``workspace`` entries) keeping texts cut from a subtask's window, by key. A key
    already held is not written again (callers pick free keys with `unique_key`): a note may point at it."""
    workspace = current_workspace()
    fresh = {key: text for key, text in outputs.items() if not workspace.has(output_slot(task, key))}
    return entries_of(entry_update(output_slot(task, key), text, kind="output") for key, text in fresh.items())


def saved_text(task: Mapping[str, Any], key: str) -> str | None:
    """Text kept for ``task`` under ``key``."""
    return current_workspace().get(output_slot(task, key))


RESULT_PREVIEW_CHARS = 2_000
"""Results up to this long stay whole in the queue; longer ones as an excerpt pointing at the workspace."""


def result_fields(task: Mapping[str, Any], text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(task fields, update part)`` keeping a subtask's result as a new version: the fields point at it
    (``result``, whole when short, else an excerpt; ``result_ref``), the update part holds its
    ``workspace`` entries. An existing version is never overwritten (a replayed or forked run)."""
    workspace = current_workspace()
    version = int((task.get("result_ref") or {}).get("version", 0)) + 1
    while workspace.has(result_slot(task, version)):
        version += 1
    meta = {"kind": "result", "task_id": task["id"], "version": version}
    entries = [entry_update(result_slot(task, version), text, **meta), entry_update(result_slot(task), text, **meta)]
    shown = text if len(text) <= RESULT_PREVIEW_CHARS else excerpt(text, RESULT_PREVIEW_CHARS, result_id(task["id"]))
    ref = {"key": "".join(result_slot(task, version)), "version": version, "chars": len(text)}
    return {"result": shown, "result_ref": ref}, entries_of(entries)


def full_result(task: Mapping[str, Any]) -> str | None:
    """A subtask's whole result: from the workspace when the queue holds a preview, else the queue's."""
    ref = task.get("result_ref")
    if ref:
        found = current_workspace().get(result_slot(task, ref.get("version")))
        if found is not None:
            return found
    return task.get("result")


def read_saved(ident: str, tasks: Mapping[str, Mapping[str, Any]], goal: str, current: str) -> str | None:
    """The full text behind an output id; ids without a task part are looked up in ``current``'s outputs."""
    ident = ident.strip().strip("'\"` ")
    if ident == GOAL_ID:
        return goal
    if ident == PLAN_ID:
        return plan_summary(tasks)
    for index in reversed([i for i, c in enumerate(ident) if c == "/"]):  # task ids may hold a slash too
        task_id, key = ident[:index], ident[index + 1 :]
        if task_id in tasks:
            found = full_result(tasks[task_id]) if key == RESULT_KEY else saved_text(tasks[task_id], key)
            if found is not None:
                return found
    return saved_text(tasks[current], ident) if current in tasks else None


def saved_keys(tasks: Mapping[str, Mapping[str, Any]], task_id: str, limit: int = 20) -> list[str]:
    """Output ids a subtask can read: its own kept outputs, then ``goal``."""
    keys = current_workspace().keys(tasks[task_id], limit) if task_id in tasks else []
    return [output_id(task_id, key) for key in keys] + [GOAL_ID]


def cut_observation(
    message: ToolMessage, max_chars: int, task_id: str, taken: Callable[[str], bool] = lambda key: False
) -> tuple[ToolMessage, str, str | None]:
    """``(message for the window, key, full text to save under it if it was cut)``: head, tail and a note."""
    text = message_text(message) if not isinstance(message.content, str) else message.content
    if len(text) <= max_chars or kept_id(message):
        return message, "", None
    key = unique_key(message_key(message), taken)
    ident = output_id(task_id, key)
    return mark_kept(message, excerpt(text, max_chars, ident), ident), key, text


def is_dropped(message: AnyMessage) -> bool:
    """Whether a tool output was removed from the window by `drop_old_observations`."""
    text = message_text(message)
    return bool(kept_id(message)) and text.startswith(DROPPED_START) and DROPPED_MARK in text[:300]


def drop_old_observations(
    window: Sequence[AnyMessage], keep: int, task_id: str, taken: Callable[[str], bool] = lambda key: False
) -> tuple[list[AnyMessage], dict[str, str]]:
    """``(window, texts to save by key)``: tool outputs beyond the last ``keep`` leave the window.

    Each keeps its message (every tool call keeps its answer) with a note saying how
    to read it back. Texts that are kept already (an excerpt's original, a
    ``read_output`` page) are not saved again.
    """
    result = list(window)
    indices = [i for i, m in enumerate(result) if isinstance(m, ToolMessage)]
    saved: dict[str, str] = {}
    for index in indices[: max(len(indices) - keep, 0)]:
        message = result[index]
        if is_dropped(message) or message.name == ASK_USER:  # the user's answers stay in view
            continue
        text = message_text(message)
        ident = kept_id(message)
        page = PAGE_RE.match(text) if ident else None
        if page:
            how = f'read it again with read_output(output_id="{ident}", offset={page.group(2)})'
        elif ident:
            how = f'read it with read_output(output_id="{ident}")'
        elif message.name == READ_OUTPUT and message.status == "error":
            result[index] = mark_kept(message, f"[{READ_OUTPUT} error removed from context]", READ_OUTPUT)
            continue
        else:
            key = unique_key(message_key(message), lambda k: taken(k) or k in saved)
            ident, saved[key] = output_id(task_id, key), text
            how = f'read it with read_output(output_id="{ident}")'
        result[index] = mark_kept(message, DROPPED.format(id=ident, keep=keep, how=how), ident)
    return result, saved


def window_outputs(window: Sequence[AnyMessage], taken: Callable[[str], bool] = lambda key: False) -> dict[str, str]:
    """Text of every tool output in a window that is not kept already, by a key not ``taken``."""
    outputs: dict[str, str] = {}
    for m in window:
        if isinstance(m, ToolMessage) and not kept_id(m) and (text := message_text(m)):
            outputs[unique_key(message_key(m), lambda k: taken(k) or k in outputs)] = text
    return outputs


def is_taken(task: Mapping[str, Any]) -> Callable[[str], bool]:
    """Whether a key already holds kept text of ``task``."""
    workspace = current_workspace()
    return lambda key: workspace.has(output_slot(task, key))


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
