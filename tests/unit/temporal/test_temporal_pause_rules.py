"""replangraph.temporal's pauses, without a server: which answers the workflow takes (as ``Command(resume=...)``
takes them in-process) and which it refuses, what input means, and when a run stopped for input goes on.
Skipped without the temporal extra."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("temporalio.langgraph", reason='needs the temporal extra: pip install "replangraph[temporal]"')

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.types import Interrupt  # noqa: E402

from replangraph.temporal.pauses import (  # noqa: E402
    Refused,
    as_input,
    resume_for,
    stopped_between_steps,
    waiting_of,
    with_ids,
)

A, B = "a" * 32, "b" * 32
QUESTION = {"kind": "question", "question": "Which year?", "task_id": "1"}
ONE = [{"id": A, "value": QUESTION}]
TWO = [{"id": A, "value": QUESTION}, {"id": B, "value": {"kind": "question", "task_id": "2"}}]


def test_waiting_interrupts_are_plain_ids_and_values():
    assert waiting_of([Interrupt(value=QUESTION, id=A)]) == ONE


@pytest.mark.parametrize(
    "answer",
    ["2024", {"answer": "2024"}, {"decisions": [{"type": "respond", "message": "2024"}]}, ["a", "list"], None],
    ids=["text", "an answer object", "a HITL decision", "a list", "None"],
)
def test_one_waiting_interrupt_takes_any_value_as_its_answer(answer):
    assert resume_for(answer, ONE) == {A: answer}


def test_answers_by_interrupt_id_are_taken_as_given_some_or_all():
    assert resume_for({A: "2024", B: "blue"}, TWO) == {A: "2024", B: "blue"}
    assert resume_for({B: "blue"}, TWO) == {B: "blue"}  # the other waits on, as a partial resume in-process


@pytest.mark.parametrize(
    ("answer", "waiting", "reason"),
    [
        ("2024", [], "nothing waits for an answer"),
        ("2024", TWO, "2 interrupts wait: answer with a mapping"),
        ({"c" * 32: "2024"}, ONE, "no interrupt waits with id c"),
        ({A: "2024", "note": "x"}, ONE, "not one: note"),
    ],
    ids=["nothing waits", "one answer for two", "an id that does not wait", "ids mixed with other keys"],
)
def test_answers_that_cannot_be_taken_are_refused_with_the_reason(answer, waiting, reason):
    with pytest.raises(Refused, match=reason):
        resume_for(answer, waiting)


def test_input_is_text_a_message_or_the_graphs_input():
    assert as_input("/status")["messages"][0] == HumanMessage("/status")
    message = HumanMessage("approve", id="m1")
    assert as_input(message) == {"messages": [message]}
    assert as_input({"messages": [("user", "hi")]}) == {"messages": [("user", "hi")]}
    for wrong, reason in ((" ", "empty"), (3, "not int")):
        with pytest.raises(Refused, match=reason):
            as_input(wrong)


def test_messages_without_an_id_get_one_from_the_workflow():
    ids = iter(["w1", "w2"])
    given = {"messages": [HumanMessage("/status"), HumanMessage("kept", id="mine"), ("user", "a tuple")]}
    stamped = with_ids(given, lambda: next(ids))["messages"]
    assert [getattr(m, "id", None) for m in stamped] == ["w1", "mine", None]
    assert given["messages"][0].id is None  # the input itself is not changed


def snapshot(values, interrupts=(), next=(), tasks=()):
    return SimpleNamespace(values=values, interrupts=interrupts, next=next, tasks=tasks)


OPEN = {"tasks": {"1": {"id": "1", "status": "in_progress"}}, "messages": [AIMessage("Tasks: 1 in progress.")]}


def test_a_run_left_stopped_between_steps_is_told_apart():
    assert stopped_between_steps(snapshot(OPEN))  # work open, nothing waiting to run: /resume picks it up
    assert not stopped_between_steps(snapshot(OPEN, next=("executor",)))  # steps waiting: they run on
    assert not stopped_between_steps(snapshot(OPEN, interrupts=(Interrupt(value=QUESTION, id=A),)))
    assert not stopped_between_steps(snapshot({**OPEN, "final_answer": "done"}))  # ended
    done = {"tasks": {"1": {"id": "1", "status": "completed"}}}
    assert not stopped_between_steps(snapshot(done))
