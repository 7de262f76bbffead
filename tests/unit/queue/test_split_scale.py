"""Split-heavy and failure-heavy queues: the incremental index still equals a full rebuild, a write to one
child of a split looks at none of its siblings, and the plan message and the replanner's settle step read
the same as their whole-queue definitions."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_queue_index import naive_ready

from replangraph.nodes.planning.replanner import Replanner
from replangraph.queue.index import CANDIDATE, QueueIndex, TaskQueue, apply_writes, sort_key
from replangraph.queue.tasks import (
    FALLBACK,
    PLAN_MESSAGE_TASKS,
    SHOWN_FIRST,
    STATUSES,
    new_task,
    plan_item,
    plan_markdown,
    ready_tasks,
    skip_dependents,
)

SETTLE = ["completed", "completed", "failed", "skipped"]


def child(parent: dict, k: int, origin: str = "dynamic") -> dict:
    """The ``k``-th child a split of ``parent`` queues (as `split_task` makes it: it depends on its parent)."""
    task_id = f"{parent['id']}_dyn_{k}"
    return new_task(
        task_id,
        f"part {k} of {parent['id']}",
        position=[*parent["position"], k],
        depends_on=[parent["id"]],
        parent_id=parent["id"],
        depth=parent.get("depth", 0) + 1,
        origin=origin,
    )


@st.composite
def split_heavy(draw, failing: bool = False):
    """A few planned tasks (later ones waiting on earlier ones), then splits of up to 30 children (nested
    too), writes that run and settle batches of them, remove some (as a replan does) and flag replans.
    ``failing``: most children fail, and what waits on them is skipped as the replanner's settle step does."""
    queue = TaskQueue()
    tops = draw(st.integers(1, 4))
    plan = {
        f"t{i}": new_task(
            f"t{i}", f"step {i}", position=[i], depends_on=[f"t{i - 1}"] if i and draw(st.integers(0, 3)) else []
        )
        for i in range(tops)
    }
    writes = [plan]
    queue = apply_writes(queue, [plan])
    for _ in range(draw(st.integers(1, 20))):
        kind = draw(st.sampled_from(["split", "split", "run", "settle", "settle", "finish", "remove", "flag"]))
        ids = sorted(queue, key=lambda t: sort_key(queue[t]))
        if not ids:
            break
        target = queue[draw(st.sampled_from(ids))]
        if kind == "split" and target["depth"] < 3:
            taken = sum(1 for t in queue.values() if t.get("parent_id") == target["id"])
            origin = draw(st.sampled_from(["dynamic"] * 5 + [CANDIDATE]))
            size = draw(st.one_of(st.integers(1, 4), st.integers(5, 30)))
            created = {c["id"]: c for c in (child(target, taken + k, origin) for k in range(size))}
            write = {target["id"]: {"status": draw(st.sampled_from(["completed", "in_progress"]))}, **created}
        elif kind == "finish":  # a split's last open children settle: what waits on its parent may start
            parents = sorted({queue[t]["parent_id"] for t in ids if queue[t]["parent_id"]}) or [target["id"]]
            parent = draw(st.sampled_from(parents))
            open_children = [t for t in ids if queue[t]["parent_id"] == parent and queue[t]["status"] == "pending"]
            write = {t: {"status": draw(st.sampled_from(SETTLE))} for t in open_children}
        elif kind in ("run", "settle"):
            children = [t for t in ids if queue[t]["parent_id"]]
            pool = children if children and draw(st.integers(0, 3)) else ids  # mostly the splits' work
            batch = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=12, unique=True))
            weights = ["failed"] * 3 + SETTLE if failing else SETTLE
            statuses = ["in_progress"] if kind == "run" else weights
            write = {t: {"status": draw(st.sampled_from(statuses))} for t in batch}
        elif kind == "remove":
            write = dict.fromkeys(draw(st.lists(st.sampled_from(ids), max_size=4, unique=True)))
        else:
            write = {target["id"]: {"replan_request": {"trigger": "failure", "reason": "r"}, "model_calls": 2}}
        writes.append(write)
        queue = apply_writes(queue, [write])
        if failing and kind == "settle":  # what the replanner's settle step writes for each failure
            for task_id in [t for t in write if t in queue and queue[t]["status"] == "failed"]:
                skipped = skip_dependents(queue, task_id)
                writes.append(skipped)
                queue = apply_writes(queue, [skipped])
    if draw(st.booleans()):  # a single-agent fallback, as the fallback feature queues it
        fallback = new_task(FALLBACK, "finish alone", position=[99], origin=FALLBACK)
        writes.append({FALLBACK: {**fallback, "status": draw(st.sampled_from(STATUSES))}})
    return writes


def naive_ready_held(tasks: dict) -> list[str]:
    """`naive_ready`, less the work a candidate handed off (held until its parent keeps a result)."""
    return [t for t in naive_ready(tasks) if tasks.get(tasks[t]["parent_id"] or "", {}).get("origin") != CANDIDATE]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(split_heavy(), split_heavy(failing=True)))
def test_incremental_index_equals_a_full_rebuild_on_split_and_failure_heavy_queues(writes):
    queue = TaskQueue()
    for write in writes:
        queue = apply_writes(queue, [write])
        assert queue.index == QueueIndex.build(queue)
        assert [t["id"] for t in ready_tasks(queue)] == naive_ready_held(queue)
    assert apply_writes({}, writes).index == queue.index  # in one batch, too


def test_a_write_to_one_child_looks_at_no_sibling():
    parent = {**new_task("1", "all of it", position=[0]), "status": "completed"}
    after = new_task("2", "use it", position=[1], depends_on=["1"])
    children = {c["id"]: c for c in (child(parent, k) for k in range(500))}
    queue = apply_writes({}, [{"1": parent, "2": after, **children}])
    assert queue.index.affected(queue, ["1_dyn_7"]) == {"1_dyn_7", "2"}  # not the other 499
    queue = apply_writes(queue, [{"1_dyn_7": {"status": "completed"}}])
    assert queue.index == QueueIndex.build(queue) and len(ready_tasks(queue)) == 499


def whole_queue_plan_markdown(tasks: dict, asking: dict | None = None) -> str:
    """The plan message by its definition: sort the whole queue, list the first `PLAN_MESSAGE_TASKS` by
    `SHOWN_FIRST` (0.8.0's algorithm)."""

    def held(task):
        while task:
            if task.get("origin") == CANDIDATE:
                return True
            task = tasks.get(task.get("parent_id") or "")
        return False

    ordered = sorted(tasks.values(), key=sort_key)
    solo = next((t for t in ordered if t.get("origin") == FALLBACK), None)
    queue = [t for t in ordered if t.get("origin") != FALLBACK and not held(t)]
    everything = [*queue, *([solo] if solo else [])]
    picked = {t["id"] for t in sorted(everything, key=lambda t: SHOWN_FIRST[t["status"]])[:PLAN_MESSAGE_TASKS]}
    lines = [f"**Plan**: {sum(t['status'] == 'completed' for t in queue)} of {len(queue)} done", ""]
    for task in [t for t in everything if t["id"] in picked]:
        lines.append(plan_item(tasks, task, task is solo, asking))  # the same item: this checks the selection
    left = [t for t in everything if t["id"] not in picked]
    if left:
        counts = {s: sum(t["status"] == s for t in left) for s in STATUSES}
        described = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items() if n)
        lines.append(f"- *… and {len(left)} more ({described})*")
    return "\n".join(lines)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(split_heavy(), split_heavy(failing=True)), st.data())
def test_the_plan_message_reads_as_its_whole_queue_definition(writes, data):
    queue = TaskQueue()
    for write in writes:
        queue = apply_writes(queue, [write])
        running = [t for t in queue if queue[t]["status"] == "in_progress"]
        asking = (
            {t: f"which {t}?" for t in data.draw(st.lists(st.sampled_from(running), max_size=2))} if running else {}
        )
        assert plan_markdown(queue, asking) == whole_queue_plan_markdown(dict(queue), asking)


def rebuilt_settle(tasks: dict, flagged: list[dict], why: str) -> dict:
    """The settle step by its definition: the whole queue copied and its index rebuilt for every flagged task."""
    updates = {
        t["id"]: {"status": "failed", "error": f"the rest of its work was not replanned: {why}"}
        for t in flagged
        if t["status"] == "completed"
    }
    for task in flagged:
        view = {k: {**v, **updates.get(k, {})} for k, v in tasks.items()}
        updates.update(skip_dependents(view, task["id"]))
    return {k: u for k, u in updates.items() if tasks.get(k, {}).get("origin") != FALLBACK}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(split_heavy(failing=True), st.data())
def test_the_replanner_settles_many_failed_children_as_its_definition_does(writes, data):
    queue = apply_writes({}, writes)
    candidates = sorted(t for t in queue if queue[t]["status"] in ("failed", "completed"))
    if not candidates:
        return
    flagged = [queue[t] for t in data.draw(st.lists(st.sampled_from(candidates), min_size=1, unique=True))]
    assert Replanner.settle(None, queue, flagged, "no replans left") == rebuilt_settle(
        dict(queue), flagged, "no replans left"
    )
