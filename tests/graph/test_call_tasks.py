"""Each call to an agent's own tool runs as a LangGraph task of its own (`replangraph.nodes.execution.calls`).

Its result is written when it returns, so an interrupted or killed tools step hands saved results back instead of
calling again (the kill rows are in tests/system/test_call_grain_kills.py). A turn's calls run at once, at most
``max_concurrency`` of them; a call that ran keeps its result whatever the step's time did; the toolkit, read_output
and ask_user still run in the tools node, in call order. Overlap is proven with barriers, never with timings.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from clocks import InFlight
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from scripting import invoke, make_model, plan_of, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.testing import tool_call

ONE = plan_of({"id": "1", "content": "fetch eight items"})


def eight_calls(request):
    if request.tool_results:
        return "got: " + "; ".join(str(m.content) for m in request.tool_results)
    return [tool_call("fetch", {"n": n}, call_id=f"call-{n}") for n in range(1, 9)]


@pytest.mark.parametrize("way", ["invoke", "ainvoke"])
@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_turn_s_calls_run_at_once_at_most_max_concurrency(way, concurrency):
    meter = InFlight(barrier_parties=concurrency if concurrency > 1 else 0)

    def fetch(n: int) -> str:
        """Fetch item n."""
        return f"item {n}"

    config = AgentConfig(max_concurrency=concurrency, verify_results=False)
    graph = build_graph(make_model(ONE, eight_calls), [meter.wrap(fetch)], config=config)
    state = invoke(graph, {"messages": [("user", "go")]}, way=way)
    task = state["tasks"]["1"]
    assert task["status"] == "completed" and all(f"item {n}" in task["result"] for n in range(1, 9))
    assert meter.calls == 8 and meter.peak == concurrency


def test_an_interrupted_call_is_the_only_one_made_again_on_resume():
    made: Counter = Counter()
    approved = threading.Event()

    def fetch(n: int) -> str:
        """Fetch item n (item 3 needs the user's approval)."""
        made[n] += 1
        if n == 3:
            approved.set()
            return f"item 3 ({interrupt('approve item 3?')})"
        return f"item {n}"

    config = AgentConfig(max_concurrency=4, verify_results=False)
    graph = build_graph(make_model(ONE, eight_calls), [fetch], config=config, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke({"messages": [("user", "go")]}, cfg)
    assert [i.value for i in paused["__interrupt__"]] == ["approve item 3?"]
    final = graph.invoke(Command(resume="approved"), cfg)
    task = final["tasks"]["1"]
    assert task["status"] == "completed" and "item 3 (approved)" in task["result"]
    assert made == {**{n: 1 for n in range(1, 9)}, 3: 2}  # the other seven were saved, not made again


def test_a_call_that_ran_keeps_its_result_when_another_runs_out_of_time():
    release = threading.Event()

    def fetch(n: int) -> str:
        """Fetch item n (item 2 hangs)."""
        if n == 2:
            release.wait(30)
        return f"item {n}"

    def turn(request):
        if request.tool_results:
            return "partial: " + "; ".join(str(m.content) for m in request.tool_results)
        return [tool_call("fetch", {"n": n}, call_id=f"call-{n}") for n in (1, 2, 3)]

    config = AgentConfig(max_concurrency=4, verify_results=False, step_timeout_s=1, single_agent_fallback=False)
    try:
        state = build_graph(make_model(ONE, turn), [fetch], config=config).invoke({"messages": [("user", "go")]})
    finally:
        release.set()
    result = state["tasks"]["1"]["result"]  # the step's limit hands off what it read; a continuation goes on
    assert "item 1" in result and "item 3" in result  # both ran beside the stuck call, and their results stay
    # the continuation goes on in the same conversation: it sees what ran and what did not, and answers from it
    after = state["tasks"]["1_dyn_0"]
    assert "step exceeded step_timeout_s=1 in tool 'fetch'" in after["content"] and after["status"] == "completed"
    assert "item 1" in after["result"] and "did not finish" in after["result"]


def test_calls_of_parallel_subtasks_each_reach_their_own_subtask():
    plan = plan_of(*({"id": s, "content": f"fetch for {s}"} for s in ("a", "b", "c")))

    def work(request):
        who = subtask_of(request).removeprefix("fetch for ")
        if request.tool_results:
            return "got: " + "; ".join(str(m.content) for m in request.tool_results)
        # the same call ids in every subtask: a scripted model numbers its calls alike
        return [tool_call("fetch", {"key": f"{who}{n}"}, call_id=f"call-{n}") for n in range(3)]

    def fetch(key: str) -> str:
        """Fetch by key."""
        return f"value of {key}"

    state = build_graph(make_model(plan, work), [fetch], config=AgentConfig(max_concurrency=3)).invoke(
        {"messages": [("user", "go")]}
    )
    for who in "abc":
        result = state["tasks"][who]["result"]
        assert all(f"value of {who}{n}" in result for n in range(3))
        assert not any(f"value of {other}" in result for other in "abc" if other != who)


@pytest.mark.parametrize("way", ["invoke", "ainvoke"])
def test_calls_that_share_an_id_each_run_once_and_the_agent_sees_each_result(way):
    made: Counter = Counter()

    def look(word: str) -> str:
        """Look a word up."""
        made[word] += 1
        return f"definition of {word}"

    seen: list[list[str]] = []

    def work(request):
        if not request.tool_results:  # one id for the three calls, as some OpenAI-compatible servers send
            return [tool_call("look", {"word": w}, call_id="call_0") for w in ("alpha", "beta", "gamma")]
        seen.append([str(m.content) for m in request.tool_results])
        return "done: " + " | ".join(str(m.content) for m in request.tool_results)

    config = AgentConfig(verify_results=False)
    graph = build_graph(make_model(plan_of({"id": "1", "content": "define three words"}), work), [look], config=config)
    state = invoke(graph, {"messages": [("user", "go")]}, way=way)
    assert made == Counter({"alpha": 1, "beta": 1, "gamma": 1})
    assert seen == [[f"definition of {w}" for w in ("alpha", "beta", "gamma")]]
    assert all(f"definition of {w}" in state["final_answer"] for w in ("alpha", "beta", "gamma"))
