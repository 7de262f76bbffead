"""What the queue accounts for, which follow-ups add work to it, and continuations versus splits (queue.coverage,
queue.plans.split_task, queue.scopes.merged_ranges)."""

from __future__ import annotations

import pytest

from replangraph.queue.coverage import claimed_work, fresh_follow_ups, skipped_parts
from replangraph.queue.index import apply_writes
from replangraph.queue.plans import LimitReached, split_task
from replangraph.queue.scopes import merged_ranges
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


def test_follow_ups_repeating_the_goal_queued_or_done_work_are_left_out_and_the_rest_stays_in_range():
    tasks = handed_off(queue(), "1", extract(51, 100))
    tasks = apply_writes(tasks, [{"1": {"status": "completed"}, "1_dyn_0": {"status": "in_progress"}}])
    child = tasks["1_dyn_0"]
    fresh = fresh_follow_ups(
        tasks, [GOAL, extract(40, 60), extract(61, 120), extract(61, 120)], within=child, goal=GOAL
    )
    assert fresh.queued == [extract(51, 60), extract(61, 100)]  # clipped to 51-100, the repeat left out
    assert len(fresh.notes) == 4 and "repeats the goal" in fresh.notes[0]


def test_a_check_that_asks_a_subtask_to_go_on_repeats_it_only_after_progress():
    tasks = queue()
    again = fresh_follow_ups(tasks, [extract(1, 100)], within=tasks["1"], again=True)
    assert again.queued == [extract(1, 100)]
    assert fresh_follow_ups(tasks, [extract(1, 100)], within=tasks["1"]).queued == []


def test_a_goal_check_that_judged_the_results_reruns_a_range_a_subtask_only_claims():
    tasks = handed_off(queue(), "1", extract(52, 100))  # 51 skipped: 1 claims it
    tasks = apply_writes(tasks, [{"1": {"status": "completed"}, "1_dyn_0": {"status": "completed"}}])
    assert fresh_follow_ups(tasks, [extract(51, 51)]).queued == []  # by the claims: covered
    assert fresh_follow_ups(tasks, [extract(51, 51)], claims=False).queued == [extract(51, 51)]
    assert fresh_follow_ups(tasks, [extract(52, 100)], claims=False).queued == []  # an exact repeat all the same


def test_adjacent_small_ranges_merge_up_to_the_batch_size():
    tasks = queue()
    pages = [extract(n, n + 4) for n in range(1, 100, 5)]
    fresh = fresh_follow_ups(tasks, pages, within=tasks["1"], batch_size=50)
    assert fresh.queued == [extract(1, 50), extract(51, 100)]


def test_the_parts_a_hand_off_skips_are_found():
    assert skipped_parts(extract(1, 100), [extract(51, 60), extract(71, 100)]) == [extract(61, 70)]
    assert skipped_parts(extract(1, 100), [extract(52, 100)]) == []  # before the first: the agent's own part


# --------------------------------------------------------------------------- merged plans


def test_merged_ranges_join_adjacent_ranges_worded_alike_and_keep_the_rest():
    specs = [
        {"id": "a", "content": extract(1, 5), "depends_on": []},
        {"id": "b", "content": extract(6, 10), "depends_on": []},
        {"id": "c", "content": "Read records 11-15, two days later.", "depends_on": []},
        {"id": "d", "content": extract(16, 20), "depends_on": []},
        {"id": "e", "content": "Write the report.", "depends_on": ["b", "d"]},
    ]
    merged, notes = merged_ranges(specs, batch_size=50)
    assert [s["content"] for s in merged] == [extract(1, 10), specs[2]["content"], extract(16, 20), "Write the report."]
    assert merged[-1]["depends_on"] == ["a", "d"] and len(notes) == 1
    assert merged_ranges(specs[:2], batch_size=5)[0] == specs[:2]  # 10 items do not fit a batch of 5
    assert merged_ranges(specs[:2], batch_size=50, min_tasks=2)[0] == specs[:2]  # room for two at once
