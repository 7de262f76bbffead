"""Small helpers over LangChain messages."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
)

from replangraph.llm.lenient import UnreadableInput, check_nesting, load_json, match_name, strip_fences
from replangraph.names import ASK_USER


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


def all_tool_calls(message: AIMessage) -> list[dict]:
    """A reply's tool calls, unreadable ones included (``type: invalid_tool_call``, ``error``):
    providers count those as calls too, and each needs an answer."""
    return [*message.tool_calls, *message.invalid_tool_calls]


def pending_tool_calls(window: Sequence[AnyMessage]) -> list[dict]:
    """Tool calls of the window's last AI message that no ToolMessage after it answers yet
    (the ask_user calls of a turn wait for the user while its other calls are answered)."""
    answered: set[str] = set()
    for message in reversed(window):
        if isinstance(message, AIMessage):
            return [c for c in all_tool_calls(message) if (c.get("id") or "") not in answered]
        if not isinstance(message, ToolMessage):
            return []
        answered.add(message.tool_call_id)
    return []


def waiting_questions(window: Sequence[AnyMessage]) -> list[dict]:
    """The window's ask_user calls that have no answer yet."""
    return [c for c in pending_tool_calls(window) if c.get("name") == ASK_USER]


def calls_to_run(window: Sequence[AnyMessage]) -> list[dict]:
    """The window's unanswered tool calls that the tools node runs (all but the questions)."""
    return [c for c in pending_tool_calls(window) if c.get("name") != ASK_USER]


def repair_tool_calls(reply: AIMessage, tool_names: Sequence[str]) -> AIMessage:
    """``reply`` with the tool calls a model meant but did not send cleanly.

    Arguments nested absurdly deep are removed (the call is answered with an error).
    Arguments a provider could not parse (fenced JSON, prose around the JSON) are read
    leniently; a reply whose whole text is a tool call written as JSON
    (``{"name": ..., "arguments": {...}}``, as local servers without a tool parser
    return) becomes that call. Anything else is left as it was.
    """
    calls, invalid = [], []
    for call in reply.tool_calls:
        try:
            check_nesting(call.get("args"))
            calls.append(call)
        except UnreadableInput as exc:  # kept as it was, the reply could not even be sent back to the model
            invalid.append(
                {
                    "name": call.get("name"),
                    "args": "(removed: nested too deeply)",
                    "id": call.get("id"),
                    "error": str(exc),
                    "type": "invalid_tool_call",
                }
            )
    for bad in reply.invalid_tool_calls:
        try:
            args = load_json(bad.get("args") or "")
        except UnreadableInput:
            args = None
        if isinstance(args, dict) and bad.get("name"):
            calls.append({"name": bad["name"], "args": args, "id": bad.get("id"), "type": "tool_call"})
        else:
            invalid.append(bad)
    calls = [named_as_known(call, tool_names) for call in calls]
    content = reply.content
    if not calls and not invalid:
        written = calls_written_as_text(message_text(reply), tool_names)
        if written:
            calls, content = written, ""
    calls, invalid = with_ids(calls), with_ids(invalid)
    if calls == reply.tool_calls and invalid == reply.invalid_tool_calls:
        return reply
    return reply.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid, "content": content})


def named_as_known(call: dict, tool_names: Sequence[str]) -> dict:
    """``call`` under the known tool name it spells loosely (``AskUser``, ``ask-user`` for ``ask_user``)."""
    known = match_name(call.get("name") or "", tool_names)
    return call if known in (None, call.get("name")) else {**call, "name": known}


def with_ids(calls: list[dict]) -> list[dict]:
    """Tool calls, each with an id (some local servers send none): the reply must name the call it answers."""
    return [call if call.get("id") else {**call, "id": f"call_{uuid.uuid4().hex[:24]}"} for call in calls]


def calls_written_as_text(text: str, tool_names: Sequence[str]) -> list[dict]:
    """Tool calls when ``text`` is nothing but JSON naming known tools, else []."""
    body = strip_fences(text)
    if body[:1] not in ("{", "["):
        return []
    try:
        value = load_json(body)
    except UnreadableInput:
        return []
    calls = []
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, Mapping):
            return []
        call = item.get("function") if isinstance(item.get("function"), Mapping) else item
        name = call.get("name")
        args = next((call[k] for k in ("arguments", "parameters", "args", "input") if k in call), None)
        if isinstance(args, str):
            try:
                args = load_json(args)
            except UnreadableInput:
                return []
        if name not in tool_names or not isinstance(args, Mapping):
            return []
        digest = hashlib.sha1(json.dumps([name, args], sort_keys=True, default=str).encode()).hexdigest()[:12]
        calls.append({"name": name, "args": dict(args), "id": f"call_text_{digest}", "type": "tool_call"})
    return calls


def ends_with_answer(window: Sequence[AnyMessage] | None) -> bool:
    """Whether a window ends with a model reply that calls no tool: a final answer."""
    last = window[-1] if window else None
    return isinstance(last, AIMessage) and not all_tool_calls(last)


def answers_waiting(tasks: Mapping[str, Any], windows: Mapping[str, Sequence[AnyMessage]]) -> list[str]:
    """Ids of running subtasks whose window ends with a final answer waiting for the completion check."""
    return [
        tid
        for tid, window in windows.items()
        if tid in tasks and tasks[tid]["status"] == "in_progress" and ends_with_answer(window)
    ]
