"""The features' lifecycle hooks, through the two features built on them: the deadline (a run-start hook and a
rule that read the run's clock) and the cost report (a before-answer hook whose section follows the final answer
on every path to it). Time is a fake clock the scripted model moves on: nothing sleeps."""

from __future__ import annotations

import pytest
from clocks import FakeClock
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scripting import LOOKUP_STEPS, WAYS, look_item, look_then_answer, make_model, plan_of, run, subtask_of

import replangraph.clock as clock_module
from replangraph import AgentConfig, build_graph
from replangraph.features import Feature, RunStart, ordered_features
from replangraph.nodes.cost_report.feature import UNNAMED
from replangraph.nodes.deadline.feature import deadline_for
from replangraph.nodes.deadline.names import DEADLINE_PASSED
from replangraph.nodes.execution.executor import Executor
from replangraph.testing import tool_call

SECONDS_PER_CALL = 10.0


@pytest.fixture
def fake_time(monkeypatch):
    """The run's clock, moved on ``SECONDS_PER_CALL`` by each subtask model call (`timed`)."""
    fake = FakeClock(now=1_000.0)
    monkeypatch.setattr(clock_module, "time", fake)
    return fake


def timed(fake: FakeClock):
    def work(request):
        fake.advance(SECONDS_PER_CALL)
        return look_then_answer(request)

    return work


def lookups(work, **settings):
    """Six look-ups, one subtask at a time, the completion check off."""
    config = AgentConfig(verify_results=False, **{"max_concurrency": 1, **settings})
    return build_graph(
        make_model(plan_of(*LOOKUP_STEPS), work), [look_item], config=config, checkpointer=InMemorySaver()
    )


# --------------------------------------------------------------------------- the deadline


@pytest.mark.parametrize("way", WAYS)
def test_a_deadline_ends_the_run_with_its_reason_an_event_and_the_work_done(fake_time, way):
    state, events = run(lookups(timed(fake_time), deadline_s=55), way=way)
    reason = state["stop_reason"]
    assert reason.startswith("the deadline deadline_s=55 passed (")
    done = [t for t in state["tasks"].values() if t["status"] == "completed"]
    assert 0 < len(done) < len(LOOKUP_STEPS)  # two calls per look-up: it stopped in the third
    assert all(t["result"] in state["final_answer"] for t in done)
    passed = [e for e in events if e["event"] == DEADLINE_PASSED]
    assert len(passed) == 1 and passed[0]["deadline_s"] == 55 and passed[0]["message"] == reason
    assert state["deadline_at"] == 1_000.0 + 55


def test_a_run_that_ends_before_its_deadline_is_not_stopped(fake_time):
    state, events = run(lookups(timed(fake_time), deadline_s=10_000))
    assert not state["stop_reason"]
    assert all(t["status"] == "completed" for t in state["tasks"].values())
    assert DEADLINE_PASSED not in [e["event"] for e in events]


def test_a_deadline_given_in_a_runs_context_applies_to_that_run_only(fake_time):
    graph = lookups(timed(fake_time))
    given = {"messages": [("user", "go")]}
    late = graph.invoke(given, {"configurable": {"thread_id": "a"}}, context={"deadline_s": 25})
    assert late["stop_reason"].startswith("the deadline deadline_s=25 passed")
    again = graph.invoke(given, {"configurable": {"thread_id": "b"}})
    assert not again["stop_reason"] and again["deadline_at"] is None


def test_an_answer_keeps_the_goals_deadline_and_a_new_goal_starts_its_own():
    settings = AgentConfig(deadline_s=60)
    assert deadline_for(RunStart({}, settings, new_goal=True, now=100.0)) == {"deadline_at": 160.0}
    running = {"deadline_at": 160.0}
    assert deadline_for(RunStart(running, settings, new_goal=False, now=150.0)) is None  # an answer, a command
    assert deadline_for(RunStart(running, settings, new_goal=True, now=500.0)) == {"deadline_at": 560.0}
    assert deadline_for(RunStart(running, AgentConfig(), new_goal=True, now=500.0)) == {"deadline_at": None}
    # a deadline first given with an answer (a run's context) starts then
    assert deadline_for(RunStart({}, settings, new_goal=False, now=150.0)) == {"deadline_at": 210.0}


def test_time_waiting_for_an_answer_counts_against_the_deadline(fake_time):
    def work(request):
        fake_time.advance(1.0)
        if "item 2" in subtask_of(request) and not request.called("ask_user"):
            return tool_call("ask_user", {"question": "Which unit?"})
        return look_then_answer(request)

    graph = lookups(work, deadline_s=100)
    cfg = {"configurable": {"thread_id": "asks"}}
    paused = graph.invoke({"messages": [("user", "go")]}, cfg)
    assert "__interrupt__" in paused
    fake_time.advance(3_600)  # the user answers an hour later
    state = graph.invoke(Command(resume="metres"), cfg)
    assert state["stop_reason"].startswith("the deadline deadline_s=100 passed")


# --------------------------------------------------------------------------- the cost report


def counted_model(work):
    """A scripted model whose replies name the model; ``calls`` counts every call, planner and answer too."""
    model = make_model(plan_of(*LOOKUP_STEPS[:2]), work)
    calls = []
    respond = model.respond

    def counting(request):
        calls.append(request)
        return respond(request)

    model.respond = counting
    return model, calls


def cost_graph(work, **settings):
    model, calls = counted_model(work)
    config = AgentConfig(verify_results=False, report_cost=True, **{"max_concurrency": 1, **settings})
    return build_graph(model, [look_item], config=config, checkpointer=InMemorySaver()), calls


def test_the_cost_report_counts_every_call_the_final_answers_included():
    graph, calls = cost_graph(look_then_answer)
    state, _ = run(graph)
    assert not state["stop_reason"]
    answer = state["final_answer"]
    assert "**Cost of this answer**" in answer
    assert f"{len(calls):,} model call(s):" in answer  # the planner, 4 subtask turns and the final answer
    assert state["model_costs"][UNNAMED]["calls"] == len(calls)
    assert answer.index("item 2 has value 14") < answer.index("**Cost of this answer**")  # it follows the answer


def test_without_report_cost_the_answer_has_no_section():
    model, _ = counted_model(look_then_answer)
    graph = build_graph(model, [look_item], config=AgentConfig(verify_results=False))
    state = graph.invoke({"messages": [("user", "go")]})
    assert "Cost of this answer" not in state["final_answer"] and not state.get("model_costs")


def crashing_executor(monkeypatch):
    def crash(self, payload):
        raise RuntimeError("executor bug")

    monkeypatch.setattr(Executor, "__call__", crash)


PATHS = {
    "every subtask done": ({}, None, ""),
    "the token budget": ({"token_budget": 600}, None, "the token budget"),
    "the deadline": ({"deadline_s": 15}, None, "the deadline"),
    "max_steps": ({"max_steps": 2}, None, "max_steps"),
    "the recursion margin": ({}, {"recursion_limit": 8}, "recursion_limit"),
    "a crash turned into a failed subtask": ({"max_replans": 0}, None, "executor bug"),
}


@pytest.mark.parametrize("path", PATHS)
def test_the_cost_section_follows_the_answer_on_every_path_to_it(path, fake_time, monkeypatch):
    settings, run_config, reason = PATHS[path]
    if path.startswith("a crash"):
        crashing_executor(monkeypatch)
    graph, calls = cost_graph(timed(fake_time), **settings)
    state, _ = run(graph, **(run_config or {}))
    assert reason in (state["stop_reason"] or "") + state["final_answer"], state["stop_reason"]
    assert bool(state["stop_reason"]) == bool(reason)
    assert state["final_answer"].rstrip().endswith("|")  # the table closes the answer
    assert f"{len(calls):,} model call(s):" in state["final_answer"]


def test_the_cost_section_follows_a_cancelled_runs_report(fake_time):
    def work(request):
        if not request.called("ask_user"):
            return tool_call("ask_user", {"question": "Which unit?"})
        return look_then_answer(request)

    graph, calls = cost_graph(work)
    cfg = {"configurable": {"thread_id": "cancel"}}
    assert "__interrupt__" in graph.invoke({"messages": [("user", "go")]}, cfg)
    state = graph.invoke(Command(resume="/cancel"), cfg)
    assert state["stop_reason"] == "the user cancelled the run"
    assert f"{len(calls):,} model call(s):" in state["final_answer"]


def test_a_new_goal_on_the_same_thread_is_counted_from_zero():
    graph, calls = cost_graph(look_then_answer)
    cfg = {"configurable": {"thread_id": "same"}}
    first = graph.invoke({"messages": [("user", "first goal")]}, cfg)
    one = len(calls)
    second = graph.invoke({"messages": [("user", "second goal")]}, cfg)
    assert first["model_costs"] == second["model_costs"]
    assert second["model_costs"][UNNAMED]["calls"] == len(calls) - one


# --------------------------------------------------------------------------- order


def named(name: str, after: tuple[str, ...] = ()) -> Feature:
    return Feature(name, after=after)


def test_features_keep_their_registered_order_unless_one_runs_after_another():
    order = ordered_features([named("a"), named("b", after=("c",)), named("c"), named("d", after=("gone",))])
    assert [f.name for f in order] == ["a", "c", "b", "d"]  # a feature not registered constrains nothing


def test_features_that_cannot_be_ordered_are_refused():
    with pytest.raises(ValueError, match="cannot be ordered: a after b, b after a"):
        ordered_features([named("a", after=("b",)), named("b", after=("a",))])
