"""step_timeout_s counts a subtask's own model and tool calls, not the time a stopped run waited.

The step's clock (``replangraph.clock``'s) is a `FakeClock` here: it moves only when a tool says it took time
or the test says the process was down, so what is charged is known exactly."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from clocks import GUARD_S, FakeClock
from langgraph.checkpoint.sqlite import SqliteSaver
from scripting import make_model, plan_of, subtask_of

import replangraph.clock as process_clock
from replangraph import AgentConfig, build_graph
from replangraph.llm.errors import StepTimeout
from replangraph.nodes.execution import model_wrappers as middleware
from replangraph.testing import tool_call


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """The clock every step reads."""
    fake = FakeClock()
    monkeypatch.setattr(process_clock, "time", fake)
    return fake


def taking(clock: FakeClock, seconds: float):
    """A tool whose every call takes ``seconds`` on ``clock``."""

    def wait_a_bit() -> str:
        """Waits, then answers."""
        clock.advance(seconds)
        return "waited"

    return wait_a_bit


def work(request):
    if request.called("wait_a_bit"):
        return "done after waiting"
    return tool_call("wait_a_bit", {})


def test_downtime_between_a_stop_and_a_resume_is_not_charged(tmp_path, clock):
    path = tmp_path / "run.db"
    config = AgentConfig(step_timeout_s=60.0)
    model = make_model(plan_of({"id": "1", "content": "wait once"}), work)
    run = {"configurable": {"thread_id": "t"}}

    with sqlite3.connect(path, check_same_thread=False) as conn:
        graph = build_graph(model, [taking(clock, 20.0)], config=config, checkpointer=SqliteSaver(conn))
        for update in graph.stream({"messages": [("user", "go")]}, run, stream_mode="updates"):
            if "tools" in update:
                break  # the process stops here, mid-subtask
        spent = graph.get_state(run).values["tasks"]["1"]["elapsed_s"]
    assert spent == pytest.approx(20.0)  # the tool's time (the model answers at once)

    clock.advance(3600.0)  # an hour down: longer than the whole step_timeout_s

    with sqlite3.connect(path, check_same_thread=False) as conn:
        graph = build_graph(model, [taking(clock, 20.0)], config=config, checkpointer=SqliteSaver(conn))
        final = graph.invoke(None, run)
    task = final["tasks"]["1"]
    assert task["status"] == "completed", task["error"]
    assert task["elapsed_s"] == pytest.approx(spent)  # the hour is not in it


def test_the_calls_themselves_still_time_out(clock, monkeypatch):
    """A call gets only what the step has left, and is abandoned when that runs out: here the model's answer took
    4.9 of the step's 5 s, and the tool call it asked for never returns."""
    limits: list[float] = []
    real = middleware.call_with_timeout  # the step deadline of the model and tool chains (StepDeadline)

    def timed(call, timeout_s):
        limits.append(timeout_s)
        try:
            return real(call, timeout_s)
        except StepTimeout:
            clock.advance(timeout_s)  # the real wait it was given has passed
            raise

    monkeypatch.setattr(middleware, "call_with_timeout", timed)
    release, ended = threading.Event(), threading.Event()

    def wait_a_bit() -> str:
        """Waits, then answers."""
        release.wait(GUARD_S)  # stuck until the test ends
        ended.set()
        return "too late"

    def slow_answer(request):
        if subtask_of(request) != "answer slowly, then wait":
            return "gave up"  # the fallback after the subtask failed
        clock.advance(4.9)
        return tool_call("wait_a_bit", {})

    config = AgentConfig(step_timeout_s=5.0, max_step_iterations=10)
    model = make_model(plan_of({"id": "1", "content": "answer slowly, then wait"}), slow_answer)
    try:
        final = build_graph(model, [wait_a_bit], config=config).invoke({"messages": [("user", "go")]})
        assert not ended.is_set()  # the run went on without the stuck call
    finally:
        release.set()
    task = final["tasks"]["1"]
    assert task["status"] == "failed" and "step exceeded step_timeout_s=5 in tool 'wait_a_bit'" in task["error"]
    # The model turn got the step's 5 s, the tool call the 0.1 s left, not 5 s (the last one is the
    # single-agent fallback's own first turn, a step of its own).
    assert limits == [pytest.approx(5.0), pytest.approx(0.1), pytest.approx(5.0)]
    assert task["elapsed_s"] == pytest.approx(5.0)
