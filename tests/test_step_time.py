"""step_timeout_s counts a subtask's own model and tool calls, not the time a stopped run waited."""

from __future__ import annotations

import sqlite3
import time

from langgraph.checkpoint.sqlite import SqliteSaver
from scripting import make_model, plan_of

from replangraph import AgentConfig, build_graph
from replangraph.testing import tool_call


def slow_tool(seconds: float):
    def wait_a_bit() -> str:
        """Waits, then answers."""
        time.sleep(seconds)
        return "waited"

    return wait_a_bit


def work(request):
    if request.called("wait_a_bit"):
        return "done after waiting"
    return tool_call("wait_a_bit", {})


def test_downtime_between_a_stop_and_a_resume_is_not_charged(tmp_path):
    path = tmp_path / "run.db"
    config = AgentConfig(step_timeout_s=1.0)
    model = make_model(plan_of({"id": "1", "content": "wait once"}), work)
    run = {"configurable": {"thread_id": "t"}}

    with sqlite3.connect(path, check_same_thread=False) as conn:
        graph = build_graph(model, [slow_tool(0.3)], config=config, checkpointer=SqliteSaver(conn))
        for update in graph.stream({"messages": [("user", "go")]}, run, stream_mode="updates"):
            if "tools" in update:
                break  # the process stops here, mid-subtask
        spent = graph.get_state(run).values["tasks"]["1"]["elapsed_s"]
    assert 0.3 <= spent < 1.0

    time.sleep(1.2)  # longer than the whole step_timeout_s

    with sqlite3.connect(path, check_same_thread=False) as conn:
        graph = build_graph(model, [slow_tool(0.3)], config=config, checkpointer=SqliteSaver(conn))
        final = graph.invoke(None, run)
    task = final["tasks"]["1"]
    assert task["status"] == "completed", task["error"]
    assert spent <= task["elapsed_s"] < 1.0


def test_the_calls_themselves_still_time_out():
    config = AgentConfig(step_timeout_s=0.5, max_step_iterations=10)
    model = make_model(plan_of({"id": "1", "content": "wait twice"}), lambda r: tool_call("wait_a_bit", {}))
    final = build_graph(model, [slow_tool(0.3)], config=config).invoke({"messages": [("user", "go")]})
    task = final["tasks"]["1"]
    assert task["status"] == "failed" and "step_timeout_s=0.5" in task["error"]
    assert 0.5 <= task["elapsed_s"] < 1.5
