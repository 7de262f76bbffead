"""The single-agent fallback: when replanning ends, one agent tries to finish the goal before the report."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from scripting import is_replan, make_model, plan_of, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.app import console
from replangraph.nodes.fallback.fallback import fallback_task
from replangraph.nodes.fallback.feature import queue_fallback
from replangraph.nodes.finalize.report import FALLBACK_LABEL, report_with_lists
from replangraph.nodes.planning.replanner import Replanner
from replangraph.queue.tasks import is_fallback, new_task, ordered
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

FAST = {"retry_backoff_s": 0.0}
BRIEF = "Finish the overall goal yourself"
ANSWER = "Zephyr 14 is the better buy: cheaper per GB of RAM"


def task(task_id, content, depends_on=()):
    return {"id": task_id, "content": content, "depends_on": list(depends_on)}


def statuses(state):
    return {t["id"]: t["status"] for t in ordered(state["tasks"])}


def replanning(events):
    return [e for e in events if e["event"] == "replanning"]


def is_fallback_turn(request: ScriptedRequest) -> bool:
    return "Your subtask (fallback):" in request.prompt


def laptops_plan():
    return plan_of(
        task("specs", "look up the specs of the Zephyr 14 and Atlas 13"),
        task("prices", "fetch the prices of both laptops from the shop"),
        task("compare", "compare price per performance", ["specs", "prices"]),
    )


def laptops_work(fallback_reply):
    """Specs complete; the shop refuses (partial result kept); the fallback answers ``fallback_reply(request)``."""

    def work(request):
        if is_fallback_turn(request):
            return fallback_reply(request)
        subtask = subtask_of(request)
        if "shop" in subtask:
            return "Only the first page loaded. [REPLAN] the shop blocks automated access after page 1"
        if "specs" in subtask:
            return "Zephyr 14: 16 GB RAM, 1.2 kg; Atlas 13: 32 GB RAM, 1.4 kg"
        raise AssertionError(f"unexpected subtask {subtask!r}")

    return work


def test_the_fallback_finishes_the_goal_after_the_replanner_gives_up():
    seen = {}

    def fallback_reply(request):
        seen["prompt"], seen["tools"] = request.prompt, request.tool_names
        return ANSWER

    state, events = run(build_graph(make_model(laptops_plan(), laptops_work(fallback_reply))))
    assert statuses(state) == {"specs": "completed", "prices": "failed", "compare": "skipped", "fallback": "completed"}
    solo = state["tasks"]["fallback"]
    assert solo["origin"] == "fallback" and solo["agent_type"] == "default"
    assert solo["depends_on"] == ["specs"]  # the completed results come as its inputs
    prompt = seen["prompt"]
    assert "the replanner found no way to continue" in prompt
    assert "16 GB RAM" in prompt  # a completed result, whole
    assert "prices (failed)" in prompt and "the shop blocks automated access" in prompt  # what failed, and why
    assert "compare (skipped)" in prompt
    assert 'read_output(output_id="prices/result")' in prompt and "Only the first page loaded" in prompt
    assert "read_output" in seen["tools"]  # so it can read a partial result whole
    [event] = replanning(events)
    assert event["outcome"] == "gave_up" and event["fallback_task_id"] == "fallback"
    assert len(state["replans"]) == 1
    answer = state["final_answer"]
    assert answer.startswith("The run for this goal stopped before it was finished: the replanner found no way")
    assert "single-agent fallback" in answer.splitlines()[0]
    assert answer.index("## Answer of the single-agent fallback") < answer.index(ANSWER) < answer.index("## Completed")
    not_finished = answer.split("## Not finished", 1)[1]  # the report still says what failed and why
    assert "- prices (failed)" in not_finished and "Why: replan requested: the shop blocks" in not_finished
    assert "- compare (skipped)" in not_finished
    assert "fallback" not in answer.split("## Completed", 1)[1].split("## Not finished")[0]


@pytest.mark.parametrize("how", ["marker", "tool", "error"])
def test_a_fallback_that_cannot_finish_ends_with_the_report_and_no_second_round(how):
    def fallback_reply(request):
        if how == "marker":
            return "Specs only. [REPLAN] the prices cannot be had anywhere"
        if how == "tool":
            return tool_call("request_replan", {"reason": "the prices cannot be had anywhere"})
        raise ValueError("the model broke")

    replans = []

    def replan(request):
        replans.append(request)
        return plan_of()

    model = make_model(laptops_plan(), laptops_work(fallback_reply), replan=replan)
    state, events = run(build_graph(model, config=AgentConfig(**FAST)))
    assert statuses(state)["fallback"] == "failed"
    assert len(replans) == 1 and len(state["replans"]) == 1  # its failure asked for nothing more
    assert [e["fallback_task_id"] for e in replanning(events)] == ["fallback"]
    assert state["tasks"]["fallback"]["replan_request"] is None
    answer = state["final_answer"]
    assert "## Answer of the single-agent fallback" not in answer
    assert "the single-agent fallback (fallback) did not finish it either" in answer.splitlines()[0]
    assert f"- fallback (failed): {FALLBACK_LABEL}" in answer  # not its whole brief
    assert "- prices (failed)" in answer and "the shop blocks automated access" in answer
    assert "Fix the cause of fallback" not in answer
    if how == "marker":
        assert "Partial result: Specs only." in answer


def test_with_max_replans_0_the_fallback_waits_for_the_independent_work():
    order, seen = [], {}

    def work(request):
        if is_fallback_turn(request):
            seen["prompt"] = request.prompt
            return "the whole answer"
        subtask = subtask_of(request)
        order.append(subtask)
        if subtask == "flaky":
            raise RuntimeError("boom")
        return f"value of {subtask}"

    plan = plan_of(task("a", "flaky"), task("b", "needs a", ["a"]), task("c", "solid"), task("d", "needs c", ["c"]))
    config = AgentConfig(max_replans=0, max_concurrency=2, **FAST)
    state, events = run(build_graph(make_model(plan, work), config=config))
    done = {"c": "completed", "d": "completed", "fallback": "completed"}
    assert statuses(state) == {"a": "failed", "b": "skipped", **done}
    assert order.count("solid") == 1 and order.count("needs c") == 1  # the fallback ran last, on their results
    assert "value of solid" in seen["prompt"] and "value of needs c" in seen["prompt"]
    assert "no replans were left: max_replans=0" in seen["prompt"]
    assert "model call failed: RuntimeError: boom" in seen["prompt"]
    [event] = replanning(events)
    assert event["outcome"] == "limit" and event["fallback_task_id"] == "fallback"
    started = [e["task_id"] for e in events if e["event"] == "step_started"]
    assert started[-1] == "fallback"
    assert "the whole answer" in state["final_answer"] and "subtask a failed" in state["final_answer"]


def test_a_later_failure_writes_the_pending_fallback_again_instead_of_skipping_it():
    seen = {}

    def work(request):
        if is_fallback_turn(request):
            seen["prompt"] = request.prompt
            return "done alone"
        subtask = subtask_of(request)
        if subtask in ("first try", "second try"):
            return f"[REPLAN] {subtask} is blocked"
        return f"value of {subtask}"

    plan = plan_of(task("a", "first try"), task("b", "solid"), task("c", "second try", ["b"]))
    state, events = run(build_graph(make_model(plan, work), config=AgentConfig(max_replans=0)))
    assert statuses(state) == {"a": "failed", "b": "completed", "c": "failed", "fallback": "completed"}
    assert [e["fallback_task_id"] for e in replanning(events)] == ["fallback", "fallback"]
    assert state["tasks"]["fallback"]["depends_on"] == ["b"]
    assert "first try is blocked" in seen["prompt"] and "second try is blocked" in seen["prompt"]
    assert [t["id"] for t in state["tasks"].values() if is_fallback(t)] == ["fallback"]


def test_a_pending_fallback_survives_a_later_replan_and_waits_for_the_new_plan():
    rounds = []

    def work(request):
        if is_fallback_turn(request):
            assert "value of archive" in request.prompt  # the new plan ran first
            return "done alone"
        subtask = subtask_of(request)
        if subtask in ("shop", "mirror"):
            return f"[REPLAN] the {subtask} is down"
        return f"value of {subtask}"

    def replan(request):
        rounds.append(request.prompt)
        assert "fallback" not in request.prompt  # the replanner never sees (nor replaces) it
        if "the mirror is down" in request.prompt:
            return plan_of(task("archive", "archive"))
        return plan_of()  # gives up on the shop: the fallback is queued

    plan = plan_of(task("a", "shop"), task("b", "mirror"))
    one_at_a_time = AgentConfig(max_concurrency=1, **FAST)  # the shop fails, is replanned, then the mirror
    state, events = run(build_graph(make_model(plan, work, replan=replan), config=one_at_a_time))
    assert [e["outcome"] for e in replanning(events)] == ["gave_up", "replanned"]
    assert [e["fallback_task_id"] for e in replanning(events)] == ["fallback", "fallback"]
    assert statuses(state) == {"a": "failed", "b": "failed", "archive": "completed", "fallback": "completed"}
    assert state["tasks"]["fallback"]["depends_on"] == ["archive"]


def test_the_fallback_cannot_hand_off_work():
    replies = []

    def fallback_reply(request):
        if not request.tool_results:
            return tool_call("replan_split_and_handoff", {"summary": "half", "tasks": '[{"content": "the rest"}]'})
        replies.append(request.last_result("replan_split_and_handoff"))
        return "did it all myself"

    state, _ = run(build_graph(make_model(laptops_plan(), laptops_work(fallback_reply))))
    assert "cannot hand off work" in replies[0] and "still yours" in replies[0]
    assert statuses(state)["fallback"] == "completed" and len(state["tasks"]) == 4
    assert "did it all myself" in state["final_answer"]


def test_a_check_that_finds_the_fallback_incomplete_queues_nothing_and_keeps_its_answer_as_partial():
    def respond(request: ScriptedRequest):
        if "Verdict" in request.tool_names:
            complete = not is_fallback_turn(request) and "Subtask (fallback)" not in request.prompt
            return tool_call("Verdict", {"complete": complete, "reason": "rest missing", "remaining_tasks": ["more"]})
        if is_replan(request):
            return plan_of()
        if "Plan" in request.tool_names:
            return laptops_plan()
        return laptops_work(lambda r: ANSWER)(request)

    config = AgentConfig(verify_results=True, **FAST)
    state, _ = run(build_graph(ScriptedChatModel(respond=respond), config=config))
    solo = state["tasks"]["fallback"]
    assert solo["status"] == "failed" and solo["replan_request"] is None
    assert solo["error"].startswith("it did not finish the goal: the completion check found the result incomplete")
    assert "cannot hand off work" in solo["verdict"]["error"] and solo["verdict"]["follow_up_ids"] == []
    assert len(state["tasks"]) == 4 and len(state["replans"]) == 1
    assert f"Partial result: {ANSWER}" in state["final_answer"]


@pytest.mark.parametrize("where", ["config", "context"])
def test_switched_off_the_run_ends_with_the_report_as_before(where):
    calls = []

    def fallback_reply(request):
        calls.append(request)
        return ANSWER

    model = make_model(laptops_plan(), laptops_work(fallback_reply))
    if where == "config":
        state, events = run(build_graph(model, config=AgentConfig(single_agent_fallback=False)))
    else:  # a run's context switches it off for that run
        events, state = [], {}
        inputs, cfg = {"messages": [("user", "do it")]}, {"configurable": {"thread_id": "t"}}
        context = {"single_agent_fallback": False}
        for mode, chunk in build_graph(model).stream(inputs, cfg, context=context, stream_mode=["custom", "values"]):
            events, state = (events + [chunk], state) if mode == "custom" else (events, chunk)
    assert not calls and statuses(state) == {"specs": "completed", "prices": "failed", "compare": "skipped"}
    assert replanning(events)[0]["fallback_task_id"] is None
    reason = "the replanner found no way to continue"
    assert state["final_answer"] == report_with_lists("do it", state["tasks"], reason)[0]
    assert state["final_answer"].startswith(
        "The run for this goal stopped before it was finished: the replanner found no way to continue\nGoal: do it"
    )


@pytest.mark.parametrize("max_steps", [1, 2])
def test_no_fallback_once_the_budget_is_spent(max_steps):
    """1: the failed step spent it (no replan round); 2: the replanner's own call spent the rest."""

    def work(request):
        if is_fallback_turn(request):
            raise AssertionError("no steps were left for the fallback")
        return "[REPLAN] blocked"

    plan = plan_of(task("a", "fetch"), task("b", "report", ["a"]))
    state, events = run(build_graph(make_model(plan, work), config=AgentConfig(max_steps=max_steps)))
    assert statuses(state) == {"a": "failed", "b": "skipped"}
    [event] = replanning(events)
    assert event["outcome"] == ("limit" if max_steps == 1 else "gave_up") and event["fallback_task_id"] is None
    assert f"the step budget max_steps={max_steps} was used up" in state["final_answer"]


def flagged_state(**extra):
    """A queue where ``a`` failed asking for a replan, ``b`` waits on it and ``c`` completed."""
    a = new_task("a", "fetch", position=[0])
    a.update(status="failed", error="boom", model_calls=1, replan_request={"trigger": "failure", "reason": "boom"})
    b = new_task("b", "report", position=[1], depends_on=["a"])
    c = new_task("c", "solid", position=[2])
    c.update(status="completed", result="value of c", model_calls=1)
    return {"goal": "the goal", "tasks": {"a": a, "b": b, "c": c}, "replans": [], **extra}


def limit_replanner(**settings):
    model = ScriptedChatModel(respond=lambda r: plan_of())
    return Replanner(model, {"default": None}, AgentConfig(max_replans=0, **settings), after_round=[queue_fallback])


def test_the_replanner_queues_the_same_fallback_when_run_again_and_none_after_one_ran():
    replanner = limit_replanner()
    state = flagged_state()
    first, again = replanner(state), replanner(state)  # a node run again after a crash writes the same update
    assert first == again and first["tasks"]["fallback"]["depends_on"] == ["c"]
    assert first["tasks"]["b"]["status"] == "skipped"
    ran = {**first["tasks"]["fallback"], "status": "failed", "error": "gave up"}
    later = flagged_state()
    later["tasks"]["fallback"] = ran
    later["replans"] = first["replans"]
    assert "fallback" not in replanner(later)["tasks"]  # one per run


@pytest.mark.parametrize(
    "extra, settings",
    [({"cancelled": True}, {}), ({}, {"single_agent_fallback": False}), ({}, {"max_tasks": 3})],
    ids=["cancelled", "off", "queue full"],
)
def test_no_fallback_when_cancelled_switched_off_or_the_queue_is_full(extra, settings):
    update = limit_replanner(**settings)(flagged_state(**extra))
    assert not any(is_fallback(t) for t in update["tasks"].values() if t and "origin" in t)
    assert update["tasks"]["b"]["status"] == "skipped"


def test_the_fallback_s_own_request_is_closed_without_a_round():
    state = flagged_state()
    state["tasks"]["a"]["replan_request"] = None
    solo = fallback_task(state["tasks"], "why", 5)
    solo.update(status="failed", error="no", replan_request={"trigger": "marker", "reason": "no"})
    state["tasks"]["fallback"] = solo
    assert limit_replanner()(state) == {"tasks": {"fallback": {"replan_request": None}}}


def test_a_resumed_run_queues_one_fallback():
    model = make_model(laptops_plan(), laptops_work(lambda r: ANSWER))
    one_at_a_time = AgentConfig(max_concurrency=1)  # the fallback is the only subtask left to run after the replan
    graph = build_graph(model, config=one_at_a_time, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "resumed"}}
    graph.invoke({"messages": [("user", "compare")]}, cfg, interrupt_after=["replanner"])
    stopped = graph.get_state(cfg).values
    assert stopped["tasks"]["fallback"]["status"] == "pending" and not stopped.get("final_answer")
    assert graph.get_state(cfg).next == ("executor",)
    out = graph.invoke(None, cfg)
    assert [t["id"] for t in out["tasks"].values() if is_fallback(t)] == ["fallback"]
    assert len(out["replans"]) == 1 and ANSWER in out["final_answer"]


def test_the_brief_fallback_ids_and_the_console_line():
    state = flagged_state()
    taken = {**state["tasks"], "fallback": new_task("fallback", "a planned step", position=[3])}
    assert fallback_task(taken, "why", 5)["id"] == "fallback_2"
    many = {f"t{i}": {**new_task(f"t{i}", f"job {i}", position=[i]), "status": "skipped"} for i in range(40)}
    brief = fallback_task(many, "why", 5)["content"]
    assert "- t29 (skipped)" in brief and "- t30 (skipped)" not in brief and "and 10 more" in brief
    line = console.describe(
        {
            "event": "replanning",
            "task_id": "a",
            "trigger": "failure",
            "reason": "boom",
            "outcome": "limit",
            "new_task_ids": [],
            "fallback_task_id": "fallback",
        }
    )
    assert line == "replanning after a (failure: boom): limit; single-agent fallback fallback queued"


class Unreachable(ConnectionError):
    """The model server does not answer (what ChatOpenAI's APIConnectionError stands for)."""


@pytest.mark.parametrize(
    ("error", "queued"), [(Unreachable("connection refused"), False), (ValueError("bad request"), True)]
)
def test_no_fallback_when_the_replanner_found_the_model_not_answering(error, queued):
    def respond(request):
        raise error

    from replangraph.config import resolve_profiles

    settings = AgentConfig(retry_backoff_s=0, max_replans=3)
    replanner = Replanner(
        ScriptedChatModel(respond=respond), resolve_profiles(None, []), settings, after_round=[queue_fallback]
    )
    update = replanner(flagged_state())
    [record] = update["replans"]
    assert record["outcome"] == "gave_up" and update["tasks"]["b"]["status"] == "skipped"
    assert ("fallback" in update["tasks"]) is queued
    assert ("no single-agent fallback: the model did not answer" in record.get("notes", [])) is not queued


def test_past_twenty_completed_results_the_brief_names_them_instead_of_attaching_them():
    tasks = {}
    for n in range(30):
        done = new_task(f"t{n}", f"part {n}", position=[n])
        done.update(status="completed", result=f"value {n}")
        tasks[done["id"]] = done
    waiting = new_task("w", "last part", position=[30])
    tasks["w"] = waiting
    solo = fallback_task(tasks, "why", 5)
    assert solo["depends_on"] == ["w"]  # the open work only: the results would crowd the opening request
    assert "The 30 completed subtasks' results are not attached" in solo["content"]
    assert 'read_output(output_id="plan")' in solo["content"] and "t0, t1, t2" in solo["content"]
    few = fallback_task({k: tasks[k] for k in ("t0", "t1", "w")}, "why", 5)
    assert few["depends_on"] == ["w", "t0", "t1"] and "not attached" not in few["content"]


def test_the_fallback_waits_for_a_running_team_not_for_the_work_its_members_hold():
    from replangraph import Team
    from replangraph.nodes.teams.teams import start_changes
    from replangraph.queue.tasks import apply_writes

    team = new_task("1", "find it", position=[0], agent_type="panel")
    tasks = apply_writes({"1": team}, [start_changes(team, "panel", Team(["a", "b"]), 1, 50)])
    held = new_task("1.m1_dyn_0", "more", position=[0, 0, 0], parent_id="1.m1", origin="dynamic")
    tasks = apply_writes(tasks, [{"1.m1": {"status": "completed", "result": "r"}, held["id"]: held}])
    assert fallback_task(tasks, "why", 5)["depends_on"] == ["1"]


def test_a_fallback_that_completed_but_asked_for_more_is_reported_as_unfinished():
    state = flagged_state()
    state["tasks"]["a"]["replan_request"] = None
    solo = fallback_task(state["tasks"], "why", 5)
    reason = "the agent repeated a refused replan_split_and_handoff call"
    solo.update(status="completed", result="only half done", replan_request={"trigger": "toolkit", "reason": reason})
    state["tasks"]["fallback"] = solo
    closed = limit_replanner()(state)["tasks"]["fallback"]
    assert closed == {"replan_request": None, "status": "failed", "error": f"it did not finish the goal: {reason}"}
    report = report_with_lists("the goal", {**state["tasks"], "fallback": {**solo, **closed}}, "stopped")[0]
    assert "## Answer of the single-agent fallback" not in report
    assert "Partial result: only half done" in report and "it did not finish the goal" in report
