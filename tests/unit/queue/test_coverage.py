"""Which follow-ups are queued (queue.coverage: all of them, but the goal itself and a check's second redo), what
the text policy adds or notes (replangraph.policy), and continuations versus splits (queue.plans.split_task)."""

from __future__ import annotations

import pytest

from replangraph.policy import OFF, TextPolicy
from replangraph.policy.scopes import claimed_work
from replangraph.queue.coverage import follow_ups
from replangraph.queue.index import apply_writes
from replangraph.queue.plans import LimitReached, split_task
from replangraph.queue.tasks import new_task

AGENTS = ["default"]
GOAL = "Extract the top 100 products."


def extract(first: int, last: int) -> str:
    return f"Extract products ranked {first}-{last}."


def queue(*changes: dict) -> dict:
    tasks = {"1": {**new_task("1", extract(1, 100), position=[0]), "status": "in_progress"}}
    return apply_writes(tasks, list(changes))


def handed_off(tasks: dict, parent: str, *contents: str, kind: str = "continuation") -> dict:
    specs = [{"content": c} for c in contents]
    return apply_writes(
        tasks, [split_task(tasks, parent, specs, agent_types=AGENTS, max_tasks=50, max_split_depth=1, kind=kind)]
    )


# --------------------------------------------------------------------------- continuations and splits


def test_a_continuation_stays_at_its_parents_depth_and_a_split_goes_one_deeper():
    tasks = handed_off(queue(), "1", extract(51, 100))
    assert tasks["1_dyn_0"]["depth"] == 0 and tasks["1_dyn_0"]["follow_up"] == {"kind": "continuation", "by": "handoff"}
    for depth in range(5):  # a chain as long as the work: never refused by max_split_depth
        last = sorted(tasks, key=len)[-1]
        tasks = handed_off(tasks, last, extract(60 + depth, 100))
    assert {t["depth"] for t in tasks.values()} == {0}
    split = handed_off(tasks, "1", extract(1, 25), extract(26, 50), kind="split")
    assert {split[t]["depth"] for t in ("1_dyn_1", "1_dyn_2")} == {1}
    with pytest.raises(LimitReached, match="max_split_depth"):
        handed_off(split, "1_dyn_1", extract(1, 10), kind="split")


# --------------------------------------------------------------------------- what the queue accounts for


def test_a_completed_subtask_accounts_for_its_range_less_what_it_handed_off():
    tasks = handed_off(queue(), "1", extract(51, 100))
    tasks = apply_writes(tasks, [{"1": {"status": "completed"}}])
    assert claimed_work(tasks) == [("1", extract(1, 50)), ("1_dyn_0", extract(51, 100))]
    failed = apply_writes(tasks, [{"1_dyn_0": {"status": "failed"}}])
    assert claimed_work(failed) == [("1", extract(1, 50))]  # failed work accounts for nothing


def test_every_follow_up_is_queued_as_written_but_the_goal_itself():
    tasks = handed_off(queue(), "1", extract(51, 100))
    tasks = apply_writes(tasks, [{"1": {"status": "completed"}, "1_dyn_0": {"status": "in_progress"}}])
    asked = [GOAL + "  ", extract(40, 60), extract(61, 120), extract(61, 120), "Extract the next 5 products."]
    fresh = follow_ups(asked, goal=GOAL)
    assert fresh.queued == asked[1:]  # out of range, overlapping and identical ones too: several units of work
    assert len(fresh.notes) == 1 and "the goal itself" in fresh.notes[0]
    notes = TextPolicy().notes(tasks, fresh.queued, within=tasks["1_dyn_0"])
    assert len(notes) == 3 and "reaches outside" in notes[0] and all("queued as written" in n for n in notes)
    assert OFF.notes(tasks, fresh.queued, within=tasks["1_dyn_0"]) == []


def test_a_check_redoes_a_subtask_once_and_only_one_that_works_with_tools():
    own = extract(1, 100)
    assert follow_ups([own, own.upper(), extract(1, 50)], own=own).queued == [own, extract(1, 50)]
    assert follow_ups([own, extract(1, 50)], own=own, again=False).queued == [extract(1, 50)]


def test_the_parts_a_hand_off_skips_are_added_by_the_policy_only():
    policy = TextPolicy()
    assert policy.added_work(extract(1, 100), [extract(51, 60), extract(71, 100)]) == [extract(61, 70)]
    assert policy.added_work(extract(1, 100), [extract(52, 100)]) == []  # before the first: the agent's own part
    assert OFF.added_work(extract(1, 100), [extract(51, 60), extract(71, 100)]) == []
    assert policy.added_work("Extract every product on pages 1-15.", ["Extract products 41-90."]) == []  # other list
