"""A provider that refuses a one-shot request as too long gets it once more, fitted to half the budget."""

from __future__ import annotations

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages.utils import count_tokens_approximately
from scripting import is_replan, plan_of, run, subtask_of

from replangraph import AgentConfig, AgentProfile, Team, build_graph
from replangraph.testing import ScriptedChatModel, ScriptedRequest

CONFIG = AgentConfig(context_window=20_000, reserved_output=1_000, model_retries=0)
HUGE = "word " * 12_000  # ~12k tokens: fits our 20k window, not the provider's real one


def refusing(limit: int, respond, refused: list[int], when) -> ScriptedChatModel:
    """A model that refuses requests over ``limit`` tokens for which ``when(request)`` holds."""

    def guarded(request: ScriptedRequest):
        used = count_tokens_approximately(request.messages)
        if when(request) and used > limit:
            refused.append(used)
            raise ContextOverflowError(f"maximum context length is {limit} tokens")
        return respond(request)

    return ScriptedChatModel(respond=guarded)


def is_plan(request: ScriptedRequest) -> bool:
    return "Plan" in request.tool_names and not is_replan(request)


def test_the_planner_asks_again_with_a_smaller_request():
    refused: list[int] = []

    def respond(request):
        if is_plan(request):
            return plan_of({"id": "a", "content": "summarize the text"})
        return "done" if request.tool_names else "final"

    model = refusing(9_000, respond, refused, is_plan)
    state, events = run(build_graph(model, config=CONFIG), goal="Summarize: " + HUGE)
    assert len(refused) == 1
    [created] = [e for e in events if e["event"] == "plan_created"]
    assert created["fallback_reason"] is None and [t["id"] for t in created["tasks"]] == ["a"]
    assert state["tasks"]["a"]["status"] == "completed"


def test_the_verifier_checks_again_with_a_smaller_request():
    refused: list[int] = []

    def respond(request):
        if "Plan" in request.tool_names:
            return plan_of({"id": "a", "content": "write the long text"})
        if "Verdict" in request.tool_names:
            return {"name": "Verdict", "args": {"complete": True, "reason": "all there", "remaining_tasks": []}}
        return HUGE if request.tool_names else "final"

    model = refusing(9_000, respond, refused, lambda r: "Verdict" in r.tool_names)
    config = CONFIG.model_copy(update={"verify_results": True})
    graph = build_graph(model, config=config)
    state, _ = run(graph)
    assert len(refused) == 1
    verdict = state["tasks"]["a"]["verdict"]
    assert verdict["complete"] and verdict["reason"] == "all there" and verdict["error"] is None
    assert monitor_of(graph).context_window == 9_000  # the window the error named, learned for the model


def test_the_replanner_asks_again_with_a_smaller_request():
    refused: list[int] = []

    def respond(request):
        if is_replan(request):
            return plan_of({"id": "b", "content": "try another way"})
        if "Plan" in request.tool_names:
            return plan_of({"id": "a", "content": "try it"})
        if request.tool_names:
            return "[REPLAN] blocked" if subtask_of(request) == "try it" else "worked"
        return "final"

    model = refusing(9_000, respond, refused, is_replan)
    state, _ = run(build_graph(model, config=CONFIG), goal="Work through this text: " + HUGE)
    assert len(refused) == 1
    assert state["replans"][0]["outcome"] == "replanned"
    [new] = state["replans"][0]["new_task_ids"]
    assert state["tasks"][new]["status"] == "completed"


def test_a_team_judge_is_asked_again_with_a_smaller_request():
    refused: list[int] = []
    plan = plan_of({"id": "1", "content": "write the long text", "agent_type": "panel", "depends_on": []})

    def respond(request):
        if "Plan" in request.tool_names:
            return plan
        if "You judge the results" in request.system:
            return '{"winner": 2, "reason": "b is better"}'
        return "final"

    def member(name: str) -> AgentProfile:
        text = f"{name}: {HUGE[: len(HUGE) // 2]}"  # ~6k tokens each: both fit our window, not the provider's
        return AgentProfile(description=f"the {name} agent", model=ScriptedChatModel(respond=lambda r: text))

    judge = refusing(9_000, respond, refused, lambda r: "You judge the results" in r.system)
    model = ScriptedChatModel(respond=respond)
    agents = {"a": member("a"), "b": member("b")}
    graph = build_graph(
        model, agents=agents, teams={"panel": Team(members=["a", "b"])}, config=CONFIG, planner_model=judge
    )
    state, _ = run(graph)
    assert len(refused) == 1
    record = state["tasks"]["1"]["team"]
    assert (record["winner"], record["reason"], record["model_calls"]) == ("b", "b is better", 2)
    # The judge (the planner's model) learned its window; the agents' model did not.
    assert monitor_of(graph).for_model(judge).context_window == 9_000
    assert monitor_of(graph).context_window == 20_000


def monitor_of(graph):
    """The context monitor of a compiled graph's main model (the executor's)."""
    return graph.builder.nodes["executor"].runnable.func.monitor
