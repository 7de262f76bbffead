"""What a host that runs the graph's nodes itself tells the engine (`replangraph.hosting`), each exercised here
without Temporal: a clock of the host's decides a step limit, and every node `build_graph` makes names what it
runs. (``RUN_CAN_PAUSE``: ``tests/graph/test_human_loop.py``.)"""

from __future__ import annotations

import contextvars

from clocks import FakeClock
from scripting import make_model, plan_of

from replangraph import AgentConfig, build_graph
from replangraph.hosting import node_behind, step_clock
from replangraph.langgraph_private import RunnableCallable
from replangraph.testing import tool_call


def test_a_hosts_clock_decides_a_step_limit_in_a_whole_run():
    """The host's clock says the tool took 90 s while no real time passes: the step is over its 60 s. On the
    process's own clock the same run finishes its subtask in one go."""
    clock = FakeClock()

    def slow_on_the_hosts_clock() -> str:
        """Takes 90 s on the host's clock."""
        clock.advance(90.0)
        return "done"

    def work(request):
        return "finished" if request.called("slow_on_the_hosts_clock") else tool_call("slow_on_the_hosts_clock", {})

    def run(hosted: bool) -> dict:
        graph = build_graph(
            make_model(plan_of({"id": "1", "content": "go"}), work),
            [slow_on_the_hosts_clock],
            config=AgentConfig(step_timeout_s=60.0, verify_results=False, single_agent_fallback=False),
        )

        def invoke() -> dict:
            if hosted:
                step_clock.set(clock.monotonic)
            return graph.invoke({"messages": [("user", "go")]})["tasks"]

        return contextvars.copy_context().run(invoke)

    hosted, plain = run(hosted=True), run(hosted=False)
    # past its limit, the subtask hands the rest of its work to a continuation (what a step limit does)
    assert hosted["1"]["elapsed_s"] == 90.0 and not hosted["1"]["result"].startswith("finished")
    assert [t["follow_up"] for t in hosted.values() if t.get("parent_id") == "1"] == [
        {"kind": "continuation", "by": "limit"}
    ]
    assert list(plain) == ["1"] and plain["1"]["elapsed_s"] < 60.0 and plain["1"]["result"].startswith("finished")
    assert step_clock.get() is None  # set in the run's context only


def test_every_node_build_graph_makes_names_what_it_runs():
    graph = build_graph(make_model(plan_of({"id": "1", "content": "go"}), lambda request: "done"))
    nodes = graph.builder.nodes.items()
    behind = {name: node_behind(spec.runnable) for name, spec in nodes if not spec.is_error_handler}
    assert behind and all(node is not None for node in behind.values()), behind
    assert callable(behind["planner"]) and hasattr(behind["tools"], "acall")
    assert node_behind(RunnableCallable(lambda state: state, name="foreign")) is None
