"""Node-level error handlers (LangGraph's ``add_node(error_handler=...)``).

Nodes catch what they expect (model and tool errors). These handlers catch the
rest, a bug or a broken store included, so that a crash in one subtask's step
becomes a failed subtask (and a replan), not a crashed run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langgraph.errors import NodeError
from langgraph.types import Command

from replangraph.messages import awaiting_verification, message_text, pending_tool_calls
from replangraph.nodes.outcomes import completed, failed


def describe(error: NodeError) -> str:
    """``executor crashed: TypeError: ...``"""
    return f"{error.node} crashed: {type(error.error).__name__}: {error.error}"


def merge(updates: list[dict]) -> dict:
    """One state update from several per-subtask updates."""
    merged: dict = {"tasks": {}, "windows": {}}
    for update in updates:
        merged["tasks"].update(update["tasks"])
        merged["windows"].update(update["windows"])
    return merged


def fail_the_subtask(goto: str) -> Callable[..., Command]:
    """Handler for nodes that work on one subtask (a ``Send`` payload): that subtask fails."""

    def handle(payload: Mapping[str, Any], error: NodeError) -> Command:
        task = payload["task"]
        return Command(update=failed(task["id"], describe(error), task.get("model_calls", 0)), goto=goto)

    return handle


def fail_running_tool_calls(goto: str) -> Callable[..., Command]:
    """Handler for the tools node: every subtask whose tool calls it was running fails."""

    def handle(state: Mapping[str, Any], error: NodeError) -> Command:
        tasks, windows = state.get("tasks") or {}, state.get("windows") or {}
        running = [
            tid
            for tid, w in windows.items()
            if tid in tasks and tasks[tid]["status"] == "in_progress" and pending_tool_calls(w)
        ]
        updates = [failed(tid, describe(error), tasks[tid].get("model_calls", 0)) for tid in running]
        return Command(update=merge(updates), goto=goto)

    return handle


def let_results_stand(goto: str) -> Callable[..., Command]:
    """Handler for the verifier: a broken check never fails a subtask, so every waiting answer stands."""

    def handle(state: Mapping[str, Any], error: NodeError) -> Command:
        tasks, windows = state.get("tasks") or {}, state.get("windows") or {}
        updates = []
        for tid, window in windows.items():
            if awaiting_verification(tasks, tid, window):
                update = completed(tid, message_text(window[-1]).strip())
                note = f"the check failed ({describe(error)}); the result stands"
                update["tasks"][tid]["verdict"] = {
                    "complete": True,
                    "reason": "",
                    "remaining_tasks": [],
                    "follow_up_ids": [],
                    "error": note,
                }
                updates.append(update)
        return Command(update=merge(updates), goto=goto)

    return handle
