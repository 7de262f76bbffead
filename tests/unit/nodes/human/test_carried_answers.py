"""Answers carried over within a run: what a starting subtask is told, and which earlier answer a repeated
question gets (no LangGraph: the queue as plain tasks)."""

from __future__ import annotations

from replangraph.config import AgentConfig
from replangraph.nodes.human.questions import ANSWERS_SHOWN, answers_so_far, earlier_answer, screen_question
from replangraph.queue.tasks import new_task
from replangraph.testing import tool_call


def asked(task_id: str, position: list[int], *answers: tuple[str, str], parent_id: str | None = None) -> dict:
    task = new_task(task_id, f"work {task_id}", position=position, parent_id=parent_id)
    return {**task, "clarifications": [{"question": q, "answer": a} for q, a in answers]}


def queue(*tasks: dict) -> dict:
    return {t["id"]: t for t in tasks}


def test_a_long_run_tells_the_lineages_answers_and_the_latest_others_each_cut_short():
    parent = asked("p", [0], ("Which city?", "Paris " + "x" * 1_000))
    others = [asked(f"o{n}", [n + 1], (f"Question {n}?", f"answer {n}")) for n in range(10)]
    child = asked("p_dyn_0", [0, 0], parent_id="p")
    text = answers_so_far(queue(parent, child, *others), child)
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(lines) == ANSWERS_SHOWN
    assert lines[0].startswith("- Which city? -> Paris xxx") and lines[0].endswith("… (asked by subtask p)")
    assert len(lines[0]) < 400  # a preview, not the whole answer
    assert lines[-1] == "- Question 9? -> answer 9 (asked by subtask o9)"  # the latest others fill the rest
    assert text.splitlines()[-1].startswith(f"({11 - ANSWERS_SHOWN} earlier answers are not shown")
    assert answers_so_far(queue(child), child) == ""


def test_a_repeated_question_gets_the_nearest_ancestors_answer_before_a_later_subtasks():
    parent = asked("p", [0], ("Which colour?", "green"))
    sibling = asked("s", [1], ("which colour", "red"))
    child = asked("p_dyn_0", [0, 0], parent_id="p")
    tasks = queue(parent, sibling, child)
    found = earlier_answer("Which colour", child, tasks)
    assert found is not None and (found[0]["id"], found[1]["answer"]) == ("p", "green")
    lone = asked("l", [2])
    found = earlier_answer("WHICH COLOUR?", lone, {**tasks, "l": lone})
    assert found is not None and found[0]["id"] == "s"  # no ancestor asked it: the last answer in queue order
    assert earlier_answer("Which size?", child, tasks) is None


def test_screening_answers_from_the_run_before_the_limit_and_asks_what_nobody_asked():
    tasks = queue(asked("p", [0], ("Which colour?", "green")), asked("c", [1]))
    config = AgentConfig(max_clarifications=0)
    reply = screen_question(tool_call("ask_user", {"question": "which colour?"}), tasks["c"], config, tasks)
    assert reply is not None and "(asked by subtask p: work p): green" in reply.text
    reply = screen_question(tool_call("ask_user", {"question": "Which size?"}), tasks["c"], AgentConfig(), tasks)
    assert reply is None  # the user is asked
