"""What a tool returned, read for the queue: a ``Command`` a tool sent (its update checked: only the subtask's own
queue changes are taken), and whether it ends the subtask."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.types import Command

from replangraph.context.workspace import WORKSPACE
from replangraph.events import EVENTS
from replangraph.llm.reading import message_text
from replangraph.nodes.execution.adapting import (  # noqa: F401  # Hook, run_coroutine, split_middleware: importable here
    Hook,
    async_form,
    run_coroutine,
    split_middleware,
)
from replangraph.queue.tasks import Task

ToolReply = tuple[ToolMessage, dict]
"""A tool call's reply to the agent, and the state update the tool returned (usually {})."""


def command_reply(command: Command, call: dict, task_id: str, tasks: Mapping[str, Task]) -> ToolReply:
    """The reply and state update of a tool that returned ``Command(update=...)``, as LangGraph's
    ``ToolNode`` reads one: its ``messages`` hold the reply. The update may change ``tasks`` and
    end the calling subtask (``windows: {its id: None}``); anything else is refused.

    A reply that names another call is taken as this call's (the window must answer every call).
    """
    name, call_id = call.get("name", ""), call.get("id") or ""
    update = dict(command.update or {})
    messages = update.pop("messages", None) or []
    reply = next((m for m in messages if isinstance(m, ToolMessage)), None)
    windows = update.get("windows") or {}
    problems = [f"key {k!r}" for k in update if k not in ("tasks", "windows", WORKSPACE, EVENTS)]  # effects too
    problems += effect_problems(update)
    problems += [f"window {k!r}" for k, v in windows.items() if k != task_id or v is not None]
    removed = [k for k, v in (update.get("tasks") or {}).items() if v is None]
    problems += [
        f"removal of running task {k!r}" for k in removed if (tasks.get(k) or {}).get("status") == "in_progress"
    ]
    problems += ["goto"] * bool(command.goto) + ["graph"] * (command.graph is not None)
    if problems:
        return refused_command(name, call_id, problems, reply), {}
    if reply is None:
        reply = ToolMessage("Done.", tool_call_id=call_id, name=name)
    elif reply.tool_call_id != call_id or not reply.name:
        reply = reply.model_copy(update={"tool_call_id": call_id, "name": reply.name or name})
    return reply, {k: v for k, v in update.items() if v}


def refused_command(name: str, call_id: str, problems: list[str], reply: ToolMessage | None) -> ToolMessage:
    """The error reply for a tool's ``Command`` this graph cannot apply (``problems``): nothing of it is applied,
    the agent is told why and gets the tool's own reply, if it had one."""
    text = (
        f"Error: tool {name} returned a Command this graph cannot apply ({', '.join(problems)}), so nothing was "
        "updated: a replangraph tool cannot update the graph state directly. It should return its result as its "
        "output (text or a ToolMessage) and keep data for later calls in the store (ToolRuntime.store); a Command "
        "may only queue or end tasks ('tasks', 'windows') and keep outputs ('workspace', 'events')."
    )
    said = message_text(reply) if reply is not None else ""
    if said:
        text += f" Go on with the tool's own reply: {said}"
    return ToolMessage(text, tool_call_id=call_id, name=name, status="error")


def effect_problems(update: Mapping[str, Any]) -> list[str]:
    """What is wrong with the effects a tool's update carries: ``events`` must be a list of objects naming
    their ``event``, and ``workspace`` entries objects by step and key (a bad effect would fail the whole
    tools node when it is applied, and with it every parallel subtask)."""
    events, entries = update.get(EVENTS), update.get(WORKSPACE)
    problems = []
    if events is not None and not (
        isinstance(events, list) and all(isinstance(e, Mapping) and isinstance(e.get("event"), str) for e in events)
    ):
        problems.append("events that are not a list of objects with an 'event' name")
    if entries is not None and not (
        isinstance(entries, Mapping)
        and all(
            isinstance(step, str) and isinstance(keyed, Mapping) and all(isinstance(v, Mapping) for v in keyed.values())
            for step, keyed in entries.items()
        )
    ):
        problems.append("workspace entries that are not objects by step and key")
    return problems


def ends_subtask(update: Mapping, task_id: str) -> bool:
    """Whether a tool's update ends the subtask: its window closed, or its status no longer in progress."""
    status = ((update.get("tasks") or {}).get(task_id) or {}).get("status", "in_progress")
    return task_id in (update.get("windows") or {}) or status != "in_progress"
