"""Shared helpers for driving the graph with scripted models."""

from __future__ import annotations

import asyncio
import re

from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call


def subtask_of(request: ScriptedRequest) -> str:
    """The content of the subtask a request works on ("" for other requests): its first line, with the members'
    lines of a group (``- ...``) after it."""
    found = re.search(r"Your subtask \(([^)]*)\): (.*(?:\n- .*)*)", request.prompt)
    return found.group(2) if found else ""


def is_replan(request: ScriptedRequest) -> bool:
    return "Plan" in request.tool_names and "replanner" in request.system


def plan_of(*tasks: dict) -> dict:
    """A Plan tool call holding ``tasks``."""
    return tool_call("Plan", {"tasks": list(tasks)})


def make_model(plan: dict, work, final=None, replan=None) -> ScriptedChatModel:
    """Planner answers ``plan``, the replanner ``replan(request)`` (default: an empty plan),
    subtasks ``work(request)``; the finalizer joins the results unless ``final`` is given."""

    def respond(request: ScriptedRequest):
        if is_replan(request):
            return replan(request) if replan else plan_of()
        if "Plan" in request.tool_names:
            return plan
        if request.tool_names:
            return work(request)
        if final:
            return final(request)
        return "FINAL:\n" + request.prompt

    return ScriptedChatModel(respond=respond)


WAYS = ("invoke", "ainvoke")
"""How a test may run a graph: the sync path (``invoke``, ``stream``) or the async one (``ainvoke``, ``astream``)."""


def run(graph, goal: str = "do it", way: str = "invoke", **config):
    """Stream a run the ``way`` given (`WAYS`); ``(final state, custom events)``."""
    events, state = [], {}
    cfg = {"configurable": {"thread_id": "t"}, **config}
    given = {"messages": [("user", goal)]}
    if way == "ainvoke":

        async def collect() -> list:
            return [item async for item in graph.astream(given, cfg, stream_mode=["custom", "values"])]

        chunks = asyncio.run(collect())
    else:
        chunks = graph.stream(given, cfg, stream_mode=["custom", "values"])
    for mode, chunk in chunks:
        if mode == "custom":
            events.append(chunk)
        else:
            state = chunk
    return state, events


def invoke(graph, given, config=None, way: str = "invoke"):
    """``graph.invoke(given, config)``, or ``await graph.ainvoke(...)`` when ``way`` is ``ainvoke``."""
    if way == "ainvoke":
        return asyncio.run(graph.ainvoke(given, config))
    return graph.invoke(given, config)


def kept(source: dict, task_id: str, plan_id: str = "1") -> dict[str, str]:
    """Texts kept for a subtask (tool outputs, history, window-at-failure) in a state's or an update's workspace."""
    entries = (source.get("workspace") or {}).get(f"plan:{plan_id}:step:{task_id}", {})
    return {key.removeprefix(":output:"): e["content"] for key, e in entries.items() if key.startswith(":output:")}


def workspace_of(**outputs: dict[str, str]) -> dict:
    """A ``workspace`` channel value holding ``{key: text}`` outputs for each task id (plan 1)."""
    return {
        f"plan:1:step:{task}": {f":output:{k}": {"content": v} for k, v in texts.items()}
        for task, texts in outputs.items()
    }


def result_text(state: dict, task_id: str, plan_id: str = "1") -> str:
    """A subtask's whole result, from the state's workspace (the queue holds a preview of long ones)."""
    return state["workspace"][f"plan:{plan_id}:step:{task_id}"][":result"]["content"]


def look_review_hand_off(request):
    """Read (``look``), review the plan, hand the rest off; the child (``1_dyn_0``) just answers."""
    if "1_dyn_0" in request.prompt:
        return "the rest, done"
    if not request.called("look"):
        return tool_call("look", {"name": "x"})
    if not request.called("replan_review_context"):
        return tool_call("replan_review_context", {})
    return tool_call("replan_split_and_handoff", {"summary": "first half", "tasks": [{"content": "the rest"}]})


LOOKUP_STEPS = [{"id": str(i), "content": f"look up item {i}"} for i in range(1, 7)]
"""Six subtasks, each looking one item up (`look_item`, `look_then_answer`)."""


def look_item(item: str) -> str:
    """Looks one item up."""
    return f"item {item}: found, value {int(item) * 7}"


def look_then_answer(request):
    """A subtask's turns: one ``look_item`` call, then the answer."""
    item = subtask_of(request).rsplit(" ", 1)[-1]
    if not request.called("look_item"):
        return tool_call("look_item", {"item": item})
    return f"item {item} has value {int(item) * 7}"
