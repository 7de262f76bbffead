"""Small helpers over LangChain messages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, convert_to_messages


def message_text(message: BaseMessage) -> str:
    """The text of a message, whether its content is a string or a list of content blocks.

    Like ``BaseMessage.text``, but it also survives odd list items (tool outputs may hold any).
    """
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def resolve_goal(state: Mapping[str, Any]) -> tuple[str, bool]:
    """The run's goal and whether it came from ``goal`` rather than the messages.

    The last message wins when it is a human message (a new turn of a chat);
    otherwise the ``goal`` key; otherwise the latest human message.
    """
    messages: Sequence[AnyMessage] = convert_to_messages(state.get("messages") or [])
    if messages and isinstance(messages[-1], HumanMessage) and message_text(messages[-1]).strip():
        return message_text(messages[-1]).strip(), False
    goal = str(state.get("goal") or "").strip()
    if goal:
        return goal, True
    for message in reversed(messages):
        if isinstance(message, HumanMessage) and message_text(message).strip():
            return message_text(message).strip(), False
    raise ValueError("replangraph needs a goal: pass a human message in `messages` or a `goal` string")


def pending_tool_calls(window: Sequence[AnyMessage]) -> list[dict]:
    """Tool calls of the window's last AI message that have no ToolMessage yet."""
    if not window or not isinstance(window[-1], AIMessage):
        return []
    return list(window[-1].tool_calls)


def awaiting_verification(tasks: Mapping[str, Any], task_id: str, window: Sequence[AnyMessage] | None) -> bool:
    """Whether a running subtask's window ends with a final answer that waits for the completion check."""
    task = tasks.get(task_id)
    last = window[-1] if window else None
    return bool(task and task["status"] == "in_progress" and isinstance(last, AIMessage) and not last.tool_calls)


def truncate_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping head and tail around a marker."""
    if len(text) <= limit:
        return text
    marker = "\n[… {cut} characters cut …]\n"
    keep = max(limit - len(marker.format(cut=len(text))), 0)
    head, tail = keep - keep // 3, keep // 3
    cut = len(text) - head - tail
    return text[:head] + marker.format(cut=cut) + (text[len(text) - tail :] if tail else "")
