"""The incremental queue index equals a from-scratch computation, whatever the writes and their batching."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replangraph.queue.index import QueueIndex, TaskQueue, apply_writes, index_of, sort_key
from replangraph.queue.tasks import (
    RESET,
    dependency_results,
    effective_dependencies,
    is_ready,
    new_task,
    ready_tasks,
    skip_dependents,
)

STATUSES = ["pending", "in_progress", "completed", "failed", "skipped"]


def naive_ready(tasks: dict) -> list[str]:
    """Readiness by the definition, scanning the whole queue (the pre-index algorithm)."""

    def ancestors(task_id):
        chain, seen, parent = [], {task_id}, tasks[task_id].get("parent_id")
        while parent and parent in tasks and parent not in seen:
            chain.append(parent)
            seen.add(parent)
            parent = tasks[parent].get("parent_id")
        return chain

    def descendants(task_id):
        found, frontier = set(), [task_id]
        while frontier:
            current = frontier.pop()
            for t in tasks.values():
                if t.get("parent_id") == current and t["id"] not in found and t["id"] != task_id:
                    found.add(t["id"])
                    frontier.append(t["id"])
        return found

    def ready(task):
        if task["status"] != "pending":
            return False
        own = set(ancestors(task["id"]))
        direct = set(task["depends_on"])
        handed_off = set()
        for dep in task["depends_on"]:
            if dep not in own:
                handed_off |= descendants(dep) - {task["id"]} - direct
        # Dependencies must complete; the work they handed off must only be settled (it may have failed).
        return all(d in tasks and tasks[d]["status"] == "completed" for d in direct) and all(
            tasks[d]["status"] in ("completed", "failed", "skipped") for d in handed_off
        )

    return [t["id"] for t in sorted(tasks.values(), key=sort_key) if ready(t)]


@st.composite
def plans(draw):
    n = draw(st.integers(1, 8))
    writes = {}
    for i in range(n):
        deps = draw(st.lists(st.sampled_from([f"t{j}" for j in range(i)] + ["ghost"]), max_size=3)) if i else []
        writes[f"t{i}"] = new_task(f"t{i}", f"task {i}", position=[i], depends_on=deps)
    return writes


@st.composite
def write_sequences(draw):
    plan = draw(plans())
    known = list(plan)
    writes = [plan]
    for step in range(draw(st.integers(1, 25))):
        kinds = ["status", "status", "status", "split", "remove", "deps", "flags", "reset", "settle", "replace"]
        kind = draw(st.sampled_from(kinds))
        target = draw(st.sampled_from(known))
        if kind == "settle":  # handed-off work fails or is skipped (not completed)
            children = [t for t in known if "_d" in t] or [target]
            writes.append({draw(st.sampled_from(children)): {"status": draw(st.sampled_from(["failed", "skipped"]))}})
        elif kind == "replace":  # what the replanner writes: pending work removed, new work on what completed
            doomed = draw(st.lists(st.sampled_from(known), max_size=3, unique=True))
            new_id = f"r{step}"
            deps = draw(st.lists(st.sampled_from(known), max_size=2, unique=True))
            added = new_task(new_id, "new", position=[10 + step], depends_on=deps)
            writes.append({**dict.fromkeys(doomed), new_id: added})
            known.append(new_id)
        elif kind == "status":
            writes.append({target: {"status": draw(st.sampled_from(STATUSES))}})
        elif kind == "split":
            parent_position = [draw(st.integers(0, 9))]
            children = {}
            for k in range(draw(st.integers(1, 3))):
                child = f"{target}_d{step}_{k}"
                children[child] = new_task(
                    child,
                    "split",
                    position=[*parent_position, k],
                    parent_id=target,
                    depends_on=draw(st.lists(st.sampled_from(known), max_size=1)),
                    depth=1,
                    origin="dynamic",
                )
                known.append(child)
            writes.append({target: {"status": "completed"}, **children})
        elif kind == "remove":
            writes.append({target: None})
        elif kind == "deps":
            writes.append({target: {"depends_on": draw(st.lists(st.sampled_from(known), max_size=2))}})
        elif kind == "flags":
            writes.append(
                {
                    target: {
                        "model_calls": draw(st.integers(0, 5)),
                        "replan_request": draw(st.sampled_from([None, {"trigger": "tool", "reason": "r"}])),
                    }
                }
            )
        else:
            writes.append({RESET: True, **draw(plans())})
            known = sorted({*known, *writes[-1]} - {RESET})
    return writes


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(write_sequences())
def test_incremental_index_equals_a_fresh_one_after_every_write(writes):
    queue = TaskQueue()
    for write in writes:
        queue = apply_writes(queue, [write])
        assert queue.index == QueueIndex.build(queue)
        assert [t["id"] for t in ready_tasks(queue)] == naive_ready(queue)
        assert queue.index.model_calls == sum(t.get("model_calls", 0) for t in queue.values())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(write_sequences(), st.data())
def test_reducer_is_batching_invariant(writes, data):
    cut = data.draw(st.integers(0, len(writes)))
    at_once = apply_writes({}, writes)
    in_two = apply_writes(apply_writes({}, writes[:cut]), writes[cut:])
    one_by_one = TaskQueue()
    for write in writes:
        one_by_one = apply_writes(one_by_one, [write])
    assert dict(at_once) == dict(in_two) == dict(one_by_one)
    assert at_once.index == in_two.index == one_by_one.index == QueueIndex.build(at_once)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(write_sequences(), st.data())
def test_skipping_dependents_matches_a_whole_queue_scan(writes, data):
    queue = apply_writes({}, writes)
    failed = data.draw(st.sampled_from(sorted(queue))) if queue else None
    if failed is None:
        return
    plain = dict(queue)  # no index: built from scratch
    expected = {}
    blocked, changed = {failed}, True
    while changed:  # the definition: pending tasks that wait on anything blocked, to a fixpoint
        changed = False
        for task in sorted(plain.values(), key=sort_key):
            if task["status"] != "pending" or task["id"] in expected:
                continue
            hit = blocked.intersection(effective_dependencies(plain, task))
            if hit:
                expected[task["id"]] = {"status": "skipped", "error": f"dependency {sorted(hit)[0]} did not complete"}
                blocked.add(task["id"])
                changed = True
    assert skip_dependents(queue, failed) == expected


def test_a_plain_dict_from_a_checkpoint_gets_its_index_built():
    tasks = {"a": new_task("a", "x", position=[0]), "b": new_task("b", "y", position=[1], depends_on=["a"])}
    assert [t for _, t in index_of(tasks).ready] == ["a"]
    queue = apply_writes(tasks, [{"a": {"status": "completed"}}])
    assert isinstance(queue, TaskQueue) and [t for _, t in queue.index.ready] == ["b"]
    assert tasks["a"]["status"] == "pending"  # the old value is not changed


def test_copies_keep_the_index_and_pickles_are_plain_dicts():
    import copy
    import pickle

    queue = apply_writes({}, [{"a": new_task("a", "x", position=[0])}])
    assert copy.copy(queue).index is queue.index
    restored = pickle.loads(pickle.dumps(queue))
    assert type(restored) is dict and restored == dict(queue)


def handed_off_then_failed(failure: str) -> TaskQueue:
    """``1`` completed and handed part of its work to ``1_dyn_0``, which then ended ``failure``;
    ``2`` depends on ``1``."""
    plan = {
        "1": new_task("1", "collect", position=[0]),
        "2": new_task("2", "report", position=[1], depends_on=["1"]),
    }
    child = new_task("1_dyn_0", "the rest", position=[0, 0], parent_id="1", depth=1, origin="dynamic")
    return apply_writes({}, [plan, {"1": {"status": "completed"}, "1_dyn_0": child}, {"1_dyn_0": {"status": failure}}])


@pytest.mark.parametrize("failure", ["failed", "skipped"])
def test_a_failed_or_skipped_handoff_no_longer_holds_back_its_parent_s_dependents(failure):
    queue = handed_off_then_failed(failure)
    assert [t["id"] for t in ready_tasks(queue)] == ["2"]
    assert is_ready(queue, queue["2"]) and is_ready(dict(queue), queue["2"])  # a checkpoint's plain dict too
    assert queue.index == QueueIndex.build(queue)
    assert [t["id"] for t in dependency_results(queue, queue["2"])] == ["1"]  # no failed result fed in


def test_a_running_or_pending_handoff_still_holds_them_back_and_a_direct_failure_blocks():
    queue = handed_off_then_failed("in_progress")
    assert ready_tasks(queue) == []
    queue = apply_writes(queue, [{"1_dyn_0": {"status": "pending"}}])
    assert [t["id"] for t in ready_tasks(queue)] == ["1_dyn_0"]
    queue = apply_writes(queue, [{"1_dyn_0": {"status": "completed"}, "1": {"status": "failed"}}])
    assert ready_tasks(queue) == []  # a dependency itself must complete


def test_work_replanned_onto_a_parent_whose_handoff_failed_runs():
    queue = handed_off_then_failed("failed")
    replanned = new_task("2_r1", "report what was found", position=[2], depends_on=["1"], plan_id="2")
    queue = apply_writes(queue, [{"2": None, "2_r1": replanned}])  # the replanner replaces the pending task
    assert [t["id"] for t in ready_tasks(queue)] == ["2_r1"]
    assert queue.index == QueueIndex.build(queue)


def test_a_split_child_whose_parent_left_the_queue_does_not_wait_for_its_siblings():
    """Found by the property test above: with parent ``t0`` gone, ``handed_off`` counted the siblings as work
    ``t0`` handed off while `QueueIndex.affected` did not, so skipping disagreed with the definition."""
    first = {**new_task("t0_d21_0", "split", position=[0, 0]), "parent_id": "t0"}
    second = {**new_task("t0_d21_1", "split", position=[0, 1], depends_on=["t0"]), "parent_id": "t0"}
    queue = apply_writes({}, [{"t0_d21_0": first, "t0_d21_1": second}])
    assert effective_dependencies(queue, queue["t0_d21_1"]) == ["t0"]
    assert skip_dependents(queue, "t0_d21_0") == {}
    assert queue.index == QueueIndex.build(dict(queue))
