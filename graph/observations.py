"""Saved outputs: what was cut from a subtask's window, kept under an output id the agent can read back.

Text is saved in the graph's store when it has one, else in the task record
(``full_outputs``). Output ids are ``goal``, ``{task_id}/result`` (a subtask's
result, read from the queue) and ``{task_id}/{key}`` (a tool call id for tool
outputs, ``history-N`` for folded messages, ``summary-N``/``message-…`` for cut messages,
``window-at-failure``), and ``plan`` (the current plan).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, ToolMessage
from langgraph.config import get_config, get_store

from .fitting import (
    GOAL_ID,
    PAGE_RE,
    PLAN_ID,
    RESULT_KEY,
    excerpt,
    kept_id,
    mark_kept,
    message_key,
    output_id,
    unique_key,
)
from .messages import message_text
from .queue import plan_summary

READ_OUTPUT = "read_output"
DROPPED = '[output "{id}" removed from context (only the last {keep} tool outputs are kept); {how}]'
DROPPED_START = "[output "
DROPPED_MARK = "removed from context"


def current_store() -> Any:
    """The graph's store, or None (no store, or not inside a graph run)."""
    try:
        return get_store()
    except (RuntimeError, KeyError):  # KeyError: inside a runnable (a tool call) but not a graph run
        return None


def output_namespace(task_id: str) -> tuple[str, ...]:
    """Store namespace of a subtask's saved outputs: ("replangraph", "outputs", thread_id, task_id)."""
    try:
        thread = str(get_config().get("configurable", {}).get("thread_id") or "default")
    except RuntimeError:
        thread = "default"
    return ("replangraph", "outputs", thread, task_id)


def keep_full_outputs(task: Mapping[str, Any], outputs: Mapping[str, str]) -> dict:
    """Save texts cut from the window (by key): in the store if the graph has one, else in the task record.

    A key is written once (callers pick free keys with `unique_key`). Returns the
    task fields to write (empty when the store took them).
    """
    if not outputs:
        return {}
    store = current_store()
    if store is not None:
        namespace = output_namespace(task["id"])
        for key, text in outputs.items():
            if store.get(namespace, key) is None:  # written once: a note may point at it
                store.put(namespace, key, {"content": text})
        return {}
    return {"full_outputs": {**outputs, **(task.get("full_outputs") or {})}}


def saved_text(task: Mapping[str, Any], key: str) -> str | None:
    """Text saved for ``task`` under ``key``."""
    store = current_store()
    if store is not None:
        item = store.get(output_namespace(task["id"]), key)
        if item is not None:
            return str(item.value.get("content", ""))
    found = (task.get("full_outputs") or {}).get(key)
    return found if isinstance(found, str) else None


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
            found = tasks[task_id].get("result") if key == RESULT_KEY else saved_text(tasks[task_id], key)
            if found is not None:
                return found
    return saved_text(tasks[current], ident) if current in tasks else None


def saved_keys(tasks: Mapping[str, Mapping[str, Any]], task_id: str, limit: int = 20) -> list[str]:
    """Output ids a subtask can read: its own saved outputs, then ``goal``."""
    keys: list[str] = []
    store = current_store()
    if store is not None:
        keys = [item.key for item in store.search(output_namespace(task_id), limit=limit)]
    elif task_id in tasks:
        keys = list(tasks[task_id].get("full_outputs") or {})[-limit:]
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
        if is_dropped(message):
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
    """Whether a key already holds kept text of ``task`` (in the store, else in its record)."""
    store = current_store()
    if store is not None:
        namespace = output_namespace(task["id"])
        return lambda key: store.get(namespace, key) is not None
    saved = task.get("full_outputs") or {}
    return lambda key: key in saved
