"""Tool observations in a subtask window: cut long ones, drop old ones, keep the full text elsewhere."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, ToolMessage

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
