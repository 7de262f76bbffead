"""Tool outputs in a subtask's window: cut to fit (`cut_observation`), dropped from context once older than the
last few (`drop_old_observations`, each kept whole in the workspace), and found again (`window_outputs`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, ToolMessage

from replangraph.context.excerpts import PAGE_RE
from replangraph.context.fitting import KEPT, excerpt, kept_id, mark_kept, message_key, output_id, unique_key
from replangraph.context.workspace import current_workspace, output_slot
from replangraph.llm.reading import message_text
from replangraph.names import ASK_USER, READ_OUTPUT

DROPPED = '[output "{id}" removed from context (only the last {keep} tool outputs are kept); {how}]'


DROPPED_START = "[output "


DROPPED_MARK = "removed from context"


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
    return marked_outputs("", window, taken)[1]


def marked_outputs(
    task_id: str, window: Sequence[AnyMessage], taken: Callable[[str], bool] = lambda key: False
) -> tuple[list[AnyMessage], dict[str, str]]:
    """``(window, texts by key)``: every tool output of ``window`` not kept already, by a key not ``taken``, and
    the window with each of them marked as kept under its output id (its text unchanged), so that a window carried
    on never keeps them again."""
    outputs: dict[str, str] = {}
    marked = []
    for m in window:
        if isinstance(m, ToolMessage) and not kept_id(m) and (text := message_text(m)):
            key = unique_key(message_key(m), lambda k: taken(k) or k in outputs)
            outputs[key] = text
            metadata = {**(m.response_metadata or {}), KEPT: output_id(task_id, key)}
            m = m.model_copy(update={"response_metadata": metadata})
        marked.append(m)
    return marked, outputs


def is_taken(task: Mapping[str, Any]) -> Callable[[str], bool]:
    """Whether a key already holds kept text of ``task``."""
    workspace = current_workspace()
    return lambda key: workspace.has(output_slot(task, key))
