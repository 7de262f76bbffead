"""Run settings: AgentConfig is the context schema; `configurable` keys still work; LangGraph's own limits end
a run with a report, not a crash."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from pydantic import ValidationError
from scripting import make_model, plan_of, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.config import MAX_STEP_TIMEOUT_S, recursion_limit
from replangraph.nodes.execution.tools_node import ToolRunner
from replangraph.run_config import run_settings
from replangraph.testing import tool_call

PLAN = plan_of(*({"content": f"item {i}"} for i in range(1, 7)))


def lookup(name: str) -> str:
    """Looks a thing up."""
    return f"facts about {name}"


def work(request):
    """Each subtask looks its item up once, then answers."""
    item = subtask_of(request)
    if request.tool_results:
        return f"done: {item}"
    return tool_call("lookup", {"name": item})


def model():
    return make_model(PLAN, work)


def graph(**config):
    return build_graph(model(), [lookup], config=AgentConfig(**config))


def goal(text="six items"):
    return {"messages": [("user", text)]}


def model_calls(state) -> int:
    return sum(t.get("model_calls", 0) for t in state["tasks"].values())


def test_a_run_s_context_overrides_the_graph_s_settings():
    app = graph()
    done = app.invoke(goal())
    assert all(t["status"] == "completed" for t in done["tasks"].values())
    stopped = app.invoke(goal(), context={"max_steps": 3})
    assert model_calls(stopped) == 3
    assert "max_steps=3 was used up" in stopped["final_answer"]
    again = app.invoke(goal())  # the next run has the graph's own settings again
    assert all(t["status"] == "completed" for t in again["tasks"].values())


def test_configurable_keys_still_work_and_the_context_wins_over_them():
    app = graph()
    by_configurable = app.invoke(goal(), {"configurable": {"max_steps": 3}})
    assert "max_steps=3 was used up" in by_configurable["final_answer"]
    both = app.invoke(goal(), {"configurable": {"max_steps": 3}}, context={"max_steps": 5})
    assert model_calls(both) == 5 and "max_steps=5 was used up" in both["final_answer"]


def test_only_the_fields_a_context_sets_override():
    app = graph(max_steps=4)
    state = app.invoke(goal(), context=AgentConfig(batch_size=2))  # max_steps left at the graph's 4
    assert "max_steps=4 was used up" in state["final_answer"]


def test_bad_settings_are_refused_before_anything_runs():
    with pytest.raises(ValidationError, match="max_steps"):
        graph().invoke(goal(), context={"max_steps": 0})
    with pytest.raises(ValidationError, match="max_stepz"):
        graph().invoke(goal(), context={"max_stepz": 3})
    with pytest.raises(ValueError, match=r"invalid run settings .*max_steps"):
        graph().invoke(goal(), {"configurable": {"max_steps": "lots"}})


@pytest.mark.parametrize("seconds", [1e10, float("inf"), float("nan"), MAX_STEP_TIMEOUT_S + 1])
def test_a_step_timeout_that_no_clock_can_wait_is_refused(seconds):
    """Accepted, 1e10 or inf failed every subtask with OverflowError (past threading.TIMEOUT_MAX)."""
    with pytest.raises(ValidationError, match="step_timeout_s"):
        AgentConfig(step_timeout_s=seconds)
    with pytest.raises(ValidationError, match="step_timeout_s"):
        graph().invoke(goal(), context={"step_timeout_s": seconds})
    assert AgentConfig(step_timeout_s=MAX_STEP_TIMEOUT_S).step_timeout_s == MAX_STEP_TIMEOUT_S


def test_the_longest_step_timeout_runs_the_goal():
    done = graph().invoke(goal(), context={"step_timeout_s": MAX_STEP_TIMEOUT_S})
    assert all(task["status"] == "completed" for task in done["tasks"].values())


def test_the_context_schema_is_a_form_with_types_defaults_and_descriptions():
    schema = graph().get_context_jsonschema()
    field = schema["properties"]["max_concurrency"]
    assert field["type"] == "integer" and field["default"] == 8 and field["description"]
    assert set(schema["properties"]) == set(AgentConfig.model_fields)


def test_a_parent_graph_s_own_context_may_carry_settings():
    @dataclass
    class ParentContext:
        user: str
        max_steps: int

    parent = StateGraph(MessagesState, context_schema=ParentContext)
    parent.add_node("research", graph())
    parent.add_edge(START, "research")
    out = parent.compile().invoke(goal(), context=ParentContext(user="ann", max_steps=2))
    assert "max_steps=2" in out["messages"][-1].content


def test_langgraph_s_recursion_limit_ends_the_run_with_a_report():
    app = graph(max_concurrency=1)  # one subtask at a time: the six need more than 12 supersteps
    state = app.invoke(goal(), {"recursion_limit": 12})
    assert "recursion_limit was nearly reached" in state["final_answer"]
    assert f"recursion_limit={recursion_limit(AgentConfig(max_concurrency=1))}" in state["final_answer"]
    done = [t for t in state["tasks"].values() if t["status"] == "completed"]
    assert done and all(t["id"] in state["final_answer"] for t in done)  # what was done is reported


def test_each_run_on_a_thread_gets_the_whole_recursion_limit():
    app = build_graph(model(), [lookup], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "reused"}, "recursion_limit": 40}
    for _ in range(3):  # LangGraph's step count goes on across runs; each run's limit starts afresh
        state = app.invoke(goal(), config)
        assert all(t["status"] == "completed" for t in state["tasks"].values()), state["final_answer"]


@pytest.mark.parametrize("crashing_tools", [False, True])
def test_no_recursion_limit_ends_a_run_with_graph_recursion_error(crashing_tools, monkeypatch):
    if crashing_tools:  # the longest way between two router decisions: tools crash, its handler, the replanner

        def crash(self, state):
            raise RuntimeError("tools node bug")

        monkeypatch.setattr(ToolRunner, "run_all", crash)
    for limit in range(4, 30):  # run start, planner and finalize need four
        state = graph().invoke(goal(), {"recursion_limit": limit})
        assert state["final_answer"], limit


def test_the_report_names_the_recursion_limit_only_when_it_stopped_waiting_work():
    def fail_three(request):
        return "[REPLAN] cannot" if subtask_of(request) == "item 3" else work(request)

    app = build_graph(make_model(PLAN, fail_three), [lookup], config=AgentConfig(max_replans=0))
    unlimited = app.invoke(goal())
    assert "recursion_limit" not in unlimited["final_answer"]
    for limit in range(4, 40):
        state = app.invoke(goal(), {"recursion_limit": limit})
        stopped = ("not run", "stopped before it finished")
        waiting = [t for t in state["tasks"].values() if (t.get("error") or "").startswith(stopped)]
        assert ("recursion_limit was nearly reached" in state["final_answer"]) == bool(waiting), limit


def test_no_step_timeout_means_no_limit():
    state = graph(step_timeout_s=None).invoke(goal())
    assert all(t["status"] == "completed" for t in state["tasks"].values())


def test_run_settings_outside_a_run_are_the_graph_s():
    base = AgentConfig(max_steps=9)
    assert run_settings(base) is base


def test_a_node_call_resolves_the_settings_once(monkeypatch):
    import replangraph.run_config as state_module

    reads, resolutions = [], []
    real_read, real_resolve = state_module.run_settings, state_module._resolve_settings
    monkeypatch.setattr(state_module, "run_settings", lambda base: reads.append(1) or real_read(base))
    monkeypatch.setattr(state_module, "_resolve_settings", lambda *args: resolutions.append(1) or real_resolve(*args))
    state = graph().invoke(goal(), context={"max_steps": 40})
    assert all(t["status"] == "completed" for t in state["tasks"].values())
    # 6 subtasks, each two model turns, a tool call and a check: the helpers read the settings hundreds of times,
    # resolved once per node call and routing decision (without that, every read resolves them: a ratio of 1)
    assert len(reads) > 3 * len(resolutions) > 0


def test_parallel_runs_with_different_contexts_keep_their_own_settings():
    import threading

    app, results = graph(), {}

    def run(name, context):
        results[name] = app.invoke(goal(), context=context)

    threads = [threading.Thread(target=run, args=args) for args in (("capped", {"max_steps": 3}), ("free", {}))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert model_calls(results["capped"]) == 3
    assert all(t["status"] == "completed" for t in results["free"]["tasks"].values())


def test_within_one_scope_another_run_config_resolves_its_own_settings():
    """A run started inside a node call (a graph used as a tool) has a run config of its own."""
    from langchain_core.runnables.config import var_child_runnable_config

    from replangraph.run_config import settings_resolved_once

    base = AgentConfig()
    with settings_resolved_once():
        for steps in (5, 7, 5):
            token = var_child_runnable_config.set({"configurable": {"max_steps": steps}})
            try:
                assert run_settings(base).max_steps == steps
                assert run_settings(base).max_steps == steps  # and again from the scope's memo
            finally:
                var_child_runnable_config.reset(token)
