"""Replanning triggers, the replanner node, budgets and the fallback report (scripted models)."""

from __future__ import annotations

import threading

import pytest
from clocks import GUARD_S
from scenarios import handoff_then_failure_work
from scripting import is_replan, make_model, plan_of, run, subtask_of

from replangraph import AgentConfig, TextPolicy, build_graph
from replangraph.builder import recursion_limit
from replangraph.queue.tasks import ordered
from replangraph.testing import ScriptedChatModel, tool_call

FAST = {"retry_backoff_s": 0.0}
ALONE_OFF = {"single_agent_fallback": False}
"""For tests of the report itself: no single-agent fallback runs before it (see test_single_agent_fallback.py)."""


def task(task_id, content, depends_on=()):
    return {"id": task_id, "content": content, "depends_on": list(depends_on)}


def statuses(state):
    return {t["id"]: t["status"] for t in ordered(state["tasks"])}


def events_named(events, name):
    return [e for e in events if e["event"] == name]


def fetch_then_report_plan():
    return plan_of(task("a", "fetch the prices from the shop"), task("b", "report the prices", ["a"]))


def test_replan_marker_triggers_a_new_plan_that_replaces_pending_tasks():
    def work(request):
        subtask = subtask_of(request)
        if "shop" in subtask:
            return "got nothing [REPLAN] the shop page needs a login"
        return f"done: {subtask}"

    def replan(request):
        assert "the shop page needs a login" in request.prompt
        assert "[!] a: fetch the prices from the shop" in request.prompt
        return plan_of(task("a", "fetch the prices from the price archive"), task("b", "report", ["a"]))

    state, events = run(build_graph(make_model(fetch_then_report_plan(), work, replan=replan)))
    assert statuses(state) == {"a": "failed", "a_r1": "completed", "b_r1": "completed"}
    assert state["tasks"]["b_r1"]["depends_on"] == ["a_r1"]  # renamed ids keep their dependencies
    assert state["tasks"]["a"]["error"] == "replan requested: the shop page needs a login"
    assert state["tasks"]["a"]["result"] == "got nothing"
    [record] = state["replans"]
    assert record["outcome"] == "replanned" and record["replaced_task_ids"] == ["b"]
    [event] = events_named(events, "replanning")
    assert event["trigger"] == "marker" and event["outcome"] == "replanned"
    assert event["new_task_ids"] == ["a_r1", "b_r1"]
    assert state["final_answer"].startswith("FINAL:")  # a normal synthesis, not the fallback report
    assert "done: fetch the prices from the price archive" in state["final_answer"]


def test_request_replan_tool_ends_the_subtask():
    def work(request):
        if "shop" in subtask_of(request):
            if not request.tool_results:
                return tool_call("request_replan", {"reason": "prices are behind a paywall"})
            raise AssertionError("the subtask must end with request_replan")
        return "ok"

    def replan(request):
        return plan_of(task("c", "estimate the prices from reviews"), task("b", "report", ["c"]))

    state, events = run(build_graph(make_model(fetch_then_report_plan(), work, replan=replan)))
    assert state["tasks"]["a"]["status"] == "failed"
    assert "paywall" in state["tasks"]["a"]["error"]
    assert events_named(events, "replanning")[0]["trigger"] == "tool"
    assert statuses(state)["c"] == "completed" and statuses(state)["b_r1"] == "completed"


def test_completed_results_are_kept_and_new_tasks_may_depend_on_them():
    def work(request):
        subtask = subtask_of(request)
        if subtask == "broken step":
            raise ValueError("parser crashed")
        if subtask == "finish":
            assert "result of collect" in request.prompt  # a completed dependency's result
        return f"result of {subtask}"

    plan = plan_of(task("1", "collect"), task("2", "broken step", ["1"]), task("3", "summary", ["2"]))

    def replan(request):
        assert "- 1: result of collect" in request.prompt
        return plan_of(task("4", "finish", ["1"]))

    state, _ = run(build_graph(make_model(plan, work, replan=replan), config=AgentConfig(**FAST)))
    assert statuses(state) == {"1": "completed", "2": "failed", "4": "completed"}  # 3 was replaced
    assert state["tasks"]["1"]["result"] == "result of collect"


def test_empty_replan_means_cannot_continue_and_ends_with_the_report():
    def work(request):
        return "no way [REPLAN] the data does not exist"

    state, events = run(build_graph(make_model(fetch_then_report_plan(), work), config=AgentConfig(**ALONE_OFF)))
    assert statuses(state) == {"a": "failed", "b": "skipped"}
    assert events_named(events, "replanning")[0]["outcome"] == "gave_up"
    answer = state["final_answer"]
    assert "the replanner found no way to continue" in answer
    for section in ("## Completed", "## Not finished", "## Suggested next steps"):
        assert section in answer


def test_max_replans_is_respected_by_a_model_that_always_replans():
    rounds = []

    def replan(request):
        rounds.append(1)
        n = request.prompt.count("[!]")
        return plan_of(task(f"retry{n}", "try again"), task(f"after{n}", "then this", [f"retry{n}"]))

    def work(request):
        return "[REPLAN] still blocked"

    graph = build_graph(make_model(fetch_then_report_plan(), work, replan=replan), config=AgentConfig(max_replans=2))
    state, events = run(graph)
    outcomes = [e["outcome"] for e in events_named(events, "replanning")]
    assert outcomes == ["replanned", "replanned", "limit"]
    assert len(rounds) == 2
    assert "## Not finished" in state["final_answer"]
    assert all(s in ("failed", "skipped") for s in statuses(state).values())


def test_model_that_always_raises_ends_with_a_report_not_an_exception():
    def respond(request):
        raise ConnectionError("connection refused")

    model = ScriptedChatModel(respond=respond)
    config = AgentConfig(**FAST, **ALONE_OFF)
    out = build_graph(model, config=config).invoke({"messages": [("user", "find cheap flights")]})
    [only] = out["tasks"].values()
    assert only["status"] == "failed" and "connection refused" in only["error"]
    assert only["model_calls"] == 3  # one call and two transient retries
    assert "## Not finished" in out["final_answer"]


def test_replanner_garbage_is_retried_then_treated_as_empty():
    asked = []

    def replan(request):
        asked.append(request.prompt.count("could not be used"))
        return "I refuse to make a plan"

    model = make_model(fetch_then_report_plan(), lambda r: "[REPLAN] stuck", replan=replan)
    state, events = run(build_graph(model, config=AgentConfig(**ALONE_OFF)))
    assert asked == [0, 1, 1]
    assert events_named(events, "replanning")[0]["outcome"] == "gave_up"
    assert statuses(state) == {"a": "failed", "b": "skipped"}


def test_replanner_plan_with_a_cycle_is_retried():
    def replan(request):
        if "could not be used" not in request.prompt:
            return plan_of(task("x", "one", ["y"]), task("y", "two", ["x"]))
        assert "dependency cycle" in request.prompt
        return plan_of(task("x", "one"))

    def work(request):
        return "[REPLAN] blocked" if "shop" in subtask_of(request) else "fine"

    state, _ = run(build_graph(make_model(fetch_then_report_plan(), work, replan=replan)))
    assert statuses(state)["x"] == "completed"


def test_failed_branch_does_not_stop_an_independent_branch():
    def work(request):
        if subtask_of(request) == "flaky":
            raise RuntimeError("boom")
        return f"value of {subtask_of(request)}"

    plan = plan_of(task("a", "flaky"), task("b", "needs a", ["a"]), task("c", "solid"), task("d", "needs c", ["c"]))
    config = AgentConfig(max_replans=0, **FAST, **ALONE_OFF)
    state, _ = run(build_graph(make_model(plan, work), config=config))
    assert statuses(state) == {"a": "failed", "b": "skipped", "c": "completed", "d": "completed"}
    assert "value of solid" in state["final_answer"] and "value of needs c" in state["final_answer"]
    assert "subtask a failed" in state["final_answer"]


def test_runaway_tool_calling_model_ends_by_max_steps_with_the_report():
    def ping(n: int) -> str:
        """Ping."""
        return "pong"

    def work(request):
        return tool_call("ping", {"n": len(request.tool_results)})

    plan = plan_of(*(task(str(i), f"job {i}") for i in range(5)))
    config = AgentConfig(max_steps=12, max_step_iterations=1000, max_concurrency=2)
    graph = build_graph(make_model(plan, work), tools=[ping], config=config)
    assert graph.config["recursion_limit"] == recursion_limit(config)
    state, _ = run(graph)
    spent = sum(t["model_calls"] for t in state["tasks"].values())
    assert 12 <= spent <= 13  # checked before each step; parallel branches may overshoot by one
    assert "max_steps=12 was used up" in state["final_answer"]
    assert all(s in ("failed", "skipped") for s in statuses(state).values())


def test_a_runaway_subtask_ends_at_max_step_iterations_once_it_reads_nothing_new():
    def ping() -> str:
        """Ping."""
        return "pong"

    def work(request):
        return tool_call("ping", {}, call_id=f"c{len(request.tool_results)}")

    plan = plan_of(task("a", "loop"))
    graph = build_graph(make_model(plan, work), tools=[ping], config=AgentConfig(max_step_iterations=4))
    state, events = run(graph)
    # "pong" is what it read: the limit hands off; the continuation reads nothing new, and fails there
    assert state["tasks"]["a"]["status"] == "completed" and state["tasks"]["a"]["model_calls"] == 4
    again = state["tasks"]["a_dyn_0"]
    assert again["status"] == "failed" and "max_step_iterations=4" in again["error"] and again["model_calls"] == 4
    assert events_named(events, "replanning")[0]["trigger"] == "failure"


def test_step_timeout_fails_a_slow_step():
    """The slow subtask's model call never answers (until the test ends); the fast one's answers at once, well
    within the second."""
    release = threading.Event()

    def work(request):
        if subtask_of(request) == "slow":
            release.wait(GUARD_S)
        return "quick answer"

    plan = plan_of(task("a", "slow"), task("b", "fast"))
    graph = build_graph(make_model(plan, work), config=AgentConfig(step_timeout_s=1.0, max_replans=0))
    try:
        state, _ = run(graph)
    finally:
        release.set()
    assert state["tasks"]["a"]["status"] == "failed"
    assert "step_timeout_s=1.0" in state["tasks"]["a"]["error"]
    assert state["tasks"]["b"]["status"] == "completed"


def test_transient_errors_are_retried_then_succeed():
    failures = {"left": 2}

    def work(request):
        if failures["left"]:
            failures["left"] -= 1
            raise TimeoutError("read timed out")
        return "made it"

    state, _ = run(
        build_graph(make_model(plan_of(task("a", "x")), work), config=AgentConfig(**FAST, verify_results=False))
    )
    assert state["tasks"]["a"]["status"] == "completed"
    assert state["tasks"]["a"]["model_calls"] == 3


def test_non_transient_errors_are_not_retried():
    def work(request):
        raise ValueError("bad request")

    state, _ = run(build_graph(make_model(plan_of(task("a", "x")), work), config=AgentConfig(max_replans=0)))
    assert state["tasks"]["a"]["model_calls"] == 1


def test_planner_failure_falls_back_to_rule_based_plan():
    def respond(request):
        if "Plan" in request.tool_names and not is_replan(request):
            return "no plan today"
        if request.tool_names:
            return f"did: {subtask_of(request)[:30]}"
        return "final"

    goal = "Find the prices of three laptops, compare them and write a short report"
    state, events = run(build_graph(ScriptedChatModel(respond=respond)), goal)
    assert [t["id"] for t in ordered(state["tasks"])] == ["1", "2", "3"]
    assert state["tasks"]["3"]["depends_on"] == ["2"]
    assert events_named(events, "plan_created")[0]["fallback_reason"]
    # reading the goal's verbs is the text policy's: with it off, the whole goal is the one subtask
    state, _ = run(build_graph(ScriptedChatModel(respond=respond), policy=TextPolicy(enabled=False)), goal)
    assert [t["content"] for t in ordered(state["tasks"])] == [goal]


@pytest.mark.parametrize("how", ["raises", "marker"])
def test_a_subtask_replanned_onto_a_parent_whose_handoff_failed_runs(how):
    seen = {}
    plan = plan_of(task("1", "collect"), task("2", "report", ["1"]))

    def replan(request):
        return plan_of(task("3", "finish from what was collected", ["1"]))

    model = make_model(plan, handoff_then_failure_work(how, seen), replan=replan)
    state, events = run(build_graph(model, config=AgentConfig(**FAST)))
    assert statuses(state) == {"1": "completed", "1_dyn_0": "failed", "3": "completed"}  # 2 was replaced
    assert "first half" in seen["finish from what was collected"]  # 1's result is its input
    assert "result of finish from what was collected" in state["final_answer"]


@pytest.mark.parametrize("how", ["raises", "marker"])
def test_the_fallback_runs_after_a_failed_handoff_when_the_replanner_gives_up(how):
    seen = {}
    plan = plan_of(task("1", "collect"), task("2", "report", ["1"]))
    model = make_model(plan, handoff_then_failure_work(how, seen))  # the replanner gives up
    state, events = run(build_graph(model, config=AgentConfig(**FAST)))
    assert statuses(state) == {"1": "completed", "1_dyn_0": "failed", "2": "skipped", "fallback": "completed"}
    assert state["tasks"]["fallback"]["model_calls"] >= 1  # it ran (0 calls before the fix)
    assert [e["task_id"] for e in events_named(events, "step_started")] == ["1", "1_dyn_0", "fallback"]
    assert "finished alone" in state["final_answer"]
    assert "did not finish it either" not in state["final_answer"]
