"""A node's model call as a task of its own (`replangraph.node_calls`): saved when it returns, so a resume repeats
only the calls in flight; its events and metered writes come back to the node; a host finds the node by name."""

from __future__ import annotations

import operator
from typing import Annotated

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from replangraph.events import caught_events, emit
from replangraph.llm.replies import metered, note_reply, note_writes
from replangraph.node_calls import NodeCall, call_results, resolve_node_calls_with, run_node_call


class Judge:
    """Judges an item; fails on the items in ``failing`` (as a provider that is down)."""

    def __init__(self, failing: set[str] = frozenset()):
        self.judged: list[str] = []
        self.failing = set(failing)

    def judge(self, item: str) -> str:
        self.judged.append(item)
        if item in self.failing:
            raise RuntimeError(f"no answer for {item}")
        emit("judged", item=item)
        note_reply([item], f"reply {item}")
        return f"{item} ok"


class State(TypedDict):
    verdicts: Annotated[list, operator.add]


def checking_graph(judge: Judge, items: list[str]):
    def check(state: State) -> dict:
        return {"verdicts": call_results([NodeCall("check", "judge", (item,), target=judge) for item in items])}

    builder = StateGraph(State)
    builder.add_node("check", check)
    builder.add_edge(START, "check")
    return builder.compile(checkpointer=InMemorySaver())


def test_each_call_is_a_task_and_a_resume_repeats_only_the_call_that_had_not_returned():
    judge = Judge(failing={"b"})
    graph = checking_graph(judge, ["a", "b", "c"])
    run = {"configurable": {"thread_id": "t"}}
    tasks = []
    with pytest.raises(RuntimeError, match="no answer for b"):
        for chunk in graph.stream({"verdicts": []}, run, stream_mode="tasks"):
            tasks += [chunk["name"]] if "input" in chunk else []
    assert tasks.count("node_call") == 3  # one task per call, started by the node
    assert sorted(judge.judged) == ["a", "b", "c"]

    judge.failing.clear()  # the provider is back; the run resumes from its checkpoint
    out = graph.invoke(None, run)
    assert out["verdicts"] == ["a ok", "b ok", "c ok"]
    assert sorted(judge.judged) == ["a", "b", "b", "c"]  # a and c returned before: saved, not asked again


def test_outside_a_run_the_calls_run_here_and_their_events_and_writes_reach_the_caller():
    judge = Judge()
    replies = []
    with caught_events() as events, metered([lambda request, reply: {"spent": [reply]}], combine) as meter:
        assert call_results([NodeCall("check", "judge", (x,), target=judge) for x in "xy"]) == ["x ok", "y ok"]
        replies = meter.writes
    assert [e["item"] for e in events] == ["x", "y"]
    assert replies == {"spent": ["reply x", "reply y"]}


def combine(current, new):
    return {k: [*current.get(k, []), *v] for k, v in new.items()} | {k: v for k, v in current.items() if k not in new}


class Hooks:
    hooks = [staticmethod(lambda request, reply: {"spent": [reply]})]
    combine = staticmethod(combine)


@pytest.fixture
def host():
    """A host's resolver: a call that came without its object finds it (and its node's meter) by node name."""
    judge = Judge()
    resolve_node_calls_with(lambda call: (judge, Hooks()) if call.node == "check" else (_ for _ in ()).throw(KeyError))
    yield judge
    resolve_node_calls_with(None)


def test_a_call_without_its_object_is_found_by_the_host_and_metered_there(host):
    """As on a worker, where no meter of the node is open: the call crossed as plain data, the reply hooks of the
    worker's graph meter it, and the writes go back with its value for the node's own meter."""
    record = run_node_call.func(NodeCall("check", "judge", ("z",)))
    assert host.judged == ["z"] and record["value"] == "z ok"
    assert record["writes"] == {"spent": ["reply z"]} and record["events"] == [{"event": "judged", "item": "z"}]
    with metered([], combine) as meter:
        note_writes(record["writes"])  # what the node does with them (`call_results`)
    assert meter.writes == {"spent": ["reply z"]}


def test_a_call_without_its_object_and_no_host_says_so():
    with pytest.raises(RuntimeError, match="no graph to find it in"):
        call_results([NodeCall("check", "judge", ("z",))])
