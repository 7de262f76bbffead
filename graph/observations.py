"""Tool observations in a subtask window: cut long ones, drop old ones, keep the full text elsewhere."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, ToolMessage
from langgraph.config import get_config, get_store

from .messages import message_text, truncate_middle

DROPPED = "[output dropped from context: only the last {keep} tool outputs are kept]"


def cut_observation(message: ToolMessage, max_chars: int) -> tuple[ToolMessage, str | None]:
    """``(message for the window, full text if it was cut)``."""
    text = message_text(message) if not isinstance(message.content, str) else message.content
    if len(text) <= max_chars:
        return message, None
    return message.model_copy(update={"content": truncate_middle(text, max_chars)}), text


def drop_old_observations(window: Sequence[AnyMessage], keep: int) -> tuple[list[AnyMessage], dict[str, str]]:
    """``(window, dropped texts by call id)``: older tool outputs beyond ``keep`` lose their content.

    The messages stay (so every tool call keeps its answer); only their text goes.
    """
    result = list(window)
    indices = [i for i, m in enumerate(result) if isinstance(m, ToolMessage)]
    dropped: dict[str, str] = {}
    for index in indices[: max(len(indices) - keep, 0)]:
        message = result[index]
        if message.content == DROPPED.format(keep=keep):
            continue
        dropped[message.tool_call_id] = message_text(message)
        result[index] = message.model_copy(update={"content": DROPPED.format(keep=keep)})
    return result, dropped


def output_namespace(task_id: str) -> tuple[str, ...]:
    """Store namespace of a subtask's full tool outputs: ("replangraph", "outputs", thread_id, task_id)."""
    try:
        thread = str(get_config().get("configurable", {}).get("thread_id") or "default")
    except RuntimeError:
        thread = "default"
    return ("replangraph", "outputs", thread, task_id)


def keep_full_outputs(task: Mapping[str, Any], outputs: Mapping[str, str]) -> dict:
    """Save outputs cut from the window: in the store if the graph has one, else in the task record."""
    if not outputs:
        return {}
    try:
        store = get_store()
    except RuntimeError:
        store = None
    if store is not None:
        namespace = output_namespace(task["id"])
        for call_id, text in outputs.items():
            store.put(namespace, call_id, {"content": text})
        return {}
    return {"full_outputs": {**(task.get("full_outputs") or {}), **outputs}}


def window_outputs(window: Sequence[AnyMessage]) -> dict[str, str]:
    """Full text of every tool output still in a window, by tool call id."""
    return {
        m.tool_call_id: message_text(m)
        for m in window
        if isinstance(m, ToolMessage) and m.content and not message_text(m).startswith(DROPPED.split("{")[0])
    }
