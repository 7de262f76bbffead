"""Teams as agent types: members run one subtask in parallel, a merge keeps one result."""

from __future__ import annotations

import re
import threading
import time

import pytest
from clocks import GUARD_S
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scripting import plan_of, run

from replangraph import AgentConfig, AgentProfile, Team, build_graph
from replangraph.llm.reading import UnreadableInput
from replangraph.nodes.teams.reading import read_choice, read_scores
from replangraph.nodes.teams.teams import candidates, settled, start_changes
from replangraph.queue.tasks import apply_writes, new_task, ready_tasks
from replangraph.testing import ScriptedChatModel, tool_call

MEMBERS = ("careful", "fast", "thorough")
ONE_TEAM_TASK = plan_of(
    {"id": "1", "content": "find the answer", "agent_type": "panel", "depends_on": []},
    {"id": "2", "content": "write it up", "depends_on": ["1"]},
)


class Transient(Exception):
    status_code = 503


class Crash(BaseException):
    """Stands for the process dying mid-step: no node catches it."""


class Calls:
    """Counts model requests by kind, thread-safely, and how many member turns ran at once. With ``meet``, each
    member turn waits until ``meet`` of them are running together (BrokenBarrierError if they never are)."""

    def __init__(self, meet: int = 0) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.running = 0
        self.peak = 0
        self.meeting = threading.Barrier(meet, timeout=GUARD_S) if meet else None

    def add(self, kind: str) -> int:
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            return self.counts[kind]


def members(calls: Calls, work=None, votes=None, pause: float = 0.0) -> dict[str, AgentProfile]:
    """Profiles for MEMBERS, each with its own scripted model: ``work(name, request)`` answers a
    subtask turn (default ``"answer from {name}"``), ``votes[name]`` a vote request."""

    def profile(name: str) -> AgentProfile:
        def respond(request):
            if "You score the results" in request.system:
                calls.add(f"vote:{name}")
                return (votes or {})[name]
            calls.add(f"work:{name}")
            with calls.lock:
                calls.running += 1
                calls.peak = max(calls.peak, calls.running)
            try:
                if calls.meeting is not None:
                    calls.meeting.wait()
                time.sleep(pause)
                return work(name, request) if work else f"answer from {name}"
            finally:
                with calls.lock:
                    calls.running -= 1

        return AgentProfile(description=f"the {name} agent", model=ScriptedChatModel(respond=respond))

    return {name: profile(name) for name in MEMBERS}


def main_model(calls: Calls, judge=None, plan=ONE_TEAM_TASK, seen: dict | None = None) -> ScriptedChatModel:
    """Plans ``plan``, judges with ``judge(request)``, runs default subtasks, joins the results."""

    def respond(request):
        if "Plan" in request.tool_names:
            if seen is not None:
                seen["planner"] = request.system
            return plan
        if "You judge the results" in request.system or "Several agents each did" in request.system:
            calls.add("judge")
            if seen is not None:
                seen["judge"] = request.prompt
            return judge(request)
        if request.tool_names:
            return "written up"
        return "FINAL:\n" + request.prompt

    return ScriptedChatModel(respond=respond)


def team_graph(calls: Calls, judge=None, merge="best", judge_model=None, work=None, votes=None, **settings):
    settings = {"retry_backoff_s": 0, "max_concurrency": 3, "verify_results": False, **settings}
    pause = settings.pop("pause", 0.0)
    checkpointer = settings.pop("checkpointer", None)
    seen = settings.pop("seen", None)
    return build_graph(
        main_model(calls, judge, seen=seen),
        agents=members(calls, work, votes, pause),
        teams={"panel": Team(members=list(MEMBERS), merge=merge, judge_model=judge_model)},
        config=AgentConfig(**settings),
        checkpointer=checkpointer,
    )


def merged(events: list[dict]) -> dict:
    (event,) = [e for e in events if e["event"] == "team_merged"]
    return event


# --------------------------------------------------------------------------- merge strategies


def test_best_keeps_the_candidate_the_judge_picks():
    calls, seen = Calls(), {}
    answer = '```json\n{"winner": 2, "reason": "fast is right"}\n```'  # fenced, as models often write it
    out, events = run(team_graph(calls, judge=lambda r: answer, seen=seen))
    team_task = out["tasks"]["1"]
    assert team_task["status"] == "completed" and team_task["result"] == "answer from fast"
    assert sorted(out["tasks"]) == ["1", "2"]  # the member tasks left the queue
    record = team_task["team"]
    assert (record["strategy"], record["winner"], record["winner_id"]) == ("best", "fast", "1.m2")
    assert record["reason"] == "fast is right"
    assert [c["agent_type"] for c in record["candidates"]] == list(MEMBERS)
    event = merged(events)
    assert event["winner"] == "fast" and event["reason"] == "fast is right"
    assert [c["result_preview"] for c in event["candidates"]] == [f"answer from {n}" for n in MEMBERS]
    # Every candidate's whole result stays in the workspace.
    for n, name in enumerate(MEMBERS, 1):
        assert out["workspace"][f"plan:1:step:1.m{n}"][":result"]["content"] == f"answer from {name}"
    assert record["candidates"][0]["result_key"] == "plan:1:step:1.m1:result:v1"
    assert team_task["model_calls"] == 3 + 1  # each member's turn and the judge's pick
    assert calls.counts["judge"] == 1
    assert "Subtask (1): find the answer" in seen["judge"]
    assert "Candidate 2 (fast):\nanswer from fast\n\nCandidate 3 (thorough):\nanswer from thorough" in seen["judge"]
    assert "answer from fast" in out["final_answer"] and "answer from careful" not in out["final_answer"]


def test_vote_sums_the_members_scores_of_each_other():
    calls = Calls()
    votes = {
        "careful": '{"scores": {"fast": 6, "thorough": 8}}',  # by agent type
        "fast": "Candidate 1: 7/10\nCandidate 2: 5/10",  # careful, thorough: numbered as shown to fast
        "thorough": '```json\n{"1": 7, "2": 9}\n```',  # careful, fast
    }
    out, events = run(team_graph(calls, merge="vote", votes=votes))
    record = out["tasks"]["1"]["team"]
    assert record["scores"] == {"1.m1": 14, "1.m2": 15, "1.m3": 13}
    assert record["winner"] == "fast" and out["tasks"]["1"]["result"] == "answer from fast"
    assert merged(events)["scores"] == record["scores"]
    assert "judge" not in calls.counts  # the members' models vote
    assert out["tasks"]["1"]["model_calls"] == 3 + 3


def test_a_tied_vote_goes_to_the_earliest_member():
    calls = Calls()
    votes = {name: '{"scores": {"1": 5, "2": 5}}' for name in MEMBERS}
    out, _ = run(team_graph(calls, merge="vote", votes=votes))
    assert out["tasks"]["1"]["team"]["winner"] == "careful"


def test_fusion_keeps_the_judges_combination():
    calls = Calls()
    out, events = run(team_graph(calls, merge="fusion", judge=lambda r: "the combined answer"))
    team_task = out["tasks"]["1"]
    assert team_task["result"] == "the combined answer"
    assert team_task["team"]["winner"] is None and "combined" in team_task["team"]["reason"]
    assert merged(events)["strategy"] == "fusion"


# --------------------------------------------------------------------------- failures


def test_a_failing_member_does_not_fail_the_team():
    calls, seen = Calls(), {}

    def work(name, request):
        if name == "fast":
            raise ValueError("fast broke")
        return f"answer from {name}"

    out, events = run(team_graph(calls, judge=lambda r: '{"winner": 2}', work=work, seen=seen))
    team_task = out["tasks"]["1"]
    assert team_task["status"] == "completed" and team_task["result"] == "answer from thorough"
    candidates = {c["agent_type"]: c for c in team_task["team"]["candidates"]}
    assert "fast broke" in candidates["fast"]["error"] and candidates["fast"]["result_preview"] is None
    assert not out.get("replans")  # a member's failure is only a failed candidate
    assert out["tasks"]["2"]["status"] == "completed"
    assert "Candidate 2 (thorough)" in seen["judge"] and "(fast)" not in seen["judge"]  # only successful ones
    assert merged(events)["winner"] == "thorough"


def test_every_member_failing_fails_the_team_with_their_errors():
    calls = Calls()

    def work(name, request):
        raise ValueError(f"{name} broke")

    out, _ = run(team_graph(calls, judge=lambda r: "1", work=work))
    team_task = out["tasks"]["1"]
    assert team_task["status"] == "failed"
    assert all(f"{name}: model call failed: ValueError: {name} broke" in team_task["error"] for name in MEMBERS)
    assert "judge" not in calls.counts
    assert out["replans"][0]["task_ids"] == ["1"]  # the team's failure goes to the replanner
    assert out["tasks"]["2"]["status"] == "skipped"


def test_a_judge_failing_after_retries_leaves_the_first_successful_result():
    calls = Calls()

    def judge(request):
        raise Transient("judge overloaded")

    out, events = run(team_graph(calls, judge=judge, model_retries=2))
    record = out["tasks"]["1"]["team"]
    assert calls.counts["judge"] == 3
    assert record["winner"] == "careful" and out["tasks"]["1"]["result"] == "answer from careful"
    assert "the judge failed: Transient: judge overloaded" in record["reason"]
    assert "first successful result wins" in merged(events)["reason"]
    assert out["tasks"]["1"]["model_calls"] == 3 + 3


@pytest.mark.parametrize(
    "answer", ["Candidate 7 is clearly best.", "", "They are all fine.", '{"winner": 0}', '{"winner": "slow"}']
)
def test_an_unreadable_pick_leaves_the_first_successful_result(answer):
    calls = Calls()
    out, _ = run(team_graph(calls, judge=lambda r: answer))
    record = out["tasks"]["1"]["team"]
    assert record["winner"] == "careful" and "could not be read" in record["reason"]


def test_without_a_judge_the_first_successful_result_wins():
    calls = Calls()

    def work(name, request):
        if name == "careful":
            raise ValueError("careful broke")
        return f"answer from {name}"

    out, _ = run(team_graph(calls, judge=lambda r: '{"winner": 1}', judge_model=False, work=work))
    record = out["tasks"]["1"]["team"]
    assert "judge" not in calls.counts
    assert record["winner"] == "fast" and "no judge" in record["reason"]


def test_a_team_whose_members_used_up_the_budget_still_keeps_a_result():
    calls = Calls()
    out, _ = run(team_graph(calls, judge=lambda r: '{"winner": 2}', max_steps=3, max_concurrency=1))
    team_task = out["tasks"]["1"]
    assert team_task["status"] == "completed" and team_task["result"] == "answer from careful"
    assert "max_steps=3 is used up" in team_task["team"]["reason"] and "judge" not in calls.counts
    assert out["tasks"]["2"]["status"] == "skipped" and "max_steps=3" in out["final_answer"]


def test_a_budget_spent_before_every_member_ran_merges_what_completed():
    calls = Calls()
    out, _ = run(team_graph(calls, judge=lambda r: '{"winner": 2}', max_steps=2, max_concurrency=1))
    team_task = out["tasks"]["1"]
    assert team_task["status"] == "completed" and team_task["result"] == "answer from careful"
    assert calls.counts == {"work:careful": 1, "work:fast": 1}
    [never] = [c for c in team_task["team"]["candidates"] if c["agent_type"] == "thorough"]
    assert never["error"] == "it never ran: the step budget was used up first"
    assert sorted(out["tasks"]) == ["1", "2"] and "1.m3" not in out["final_answer"]
    assert "answer from careful" in out["final_answer"] and out["windows"] == {}


def test_a_queue_too_full_for_the_members_fails_the_team_naming_the_limit():
    calls = Calls()
    out, _ = run(team_graph(calls, judge=lambda r: "1", max_tasks=4))
    team_task = out["tasks"]["1"]
    assert team_task["status"] == "failed" and "max_tasks=4" in team_task["error"]
    assert team_task["limits_hit"] == {"max_tasks": 5}
    assert not any(key.startswith("work:") for key in calls.counts)


def test_a_member_that_left_the_queue_is_a_failed_candidate():
    team = Team(members=["a", "b"])
    queue = apply_writes({}, [{"1": new_task("1", "find", position=[0], agent_type="panel")}])
    queue = apply_writes(queue, [start_changes(queue["1"], "panel", team, len(queue), 10)])
    queue = apply_writes(queue, [{"1.m1": {"status": "completed", "result": "found"}, "1.m2": None}])
    assert settled(queue, queue["1"])
    first, second = candidates(queue, queue["1"], team, lambda t: t["result"])
    assert (first.text, first.error) == ("found", None)
    assert (second.agent_type, second.text) == ("b", None) and "left the queue" in second.error


# --------------------------------------------------------------------------- concurrency and resume


def test_members_run_one_at_a_time_under_max_concurrency_1_with_the_same_result():
    """Under 3 the members' turns meet (all three running at once); under 1 each pauses, so that two running
    together would be seen."""
    results = {}
    for limit in (1, 3):
        calls = Calls(meet=3 if limit == 3 else 0)
        out, _ = run(
            team_graph(
                calls,
                judge=lambda r: '{"winner": 3, "reason": "most thorough"}',
                max_concurrency=limit,
                pause=0.05 if limit == 1 else 0.0,
            )
        )
        results[limit] = (out["tasks"]["1"]["result"], out["tasks"]["1"]["team"], out["final_answer"])
        assert calls.peak == limit
    assert results[1] == results[3]
    assert results[1][0] == "answer from thorough"


def test_two_teams_run_side_by_side_and_merge_together():
    calls = Calls()
    plan = plan_of(
        {"id": "a", "content": "first question", "agent_type": "panel", "depends_on": []},
        {"id": "b", "content": "second question", "agent_type": "panel", "depends_on": []},
    )
    graph = build_graph(
        main_model(calls, lambda r: '{"winner": 3}' if "first" in r.prompt else '{"winner": 1}', plan),
        agents=members(calls),
        teams={"panel": Team(members=list(MEMBERS))},
        config=AgentConfig(max_concurrency=6),
    )
    out, events = run(graph)
    assert (out["tasks"]["a"]["team"]["winner"], out["tasks"]["b"]["team"]["winner"]) == ("thorough", "careful")
    assert calls.counts["judge"] == 2 and sorted(out["tasks"]) == ["a", "b"]
    assert len([e for e in events if e["event"] == "team_merged"]) == 2


def test_a_run_resumed_mid_team_repeats_no_finished_member():
    calls = Calls()

    def work(name, request):
        if name == "thorough" and calls.counts["work:thorough"] == 1:
            raise Crash("the process died")
        return f"answer from {name}"

    graph = team_graph(
        calls, judge=lambda r: '{"winner": 3}', work=work, max_concurrency=1, checkpointer=InMemorySaver()
    )
    cfg = {"configurable": {"thread_id": "t"}}
    with pytest.raises(Crash):
        graph.invoke({"messages": [("user", "do it")]}, cfg)
    assert graph.get_state(cfg).values["tasks"]["1.m2"]["status"] == "completed"
    out = graph.invoke(None, cfg)
    assert out["tasks"]["1"]["result"] == "answer from thorough"
    assert (calls.counts["work:careful"], calls.counts["work:fast"], calls.counts["work:thorough"]) == (1, 1, 2)


# --------------------------------------------------------------------------- handoffs


def handing_off(who: str, ran: list[str]):
    """``who`` hands off part of its work; the others answer. Runs of the handed-off work go to ``ran``
    (as ``(subtask id, agent type)``)."""

    def work(name, request):
        found = re.search(r"Your subtask \(([^)]*)\): do part two", request.prompt)
        if found:
            ran.append((found.group(1), name))
            return "part two done"
        if name != who:
            return f"answer from {name}"
        if request.called("replan_split_and_handoff"):
            return "stopped"
        return tool_call("replan_split_and_handoff", {"summary": f"part one from {name}", "tasks": ["do part two"]})

    return work


def test_the_winners_handoff_is_kept():
    calls, ran = Calls(), []
    out, events = run(team_graph(calls, judge=lambda r: '{"winner": 1}', work=handing_off("careful", ran)))
    tasks = out["tasks"]
    assert tasks["1"]["result"] == "part one from careful"
    assert tasks["1_dyn_0"]["status"] == "completed" and tasks["1_dyn_0"]["result"] == "part two done"
    assert tasks["1_dyn_0"]["parent_id"] == "1" and tasks["1_dyn_0"]["depends_on"] == ["1"]
    assert ran == [("1_dyn_0", "careful")]  # once, after the merge, as the winner's agent type
    assert sorted(tasks) == ["1", "1_dyn_0", "2"]
    assert tasks["1"]["team"]["candidates"][0]["handoff"] == ["do part two"]
    added = [e for e in events if e["event"] == "dynamic_tasks_added" and e["parent_id"] == "1"]
    assert added[0]["task_ids"] == ["1_dyn_0"] and added[0]["source"] == "team"
    assert "part two done" in out["final_answer"]


def test_a_losers_handoff_is_dropped():
    calls, ran = Calls(), []
    out, _ = run(team_graph(calls, judge=lambda r: '{"winner": 2}', work=handing_off("careful", ran)))
    assert sorted(out["tasks"]) == ["1", "2"]
    assert out["tasks"]["1"]["result"] == "answer from fast"
    assert out["tasks"]["1"]["team"]["candidates"][0]["handoff"] == ["do part two"]  # recorded, never run
    assert ran == []


def test_a_fusion_keeps_the_work_every_fused_member_left_each_once():
    calls, ran, seen = Calls(), [], {}

    def work(name, request):
        if name == "thorough":
            return handing_off("thorough", ran)(name, request)
        return handing_off(name, ran)(name, request) if name == "careful" or "part two" in request.prompt else "ans"

    out, _ = run(
        team_graph(calls, judge=lambda r: "careful and thorough, combined", merge="fusion", work=work, seen=seen)
    )
    tasks = out["tasks"]
    assert tasks["1"]["result"] == "careful and thorough, combined"
    assert sorted(tasks) == ["1", "1_dyn_0", "2"]  # both handed off "do part two": queued once
    assert ran == [("1_dyn_0", "careful")]  # as the first fused member's agent type
    assert seen["judge"].count("[Partial: its agent left this work for follow-up subtasks: do part two]") == 2


def test_a_members_handed_off_work_waits_for_the_merge():
    team_task = new_task("1", "find", position=[0], agent_type="panel")
    queue = apply_writes({}, [{"1": team_task}])
    queue = apply_writes(queue, [start_changes(queue["1"], "panel", Team(members=["a", "b"]), len(queue), 10)])
    assert [t["id"] for t in ready_tasks(queue)] == ["1.m1", "1.m2"]
    held = new_task("1.m1_dyn_0", "more", position=[0, 0, 0], depends_on=["1.m1"], parent_id="1.m1", origin="dynamic")
    queue = apply_writes(queue, [{"1.m1": {"status": "completed", "replan_request": None}, "1.m1_dyn_0": held}])
    assert [t["id"] for t in ready_tasks(queue)] == ["1.m2"]
    queue = apply_writes(
        queue, [{"1.m2": {"status": "failed", "replan_request": {"trigger": "failure", "reason": "x"}}}]
    )
    assert not queue.index.replan and not ready_tasks(queue)


# --------------------------------------------------------------------------- planning and building


def test_the_planner_sees_the_team_as_an_agent_type_and_may_assign_it():
    calls, seen = Calls(), {}
    plan = plan_of({"id": "1", "content": "find the answer", "agent_type": "Panel", "depends_on": []})
    graph = build_graph(
        main_model(calls, lambda r: '{"winner": 1}', plan, seen),
        agents=members(calls),
        teams={"panel": Team(members=["careful", "fast"], description="Hard questions worth two opinions")},
    )
    out, _ = run(graph)
    assert (
        "- panel: Hard questions worth two opinions. (team of careful, fast: each runs the subtask" in seen["planner"]
    )
    assert out["tasks"]["1"]["agent_type"] == "panel" and out["tasks"]["1"]["team"]["winner"] == "careful"


def test_a_plan_edit_may_assign_a_team():
    calls = Calls()
    graph = team_graph(calls, judge=lambda r: '{"winner": 2}', approve_plan=True, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "do it")]}, cfg)
    out = graph.invoke(Command(resume=[{"id": "x", "content": "ask the panel", "agent_type": "panel"}]), cfg)
    assert out["tasks"]["x"]["team"]["winner"] == "fast" and out["tasks"]["x"]["result"] == "answer from fast"


@pytest.mark.parametrize(
    ("teams", "error"),
    [
        ({"careful": Team(members=["fast"])}, "has the name of an agent type"),
        ({"panel": Team(members=["fast", "wizard"])}, "unknown member 'wizard'"),
        ({"panel": Team(members=["fast"]), "duo": Team(members=["panel"])}, "members must be agent types"),
        ({"panel": Team(members=["fast"], merge="average")}, "merge='average'"),
        ({"panel": Team(members=[])}, "no members"),
        ({"panel": Team(["fast"], merge="vote", judge_model=ScriptedChatModel(respond=str))}, "no judge is asked"),
    ],
)
def test_bad_teams_are_refused_at_build_time(teams, error):
    with pytest.raises(ValueError, match=error):
        build_graph(main_model(Calls()), agents=members(Calls()), teams=teams)


def test_judges_answers_are_read_leniently():
    names = ["careful", "fast", "thorough"]
    assert read_choice('```json\n{"winner": "2", "reason": "complete"}\n```', names) == (1, "complete")
    assert read_choice("I pick candidate 3 because it is complete.", names)[0] == 2
    assert read_choice("**Fast** is the best.", names)[0] == 1
    assert read_choice('{"choice": "Candidate #1 (careful)"}', names)[0] == 0
    assert read_choice("3", names)[0] == 2
    with pytest.raises(UnreadableInput, match="candidate 4 does not exist"):
        read_choice('{"winner": 4}', names)
    assert read_scores('{"scores": [{"candidate": 1, "score": 7}, {"candidate": 2, "score": "12"}]}', names[:2]) == {
        0: 7,
        1: 10,
    }
    assert read_scores("- Candidate 2 (fast): 6\n- careful = 4", names[:2]) == {1: 6, 0: 4}
    assert read_scores("[3, 8]", names[:2]) == {0: 3, 1: 8}
    with pytest.raises(UnreadableInput):
        read_scores("They are both good.", names[:2])


# --------------------------------------------------------------------------- replanning during a team


def test_a_replan_during_a_team_keeps_its_members_and_does_not_show_them():
    from replangraph.config import resolve_profiles
    from replangraph.nodes.planning.replanner import Replanner

    seen = []
    calls = Calls()
    team_task = new_task("1", "find the answer", position=[0], agent_type="panel")
    changes = start_changes(team_task, "panel", Team(list(MEMBERS)), 1, 50)
    tasks = apply_writes({"1": team_task}, [changes])
    tasks = apply_writes(tasks, [{"1.m1": {"status": "in_progress"}, "1.m2": {"status": "completed", "result": "x"}}])
    held = new_task("1.m2.1", "more work", position=[0, 1, 0], parent_id="1.m2", origin="handoff")
    flagged = new_task("2", "check prices", position=[1])
    flagged.update(status="failed", error="site down", replan_request={"trigger": "failure", "reason": "site down"})
    later = new_task("3", "write it up", position=[2], depends_on=["2"])
    state = {"goal": "g", "tasks": {**tasks, "1.m2.1": held, "2": flagged, "3": later}, "replans": []}

    def respond(request):
        seen.append(request.prompt)
        return plan_of({"id": "2b", "content": "check prices elsewhere", "depends_on": []})

    profiles = {**resolve_profiles(members(calls), ()), "panel": AgentProfile(description="team")}
    update = Replanner(ScriptedChatModel(respond=respond), profiles, AgentConfig(single_agent_fallback=False))(state)
    assert update["replans"][-1]["replaced_task_ids"] == ["3"]  # only the plan's own pending work
    assert all(k not in update["tasks"] for k in ("1.m1", "1.m3", "1.m2.1"))
    assert "1.m3" not in seen[0] and "1.m2.1" not in seen[0] and "[>] 1: find the answer" in seen[0]


@pytest.mark.parametrize("store", [False, True], ids=["workspace channel", "store"])
def test_every_candidate_s_result_stays_readable_by_id_after_the_merge(store):
    from langgraph.store.memory import InMemoryStore
    from scripting import subtask_of

    calls, read = Calls(), {}
    long_answer = "fast's long answer " + "detail " * 600  # longer than the queue keeps whole

    def work(name, request):
        if name == "thorough":
            return "thorough's partial notes [REPLAN] no source for the rest"
        return long_answer if name == "fast" else f"answer from {name}"

    def respond(request):
        if "Plan" in request.tool_names:
            return ONE_TEAM_TASK
        if "You judge the results" in request.system:
            return '{"winner": 1, "reason": "careful"}'
        if subtask_of(request) == "write it up":
            asked = [m for m in request.messages if getattr(m, "name", None) == "read_output"]
            if len(asked) < 2:
                ident = ("1/candidate-m2", "1/candidate-m3")[len(asked)]
                return tool_call("read_output", {"output_id": ident}, call_id=f"r{len(asked)}")
            read.update(m2=asked[0].content, m3=asked[1].content)
            return "written up"
        return "FINAL:\n" + request.prompt

    graph = build_graph(
        ScriptedChatModel(respond=respond),
        agents=members(calls, work),
        teams={"panel": Team(members=list(MEMBERS))},
        config=AgentConfig(retry_backoff_s=0),
        checkpointer=InMemorySaver(),
        store=InMemoryStore() if store else None,
    )
    out, events = run(graph)
    event = merged(events)
    assert [c["output_id"] for c in event["candidates"]] == ["1/candidate-m1", "1/candidate-m2", "1/candidate-m3"]
    assert "1.m2" not in out["tasks"] and out["tasks"]["2"]["status"] == "completed"
    assert read["m2"].count("detail") >= 500  # paged whole, not the queue's excerpt
    assert "thorough's partial notes" in read["m3"]


def test_the_winner_s_completion_check_stands_for_the_team_subtask():
    calls = Calls()

    def respond(request):
        if "Verdict" in request.tool_names:
            who = re.search(r"answer from (\w+)", request.prompt).group(1)
            return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": f"{who} is complete"})
        if "Plan" in request.tool_names:
            return ONE_TEAM_TASK
        if "You judge the results" in request.system:
            return '{"winner": 2, "reason": "fast"}'
        return "written up" if request.tool_names else "FINAL:\n" + request.prompt

    graph = build_graph(
        ScriptedChatModel(respond=respond),
        agents=members(calls),
        teams={"panel": Team(members=list(MEMBERS))},
        config=AgentConfig(retry_backoff_s=0, verify_results=True),
    )
    out, events = run(graph)
    assert out["tasks"]["1"]["verdict"]["reason"] == "fast is complete"
    assert len([e for e in events if e["event"] == "step_verified"]) == 4  # three members and task 2


def test_when_every_member_fails_their_partial_results_become_the_team_s():
    calls, seen = Calls(), []

    def work(name, request):
        return f"PARTIAL-{name} [REPLAN] no source" if name != "fast" else "[REPLAN] nothing found"

    def replan(request):
        seen.append(request.prompt)
        return plan_of()

    graph = build_graph(
        ScriptedChatModel(respond=lambda r: replan(r) if "replanner" in r.system else main_model(calls).respond(r)),
        agents=members(calls, work),
        teams={"panel": Team(members=list(MEMBERS))},
        config=AgentConfig(retry_backoff_s=0, single_agent_fallback=False),
    )
    out, _ = run(graph)
    team = out["tasks"]["1"]
    assert team["status"] == "failed" and "every member of team 'panel' failed" in team["error"]
    assert (
        "Partial result of careful (1.m1):\nPARTIAL-careful" in team["result"] and "PARTIAL-thorough" in team["result"]
    )
    assert "PARTIAL-careful" in seen[0] and "PARTIAL-thorough" in seen[0]  # the replanner builds on them
    assert "PARTIAL-careful" in out["final_answer"]


def test_teams_started_together_never_pass_max_tasks():
    calls = Calls()
    plan = plan_of(
        {"id": "a", "content": "find a", "agent_type": "panel", "depends_on": []},
        {"id": "b", "content": "find b", "agent_type": "panel", "depends_on": []},
    )
    graph = build_graph(
        main_model(calls, judge=lambda r: '{"winner": 1}', plan=plan),
        agents=members(calls),
        teams={"panel": Team(members=list(MEMBERS))},
        config=AgentConfig(retry_backoff_s=0, max_tasks=6, single_agent_fallback=False),
    )
    largest = 0
    for state in graph.stream({"messages": [("user", "go")]}, stream_mode="values"):
        largest = max(largest, len(state.get("tasks") or {}))
    tasks = state["tasks"]
    assert largest <= 6
    assert {tasks["a"]["status"], tasks["b"]["status"]} == {"completed", "failed"}  # one had no room for members
    [refused] = [t for t in ("a", "b") if tasks[t]["status"] == "failed"]
    assert "max_tasks=6" in tasks[refused]["error"]


def test_a_subtask_may_hand_work_off_to_a_team():
    from scripting import subtask_of

    calls = Calls()
    plan = plan_of({"id": "1", "content": "draft the answer", "depends_on": []})

    def respond(request):
        if "Plan" in request.tool_names:
            return plan
        if "You judge the results" in request.system:
            return '{"winner": 3, "reason": "thorough"}'
        if subtask_of(request) == "draft the answer":
            if request.called("replan_split_and_handoff"):
                return "handed off"
            handoff = {"summary": "draft done", "tasks": [{"content": "check the draft", "agent_type": "Panel"}]}
            return tool_call("replan_split_and_handoff", handoff)
        return "FINAL:\n" + request.prompt

    graph = build_graph(
        ScriptedChatModel(respond=respond),
        agents=members(calls),
        teams={"panel": Team(members=list(MEMBERS))},
        config=AgentConfig(retry_backoff_s=0),
    )
    out, events = run(graph)
    [checked] = [t for t in out["tasks"].values() if t["content"] == "check the draft"]
    assert checked["agent_type"] == "panel" and checked["status"] == "completed"
    assert checked["result"] == "answer from thorough" and merged(events)["task_id"] == checked["id"]


def test_an_unreadable_pick_is_asked_about_once_more_with_what_was_wrong():
    calls, asked = Calls(), []

    def judge(request):
        asked.append(request.prompt)
        unsure = "Candidate 1 and candidate 3 both look fine"
        return '{"winner": 3}' if "could not be read" in request.prompt else unsure

    out, events = run(team_graph(calls, judge=judge))
    assert out["tasks"]["1"]["result"] == "answer from thorough" and calls.counts["judge"] == 2
    assert "names candidates 1 and 3 without saying which wins" in asked[1]
    assert out["tasks"]["1"]["team"]["model_calls"] == 2
