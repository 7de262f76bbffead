"""Whole runs with models served without a tool parser or with reasoning: calls written as text, <think> blocks."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage
from scripting import run, subtask_of

from benchmarks.harness import replangraph_agent
from benchmarks.personas import THOUGHT, persona
from benchmarks.worlds import CatalogWorld, ReportWorld
from replangraph import AgentConfig, build_graph
from replangraph.testing import ScriptedChatModel, ScriptedRequest

FAST = {"retry_backoff_s": 0.0}
CITIES = {"Oslo": "rain", "Lima": "sun", "Pune": "monsoon"}
PLAN = {
    "tasks": [
        {"id": "1", "content": "Look up the weather of Oslo and Lima", "depends_on": []},
        {"id": "2", "content": "Look up the weather of Pune", "depends_on": []},
    ]
}


def weather(city: str) -> str:
    """The weather of a city."""
    return f"{city}: {CITIES[city]}"


def looked_up(request: ScriptedRequest) -> list[str]:
    return [str(m.content) for m in request.tool_results if m.name == "weather" and m.status != "error"]


def text_worker(request: ScriptedRequest):
    """Subtask 1 calls in Mistral's format (two calls at once), subtask 2 in Llama's; each ends with reasoning."""
    results = looked_up(request)
    if "Oslo and Lima" in subtask_of(request):
        if not results:
            calls = [{"name": "weather", "arguments": {"city": c}} for c in ("Oslo", "Lima")]
            return "[TOOL_CALLS] " + json.dumps(calls)
    elif not results:
        return 'I need the data.\n<|python_tag|>{"name": "weather", "parameters": {"city": "Pune"}}<|eom_id|>'
    return "<think>Is that all? Maybe Paris: cloudy.</think>\n" + "\n".join(results)


def text_model(worker=text_worker) -> ScriptedChatModel:
    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:  # the planner writes its call as text too, prose around it
            call = json.dumps({"name": "Plan", "arguments": PLAN})
            return f"<think>Two lookups.</think>\nHere is my plan:\n<tool_call>\n{call}\n</tool_call>"
        if request.tool_names:
            return worker(request)
        return "<think>join them; drop Paris</think>\n" + "\n".join(
            line for line in request.prompt.splitlines() if ": " in line and line.split(":")[0] in CITIES
        )

    return ScriptedChatModel(respond=respond)


def test_planner_and_workers_that_write_calls_as_text_get_the_whole_result():
    graph = build_graph(text_model(), tools=[weather], config=AgentConfig(**FAST))
    state, events = run(graph, "Weather of Oslo, Lima and Pune")
    [created] = [e for e in events if e["event"] == "plan_created"]
    assert created["fallback_reason"] is None and list(state["tasks"]) == ["1", "2"]  # the text call, no rule plan
    assert {t: state["tasks"][t]["result"] for t in ("1", "2")} == {"1": "Oslo: rain\nLima: sun", "2": "Pune: monsoon"}
    assert all(city in state["final_answer"] for city in CITIES)
    assert "Paris" not in state["final_answer"] and "think" not in state["final_answer"]


def test_a_call_cut_by_the_output_limit_is_answered_as_cut_and_made_again():
    replies = []

    def worker(request: ScriptedRequest):
        results = looked_up(request)
        cut = [str(m.content) for m in request.tool_results if "cut off" in str(m.content)]
        if "Pune" in subtask_of(request):
            return text_worker(request)
        if not cut and not results:  # the output limit ends the second call halfway
            return AIMessage(
                '<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>\n'
                '<tool_call>{"name": "weather", "arguments": {"city": "Li',
                response_metadata={"finish_reason": "length"},
            )
        replies.extend(cut)
        if len(results) == 1:
            return '<function=weather>{"city": "Lima"}</function>'
        return "\n".join(results)

    state, _ = run(build_graph(text_model(worker), tools=[weather], config=AgentConfig(**FAST)), "Weather")
    assert state["tasks"]["1"]["result"] == "Oslo: rain\nLima: sun"
    assert replies and "Call it again with shorter arguments" in replies[0]


@pytest.mark.parametrize("world_cls", [CatalogWorld, ReportWorld], ids=["catalog", "report"])
@pytest.mark.parametrize("name", ["text-calls", "reasoning"])
def test_the_text_calls_and_reasoning_personas_recover_every_item_with_the_check(world_cls, name):
    world = world_cls(19)
    outcome = replangraph_agent(verify=True, **FAST)(persona(name, world).model(), world)
    assert outcome.error is None and outcome.recovered == 19


def test_reasoning_never_reaches_a_result_a_verdict_or_the_final_answer():
    world = ReportWorld(19)
    config = AgentConfig(**FAST, verify_results=True)
    state = build_graph(persona("reasoning", world).model(), tools=world.tools, config=config).invoke(
        {"messages": [("user", world.goal)]}
    )
    texts = [state["final_answer"], *(json.dumps(t, default=str) for t in state["tasks"].values())]
    assert not any(THOUGHT in text or "<think>" in text or "item-9999" in text for text in texts)
    assert world.score(state["final_answer"]) == 19 and not state.get("replans")


def test_a_tool_that_returns_a_list_of_strings_is_read_one_item_a_line():
    def names() -> list[str]:
        """List the names."""
        return ["alpha", "beta", "gamma"]

    seen: list[str | None] = []

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return {"name": "Plan", "args": {"tasks": [{"id": "1", "content": "list the names"}]}}
        if request.tool_names:
            if not request.called("names"):
                return {"name": "names", "args": {}}
            seen.append(request.last_result("names"))
            return "I listed them."
        return "FINAL:\n" + request.prompt

    state, _ = run(
        build_graph(ScriptedChatModel(respond=respond), tools=[names], config=AgentConfig(verify_results=False))
    )
    assert seen == ["alpha\nbeta\ngamma"]
    assert "\nalpha\nbeta\ngamma" in state["final_answer"]
