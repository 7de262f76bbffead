"""The incremental queue index equals a from-scratch computation, whatever the writes and their batching."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replangraph.queue.index import QueueIndex, TaskQueue, apply_writes, index_of, sort_key
from replangraph.queue.tasks import RESET, effective_dependencies, new_task, ready_tasks, skip_dependents

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
        waits = set(task["depends_on"])
        for dep in task["depends_on"]:
            if dep not in own:
                waits |= descendants(dep) - {task["id"]}
        return all(d in tasks and tasks[d]["status"] == "completed" for d in waits)

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
        kind = draw(st.sampled_from(["status", "status", "status", "split", "remove", "deps", "flags", "reset"]))
        target = draw(st.sampled_from(known))
        if kind == "status":
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
