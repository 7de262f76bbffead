"""tools node: runs the pending tool calls of every subtask in progress, then the router picks what's next.

It is also the join point of parallel executor branches: however many subtasks
took a model turn in the last step, this node runs once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future

from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.runnables.config import ContextThreadPoolExecutor
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp

from replangraph.config import AgentConfig, AgentProfile
from replangraph.events import DYNAMIC_TASKS_ADDED, emit
from replangraph.messages import pending_tool_calls, truncate_middle
from replangraph.nodes.outcomes import completed
from replangraph.queue import Task
from replangraph.tools.replan_toolkit import ReplanSession, replan_toolkit


def run_tool_call(toolbox: Mapping[str, BaseTool], call: dict, max_chars: int) -> ToolMessage:
    """One tool call as a ToolMessage; unknown tools, bad arguments and exceptions become error messages."""
    name, call_id = call.get("name", ""), call.get("id") or ""
    tool = toolbox.get(name)
    if tool is None:
        known = ", ".join(sorted(toolbox))
        return ToolMessage(
            f"Error: no tool named {name!r}. Available: {known}", tool_call_id=call_id, name=name, status="error"
        )
    try:
        reply = tool.invoke({**call, "type": "tool_call"})
    except GraphBubbleUp:
        raise
    except Exception as exc:  # bad arguments or a crashing tool: tell the agent, keep the run
        return ToolMessage(f"Error: {type(exc).__name__}: {exc}", tool_call_id=call_id, name=name, status="error")
    if not isinstance(reply, ToolMessage):
        reply = ToolMessage(str(reply), tool_call_id=call_id, name=name)
    if isinstance(reply.content, str) and len(reply.content) > max_chars:
        reply = reply.model_copy(update={"content": truncate_middle(reply.content, max_chars)})
    return reply


class ToolRunner:
    """Executes tool calls with the subtask's tools plus its own replan toolkit."""

    def __init__(self, profiles: Mapping[str, AgentProfile], config: AgentConfig):
        self.profiles = profiles
        self.config = config

    def run_subtask_tools(
        self, task_id: str, window: Sequence[AnyMessage], tasks: Mapping[str, Task], goal: str
    ) -> dict:
        """The state update after running one subtask's pending tool calls."""
        task = tasks[task_id]
        session = ReplanSession(task_id, tasks, list(self.profiles), self.config, goal=goal)
        tools = [*self.profiles[task["agent_type"]].tools, *replan_toolkit(session)]
        toolbox = {t.name: t for t in tools}
        replies: list[ToolMessage] = []
        for call in pending_tool_calls(window):
            if session.handoff is not None:
                replies.append(
                    ToolMessage(
                        "Not run: this subtask was handed off.",
                        tool_call_id=call.get("id") or "",
                        name=call.get("name", ""),
                        status="error",
                    )
                )
                continue
            replies.append(run_tool_call(toolbox, call, self.config.max_observation_chars))
        session.close()
        if session.handoff is None:
            return {"tasks": {}, "windows": {task_id: [*window, *replies]}}
        new_tasks = session.handoff.tasks
        emit(DYNAMIC_TASKS_ADDED, parent_id=task_id, task_ids=list(new_tasks))
        update = completed(task_id, session.handoff.summary, handed_off=list(new_tasks))
        update["tasks"].update(new_tasks)
        return update

    def __call__(self, state: Mapping) -> dict:
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        windows = state.get("windows") or {}
        goal = state.get("goal", "")
        work = [
            task_id
            for task_id, window in windows.items()
            if task_id in tasks and tasks[task_id]["status"] == "in_progress" and pending_tool_calls(window)
        ]
        if not work:
            return {}
        if len(work) == 1:
            updates = [self.run_subtask_tools(work[0], windows[work[0]], tasks, goal)]
        else:
            with ContextThreadPoolExecutor(max_workers=min(len(work), self.config.max_concurrency)) as pool:
                futures: list[Future] = [
                    pool.submit(self.run_subtask_tools, task_id, windows[task_id], tasks, goal) for task_id in work
                ]
                updates = [f.result() for f in futures]
        merged: dict = {"tasks": {}, "windows": {}}
        for update in updates:
            merged["tasks"].update(update["tasks"])
            merged["windows"].update(update["windows"])
        return merged
