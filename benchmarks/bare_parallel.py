"""Table 3's run with nothing but LangGraph and LangChain: what the framework alone costs for the same shape.

A graph of five nodes with replangraph's supersteps for each subtask: a model turn per ``Send`` branch
(``executor``), a node where the branches join and every pending tool call runs as a task of its own
(``tools``, the calls through ``langgraph.func.task``), a structured
completion check of every answer waiting for it (``verify``, each check a task of its own, as replangraph's), and
one routing function after the join; at the
end, one structured check of every answer against the goal (``check_goal``), as replangraph's goal check. The
same scripted model and tool as table 3, under ``invoke``; no queue, windows kept whole, no limits, no
context fitting, no error handling. Its speedup is the ceiling this shape reaches on the machine: the engine
work of each superstep is serialised by the GIL while the sleeps overlap.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.func import task
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from pydantic import BaseModel
from typing_extensions import TypedDict

from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

from .engine import ANSWER, SlowProvider


class Verdict(BaseModel):
    """Whether a subtask's answer is complete."""

    complete: bool
    reason: str


def merged(current: Mapping | None, update: Mapping | None) -> dict:
    """Reducer: entries by subtask id, the newest winning."""
    return {**(current or {}), **(update or {})}


class BareState(TypedDict, total=False):
    status: Annotated[dict[str, str], merged]
    """Each subtask's status: pending, running or done."""
    windows: Annotated[dict[str, list[AnyMessage]], merged]
    goal_checked: bool


def respond(request: ScriptedRequest) -> Any:
    """Table 3's subtask: call ``work`` once, then answer; the check finds every answer complete."""
    index = int(re.search(r"item (\d+)", request.prompt).group(1))
    if "Verdict" in request.tool_names:
        return tool_call("Verdict", {"complete": True, "reason": "the item was worked on"})
    if not request.called("work"):
        return tool_call("work", {"index": index})
    return f"{ANSWER} {index}."


def waiting_answer(window: list[AnyMessage]) -> bool:
    return isinstance(window[-1], AIMessage) and not window[-1].tool_calls


def bare_parallel_graph(tasks: int, concurrency: int, work: Callable[[int], str], model_s: float = 0.0) -> Any:
    """``tasks`` independent subtasks, at most ``concurrency`` at once, each calling ``work`` once; the model
    takes ``model_s`` over each answer (`SlowProvider`); the tool calls and checks run as LangGraph tasks."""
    model = SlowProvider(respond=respond, latency_s=model_s) if model_s else ScriptedChatModel(respond=respond)
    work_tool = tool(work)

    @task(name="tool_call")
    def call_work(call: dict) -> Any:
        return work_tool.invoke(call)

    agent, judge = model.bind_tools([work_tool]), model.with_structured_output(Verdict)

    @task(name="node_call")
    def check(messages: list) -> Any:
        return judge.invoke(messages)

    def start(state: BareState) -> dict:
        return {"status": {str(i): "pending" for i in range(1, tasks + 1)}}

    def executor(payload: dict) -> dict:
        window = payload["window"]
        return {"status": {payload["id"]: "running"}, "windows": {payload["id"]: [*window, agent.invoke(window)]}}

    def tools(state: BareState) -> dict:
        windows = state.get("windows") or {}
        calls = {i: w[-1].tool_calls[0] for i, w in windows.items() if getattr(w[-1], "tool_calls", None)}
        started = [call_work(call) for call in calls.values()]  # each call a task of its own, as replangraph's
        replies = dict(zip(calls, [future.result() for future in started], strict=True))
        return {"windows": {i: [*windows[i], reply] for i, reply in replies.items()}}

    def verify(state: BareState) -> dict:
        windows, status = state["windows"], state["status"]
        waiting = [i for i, w in windows.items() if status[i] == "running" and waiting_answer(w)]
        checks = [[HumanMessage(f"Check item {i}: {windows[i][-1].content}")] for i in waiting]
        [future.result() for future in [check(messages) for messages in checks]]  # started together, as replangraph's
        return {"status": dict.fromkeys(waiting, "done")}

    def check_goal(state: BareState) -> dict:
        answers = "\n".join(str(w[-1].content) for w in state["windows"].values())
        judge.invoke([HumanMessage(f"Check the goal for every item 1-{tasks} against these answers:\n{answers}")])
        return {"goal_checked": True}

    def route(state: BareState) -> Any:
        windows, status = state.get("windows") or {}, state["status"]
        running = [i for i, s in status.items() if s == "running"]
        if any(waiting_answer(windows[i]) for i in running):
            return "verify"
        sends = [Send("executor", {"id": i, "window": windows[i]}) for i in running]
        ready = [i for i, s in status.items() if s == "pending"][: concurrency - len(running)]
        sends += [Send("executor", {"id": i, "window": [HumanMessage(f"Work on item {i}")]}) for i in ready]
        return sends or (END if state.get("goal_checked") else "check_goal")

    builder = StateGraph(BareState)
    builder.add_node("start", start)
    builder.add_node("executor", executor)
    builder.add_node("tools", tools)
    builder.add_node("verify", verify)
    builder.add_node("check_goal", check_goal)
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", route, ["executor", END])
    builder.add_edge("executor", "tools")
    builder.add_conditional_edges("tools", route, ["executor", "verify", "check_goal", END])
    builder.add_edge("verify", "tools")
    builder.add_edge("check_goal", END)
    # At most ``concurrency`` branches run in a superstep, as in replangraph's run.
    return builder.compile().with_config(max_concurrency=concurrency, recursion_limit=20 * tasks + 10)


def bare_parallel_run(tasks: int, concurrency: int, work: Callable[[int], str], model_s: float = 0.0) -> float:
    """The run's wall time under ``invoke`` (the graph built beforehand); RuntimeError unless every subtask
    was checked."""
    graph = bare_parallel_graph(tasks, concurrency, work, model_s)
    started = time.perf_counter()
    state = graph.invoke({})
    wall = time.perf_counter() - started
    done = sum(status == "done" for status in state["status"].values())
    if done != tasks:
        raise RuntimeError(f"only {done}/{tasks} subtasks were checked at concurrency {concurrency}")
    return wall
