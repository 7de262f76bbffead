"""A tool call that runs as an activity of its own crosses to the worker as plain data (`CallSpec`): the tool, its
wrapper chain and its clock are rebuilt there from the worker's own graph, so the worker may be another process.
No server; skipped without the temporal extra."""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("temporalio.langgraph", reason='needs the temporal extra: pip install "replangraph[temporal]"')

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from replangraph import build_graph  # noqa: E402
from replangraph.llm.time_limits import StepClock  # noqa: E402
from replangraph.names import TOOLS  # noqa: E402
from replangraph.nodes.execution import calls  # noqa: E402
from replangraph.nodes.execution.calls import CallJob, CallSpec, arun_call, run_call  # noqa: E402
from replangraph.nodes.execution.injection import subtask_view  # noqa: E402
from replangraph.queue.tasks import new_task  # noqa: E402
from replangraph.temporal import data_converter, registry, temporal_builder  # noqa: E402
from replangraph.testing import ScriptedChatModel  # noqa: E402


@tool
def rainfall(city: str) -> str:
    """The yearly rainfall of one city."""
    return f"{city}: 763 mm"


CALL = {"name": "rainfall", "args": {"city": "Oslo"}, "id": "call_1", "type": "tool_call"}


def crossed(value):
    converter = data_converter.payload_converter
    return converter.from_payload(converter.to_payload(value))


@pytest.fixture(scope="module")
def agent_type():
    """A worker's graph, registered (as `plugin_for` does on every worker); its agent type."""
    compiled = build_graph(ScriptedChatModel(respond=lambda request: "done"), tools=[rainfall])
    temporal_builder(compiled, name="test-calls", in_workflow=(TOOLS,))
    return next(iter(registry._tool_runners["test-calls"].profiles))


def job(agent_type, limit_s=30.0):
    window = [HumanMessage("Rainfall of Oslo", id="h1"), AIMessage("", id="a1", tool_calls=[CALL])]
    tasks = {"1": new_task("1", "Rainfall of Oslo", position=[0], agent_type=agent_type)}
    view = subtask_view("1", window, tasks, "the goal")
    chain = lambda request: None  # noqa: E731 - stays in this process
    return CallJob("1", CALL, rainfall, view, [rainfall], chain, StepClock(0.0, limit_s), agent_type)


def test_a_call_job_crosses_as_its_spec(agent_type):
    back = crossed(job(agent_type))
    assert isinstance(back, CallSpec)
    assert (back.task_id, back.agent_type, back.call) == ("1", agent_type, CALL)
    assert [type(m) for m in back.view["messages"]] == [HumanMessage, AIMessage]
    assert back.view["messages"][1].tool_calls[0]["id"] == "call_1"
    assert back.view["task"]["agent_type"] == agent_type
    assert 25 < back.deadline - time.time() <= 30


def test_the_worker_rebuilds_and_runs_the_call(agent_type):
    spec = crossed(job(agent_type))
    for done in (run_call.func(spec), asyncio.run(arun_call.func(spec))):
        reply = done["result"]
        assert isinstance(reply, ToolMessage)
        assert (reply.content, reply.tool_call_id) == ("Oslo: 763 mm", "call_1")


def test_a_call_past_its_deadline_is_not_started(agent_type):
    spec = crossed(job(agent_type, limit_s=0.0))
    assert asyncio.run(arun_call.func(spec)) == {"timeout": calls.NOT_STARTED}


def test_a_spec_without_a_graph_to_rebuild_it_fails_clearly(agent_type):
    spec = crossed(job(agent_type))
    calls.build_jobs_with(None)
    try:
        with pytest.raises(RuntimeError, match="no graph to rebuild it from"):
            run_call.func(spec)
    finally:
        calls.build_jobs_with(registry.job_from_spec)


def test_a_calls_view_crosses_with_its_subtask_and_what_it_depends_on(agent_type):
    """What a call carries grows with its subtask, not with the run: a parent's completion verdict names every
    follow-up it queued, and each follow-up depends on it."""
    follow_ups = [f"1_dyn_{i}" for i in range(200)]
    parent = {**new_task("1", "Products 1-1000", position=[0], agent_type=agent_type), "result": "#1 ... #5"}
    parent["verdict"] = {"complete": False, "follow_up_ids": follow_ups, "remaining_tasks": ["more"] * 200}
    tasks = {"1": parent}
    for i, key in enumerate(follow_ups):
        tasks[key] = {**new_task(key, f"Products {5 * i + 6}-{5 * i + 10}", position=[1, i]), "depends_on": ["1"]}
    window = [HumanMessage("Products 6-10", id="h1"), AIMessage("", id="a1", tool_calls=[CALL])]
    view = subtask_view("1_dyn_0", window, tasks, "the goal")
    chain = lambda request: None  # noqa: E731 - stays in this process
    spec = crossed(CallJob("1_dyn_0", CALL, rainfall, view, [rainfall], chain, StepClock(0.0, 30.0), agent_type))
    assert set(spec.view["tasks"]) == {"1_dyn_0", "1"}
    assert spec.view["tasks"]["1_dyn_0"] == tasks["1_dyn_0"]
    assert spec.view["tasks"]["1"] == {k: v for k, v in parent.items() if k != "verdict"}
    assert spec.view["task"] == tasks["1_dyn_0"] and spec.view["goal"] == "the goal"
