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

from replangraph.context.outcomes import failed_with_window, merge_updates
from replangraph.context.workspace import collect_writes
from replangraph.llm.reading import calls_to_run


def describe(error: NodeError) -> str:
    """``executor crashed: TypeError: ...``"""
    return f"{error.node} crashed: {type(error.error).__name__}: {error.error}"


def fail_the_subtask(goto: str) -> Callable[..., Command]:
    """Handler for nodes that work on one subtask (a ``Send`` payload): that subtask fails."""

    @collect_writes
    def handle(payload: Mapping[str, Any], error: NodeError) -> Command:
        task = payload["task"]
        update = failed_with_window(task, payload.get("window"), describe(error), task.get("model_calls", 0))
        return Command(update=update, goto=goto)

    return handle


def fail_running_tool_calls(goto: str) -> Callable[..., Command]:
    """Handler for the tools node: every subtask whose tool calls it was running fails."""

    @collect_writes
    def handle(state: Mapping[str, Any], error: NodeError) -> Command:
        tasks, windows = state.get("tasks") or {}, state.get("windows") or {}
        running = [
            tid
            for tid, window in windows.items()
            if tid in tasks and tasks[tid]["status"] == "in_progress" and calls_to_run(window)
        ]
        updates = [
            failed_with_window(tasks[tid], windows[tid], describe(error), tasks[tid].get("model_calls", 0))
            for tid in running
        ]
        return Command(update=merge_updates(updates), goto=goto)

    return handle
