"""Every node on both paths: the planner, replanner, compressor, finalizer, team merge and the human-in-the-loop
nodes give the same result under ``invoke`` and ``ainvoke`` in the same scripted world, and under ``ainvoke``
they await their models (`Awaited` refuses a sync call: a node that made one would fall back, and show it).

Overlap is proven with barriers and the order of what happened, never with timings."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest
from clocks import GUARD_S
from langchain_core.outputs import ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scripting import invoke, is_replan, plan_of, run, subtask_of

from replangraph import AgentConfig, AgentProfile, Team, build_graph
from replangraph.testing import ScriptedChatModel, tool_call

WAYS = ("invoke", "ainvoke")


class Awaited(ScriptedChatModel):
    """A scripted model with async code of its own whose sync call raises: only an awaited call answers."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        raise RuntimeError("the model was called without await")

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ScriptedChatModel._generate(self, messages, stop, **kwargs)


def model_for(way: str, respond) -> ScriptedChatModel:
    """The world's model: under ``ainvoke`` one that answers only when awaited."""
    return (Awaited if way == "ainvoke" else ScriptedChatModel)(respond=respond)


def outcome(state: dict, events: list[dict]) -> dict:
    """What a run did, without its timings: each task's ending, the replans, the answer, the events in order."""
    kept = ("status", "result", "error", "model_calls", "team", "clarifications", "agent_type")
    return {
        "tasks": {tid: {k: t.get(k) for k in kept} for tid, t in state["tasks"].items()},
        "replans": [{k: v for k, v in r.items()} for r in state.get("replans") or []],
        "final_answer": state.get("final_answer"),
        "planner_calls": state.get("planner_calls"),
        "events": [e["event"] for e in events],
    }


def both_ways(build, goal: str = "do it") -> dict:
    """The outcome of the world ``build(way)`` makes, the same under ``invoke`` and ``ainvoke``."""
    found = {way: outcome(*run(build(way), goal, way=way)) for way in WAYS}
    assert found["ainvoke"] == found["invoke"]
    return found["invoke"]


def answering(plan: dict, work, replan=None, summary=None):
    """A responder: the planner gets ``plan``, the replanner ``replan(request)``, the summarizer ``summary``,
    subtasks ``work(request)``; the finalizer writes ``FINAL:`` and the results."""

    def respond(request):
        if is_replan(request):
            return replan(request) if replan else plan_of()
        if "Plan" in request.tool_names:
            return plan
        if "You compress the working memory" in request.system:
            return summary
        if request.tool_names:
            return work(request)
        return "FINAL:\n" + request.prompt

    return respond


# --------------------------------------------------------------------------- planner, finalizer, replanner


def test_planner_and_finalizer_give_the_same_run_on_both_paths():
    plan = plan_of({"id": "a", "content": "count the apples"}, {"id": "b", "content": "sum up", "depends_on": ["a"]})
    respond = answering(plan, lambda r: f"{subtask_of(r)}: done")
    config = AgentConfig(verify_results=False)
    found = both_ways(lambda way: build_graph(model_for(way, respond), config=config))
    assert list(found["tasks"]) == ["a", "b"]  # the model's plan, not the rule-based fallback's
    assert found["planner_calls"] == 1
    assert found["final_answer"].startswith("FINAL:")  # the model's answer, not the fallback report
    assert "count the apples: done" in found["final_answer"]


def test_the_replanner_gives_the_same_new_plan_on_both_paths():
    plan = plan_of({"id": "1", "content": "buy from the shop"})

    def work(request):
        return "[REPLAN] the shop is closed" if "shop" in subtask_of(request) else "wrote a letter"

    respond = answering(plan, work, replan=lambda r: plan_of({"id": "2", "content": "write to the maker"}))
    config = AgentConfig(verify_results=False)
    found = both_ways(lambda way: build_graph(model_for(way, respond), config=config))
    (replan,) = found["replans"]
    assert replan["outcome"] == "replanned" and replan["new_task_ids"] == ["2"]
    assert found["tasks"]["2"]["status"] == "completed" and found["tasks"]["2"]["result"] == "wrote a letter"


# --------------------------------------------------------------------------- compressor


def test_the_compressor_gives_the_same_summary_on_both_paths():
    seen: dict[str, set[str]] = {}

    def big_page(n: int) -> str:
        """Read page n."""
        return f"page {n}: " + "lorem ipsum " * 600

    def build(way: str):
        summaries = seen.setdefault(way, set())

        def work(request):
            summaries.update(re.findall(r"SUMMARY OF PAGES[^\n]*|summary model failed", request.prompt))
            pages = [int(n) for n in re.findall(r"page (\d+):", " ".join(m.text for m in request.tool_results))]
            after = max(pages, default=-1) + 1
            return tool_call("big_page", {"n": after}) if after < 6 else "read all pages"

        plan = plan_of({"id": "a", "content": "read pages"})
        respond = answering(plan, work, summary="SUMMARY OF PAGES read so far")
        config = AgentConfig(context_window=9_000, reserved_output=1_000, keep_last_messages=4, verify_results=False)
        return build_graph(model_for(way, respond), tools=[big_page], config=config)

    found = both_ways(build)
    assert "context_compressed" in found["events"] and found["tasks"]["a"]["status"] == "completed"
    assert seen["invoke"] == seen["ainvoke"] == {"SUMMARY OF PAGES read so far"}  # the model's summary, no failure


# --------------------------------------------------------------------------- teams

MEMBERS = ("careful", "fast", "thorough")


def team_world(way: str, merge: str, judge, votes=None, meet=None, plan=None, max_concurrency: int = 4):
    """A team of `MEMBERS` on a one-subtask plan (or ``plan``); ``judge(request)`` answers the judge,
    ``votes[name]`` a member's vote. ``meet(kind, request)``, awaited before each answer under ``ainvoke``,
    lets a test hold calls until others are running too."""
    plan = plan or plan_of({"id": "1", "content": "find the answer", "agent_type": "panel"})

    def member(name: str) -> AgentProfile:
        def respond(request):
            if "You score the results" in request.system:
                return votes[name]
            return f"answer from {name}"

        model = Slow(respond=respond, meet=meet, kind=name) if meet else model_for(way, respond)
        return AgentProfile(description=f"the {name} agent", model=model)

    def main(request):
        if "Plan" in request.tool_names:
            return plan
        if "You judge the results" in request.system or "Several agents each did" in request.system:
            return judge(request)
        return "FINAL:\n" + request.prompt

    main_model = Slow(respond=main, meet=meet, kind="main") if meet else model_for(way, main)
    return build_graph(
        main_model,
        agents={name: member(name) for name in MEMBERS},
        teams={"panel": Team(members=list(MEMBERS), merge=merge)},
        config=AgentConfig(max_concurrency=max_concurrency, verify_results=False, retry_backoff_s=0),
    )


@pytest.mark.parametrize(
    ("merge", "winner", "reason"),
    [("best", "fast", "fast is right"), ("vote", "thorough", "the highest total score (15 from 3 vote(s))")],
)
def test_the_team_merge_keeps_the_same_result_on_both_paths(merge, winner, reason):
    votes = {
        "careful": '{"scores": {"fast": 6, "thorough": 8}}',
        "fast": '{"scores": {"careful": 5, "thorough": 7}}',
        "thorough": '{"scores": {"careful": 4, "fast": 5}}',
    }
    judge = lambda request: '{"winner": 2, "reason": "fast is right"}'  # noqa: E731
    found = both_ways(lambda way: team_world(way, merge, judge, votes))
    team = found["tasks"]["1"]["team"]
    assert (team["winner"], team["reason"]) == (winner, reason)  # the judge's or the voters' answer was used
    assert found["tasks"]["1"]["result"] == f"answer from {winner}"


class Slow(ScriptedChatModel):
    """An async-only scripted model that awaits ``meet(kind, request)`` before it answers."""

    meet: object = None
    kind: str = ""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        raise RuntimeError("the model was called without await")

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        await self.meet(self.kind, messages)
        return ScriptedChatModel._generate(self, messages, stop, **kwargs)


class Meeting:
    """Holds the calls ``who(kind, messages)`` names until ``parties`` of them are waiting together (fails after
    `GUARD_S` if they never are), and writes down in ``order`` when each arrived and left."""

    def __init__(self, parties: int, who):
        self.parties, self.who = parties, who
        self.order: list[str] = []
        self.barrier: asyncio.Barrier | None = None  # made in the run's event loop

    async def __call__(self, kind: str, messages) -> None:
        if not self.who(kind, messages):
            return
        self.barrier = self.barrier or asyncio.Barrier(self.parties)
        self.order.append(f"start {kind}")
        await asyncio.wait_for(self.barrier.wait(), GUARD_S)
        self.order.append(f"end {kind}")


def is_turn(kind: str, messages) -> bool:
    return kind in MEMBERS and any("Your subtask" in m.text for m in messages)


def test_under_ainvoke_a_team_s_members_run_at_the_same_time():
    meeting = Meeting(len(MEMBERS), is_turn)
    graph = team_world("ainvoke", "best", lambda r: '{"winner": 1, "reason": "first"}', meet=meeting)
    state = invoke(graph, {"messages": [("user", "go")]}, way="ainvoke")
    assert state["tasks"]["1"]["team"]["winner"] == "careful"
    starts = meeting.order[: len(MEMBERS)]
    assert sorted(starts) == sorted(f"start {m}" for m in MEMBERS)  # every member started before any ended
    assert len(meeting.order) == 2 * len(MEMBERS)


def test_under_ainvoke_the_votes_are_cast_at_the_same_time():
    votes = {name: '{"scores": {"1": 5, "2": 6}}' for name in MEMBERS}
    meeting = Meeting(len(MEMBERS), lambda kind, messages: "You score the results" in messages[0].text)
    state = invoke(
        team_world("ainvoke", "vote", None, votes, meet=meeting), {"messages": [("user", "go")]}, way="ainvoke"
    )
    assert "3 vote(s)" in state["tasks"]["1"]["team"]["reason"]
    assert sorted(meeting.order[: len(MEMBERS)]) == sorted(f"start {m}" for m in MEMBERS)


def test_under_ainvoke_two_teams_are_judged_at_the_same_time():
    plan = plan_of(
        {"id": "a", "content": "first question", "agent_type": "panel"},
        {"id": "b", "content": "second question", "agent_type": "panel"},
    )
    meeting = Meeting(2, lambda kind, messages: kind == "main" and "You judge the results" in messages[0].text)
    judge = lambda r: '{"winner": 3}' if "first" in r.prompt else '{"winner": 1}'  # noqa: E731
    graph = team_world("ainvoke", "best", judge, meet=meeting, plan=plan, max_concurrency=6)
    state = invoke(graph, {"messages": [("user", "go")]}, way="ainvoke")
    assert (state["tasks"]["a"]["team"]["winner"], state["tasks"]["b"]["team"]["winner"]) == ("thorough", "careful")
    assert meeting.order == ["start main", "start main", "end main", "end main"]


# --------------------------------------------------------------------------- human in the loop


def test_a_question_and_its_answer_go_the_same_way_on_both_paths():
    def work(request):
        got = [m.text for m in request.tool_results if request.tool_name(m) == "ask_user"]
        return f"door painted {got[0]}" if got else tool_call("ask_user", {"question": "Which colour?"})

    respond = answering(plan_of({"id": "1", "content": "paint the door"}), work)
    found = {}
    for way in WAYS:
        graph = build_graph(
            model_for(way, respond), config=AgentConfig(verify_results=False), checkpointer=InMemorySaver()
        )
        cfg = {"configurable": {"thread_id": way}}
        asked = invoke(graph, {"messages": [("user", "paint")]}, cfg, way)
        out = invoke(graph, Command(resume="green"), cfg, way)
        found[way] = ([i.value["question"] for i in asked["__interrupt__"]], out["final_answer"], out["tasks"])
    assert found["ainvoke"][:2] == found["invoke"][:2]
    assert found["invoke"][0] == ["Please confirm: Which colour?"] and "door painted green" in found["invoke"][1]
    for way in WAYS:
        assert found[way][2]["1"]["clarifications"] == [{"question": "Which colour?", "answer": "green"}]


def test_a_plan_review_and_a_slash_command_go_the_same_way_on_both_paths():
    plan = plan_of({"id": "1", "content": "step A"}, {"id": "2", "content": "step B", "depends_on": ["1"]})
    respond = answering(plan, lambda r: f"{subtask_of(r)} done")
    found = {}
    for way in WAYS:
        config = AgentConfig(verify_results=False, approve_plan=True)
        graph = build_graph(model_for(way, respond), config=config, checkpointer=InMemorySaver())
        cfg = {"configurable": {"thread_id": way}}
        shown = invoke(graph, {"messages": [("user", "go")]}, cfg, way)["__interrupt__"][0].value
        status = invoke(graph, {"messages": [("user", "/status")]}, cfg, way)
        out = invoke(graph, Command(resume="approve"), cfg, way)
        found[way] = ([t["id"] for t in shown["tasks"]], status["messages"][-1].text, out["final_answer"])
    assert found["ainvoke"] == found["invoke"]
    assert found["invoke"][0] == ["1", "2"] and "step B done" in found["invoke"][2]


# --------------------------------------------------------------------------- time limits


def test_a_planner_model_that_never_answers_is_cut_off_the_same_way_on_both_paths():
    """Under ``ainvoke`` the stuck call is cancelled (asyncio); under ``invoke`` its thread is abandoned. Either
    way the planner falls back to one subtask for the goal, and the run goes on."""
    release, cancelled = threading.Event(), threading.Event()

    def respond(request):
        if "Plan" in request.tool_names:
            release.wait(GUARD_S)  # stuck until the test ends (sync path)
        return "done" if request.tool_names else "FINAL: done"

    class Stuck(ScriptedChatModel):
        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            if self.bound_tools and self.bound_tools[0]["function"]["name"] == "Plan":
                try:
                    await asyncio.sleep(GUARD_S)
                except asyncio.CancelledError:
                    cancelled.set()
                    raise
            return ScriptedChatModel._generate(self, messages, stop, **kwargs)

    config = AgentConfig(step_timeout_s=2.0, model_retries=0, verify_results=False)
    try:
        found = {
            way: run(
                build_graph((Stuck if way == "ainvoke" else ScriptedChatModel)(respond=respond), config=config), way=way
            )
            for way in WAYS
        }
    finally:
        release.set()
    plans = {way: next(e for e in events if e["event"] == "plan_created") for way, (_, events) in found.items()}
    assert plans["ainvoke"] == plans["invoke"]
    assert "no answer within 2.0s" in plans["invoke"]["fallback_reason"]
    assert found["ainvoke"][0]["final_answer"] == found["invoke"][0]["final_answer"] == "FINAL: done"
    assert cancelled.is_set()
