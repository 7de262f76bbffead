"""The pure queue: readiness, dependencies, cycles, skips, insertion order, summaries, reducers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replangraph.queue.index import apply_writes
from replangraph.queue.plans import find_cycle, split_task, tasks_from_plan, validate_plan
from replangraph.queue.tasks import (
    PLAN_MESSAGE_TASKS,
    RESET,
    QueueError,
    dependency_results,
    new_task,
    ordered,
    plan_markdown,
    plan_summary,
    ready_tasks,
    skip_dependents,
    startable_tasks,
)
from replangraph.state import replace_by_key

AGENTS = ["default", "browser"]


def queue(*specs):
    """Tasks from (id, depends_on, status) triples, positioned in the given order."""
    tasks = {}
    for i, (task_id, deps, status) in enumerate(specs):
        tasks[task_id] = {**new_task(task_id, f"do {task_id}", position=[i], depends_on=deps), "status": status}
    return tasks


def split(tasks, parent, n, **caps):
    specs = [{"content": f"part {i}"} for i in range(n)]
    limits = {"max_tasks": 100, "max_split_depth": 3, **caps}
    return {**tasks, **split_task(tasks, parent, specs, agent_types=AGENTS, **limits)}


# --------------------------------------------------------------------------- readiness


def test_the_first_ready_task_is_the_first_pending_with_completed_dependencies_in_queue_order():
    tasks = queue(("a", [], "completed"), ("b", ["c"], "pending"), ("c", [], "pending"), ("d", ["a"], "pending"))
    assert [t["id"] for t in ready_tasks(tasks)] == ["c", "d"]
    assert ready_tasks(tasks, 1)[0]["id"] == "c"


def test_queue_order_comes_from_position_not_insertion():
    tasks = queue(("x", [], "pending"), ("y", [], "pending"))
    tasks["x"]["position"] = [5]
    assert [t["id"] for t in ordered(tasks)] == ["y", "x"]
    assert ready_tasks(tasks, 1)[0]["id"] == "y"


def test_running_finished_and_blocked_tasks_are_not_ready():
    tasks = queue(("a", [], "in_progress"), ("b", [], "failed"), ("c", ["b"], "pending"), ("d", ["zz"], "pending"))
    assert ready_tasks(tasks) == []
    assert ready_tasks({}, 1) == []


def test_dependents_of_a_split_task_wait_for_the_handed_off_work():
    tasks = queue(("1", [], "completed"), ("2", ["1"], "pending"))
    tasks = split(tasks, "1", 2)
    assert [t["id"] for t in ready_tasks(tasks)] == ["1_dyn_0", "1_dyn_1"]  # siblings do not wait for each other
    tasks["1_dyn_0"]["status"] = tasks["1_dyn_1"]["status"] = "completed"
    tasks["1_dyn_0"]["result"], tasks["1"]["result"] = "r0", "r1"
    assert [t["id"] for t in ready_tasks(tasks)] == ["2"]
    assert [t["id"] for t in dependency_results(tasks, tasks["2"])] == ["1", "1_dyn_0", "1_dyn_1"]


# --------------------------------------------------------------------------- plans


def spec(task_id, deps=(), content="work", agent_type="default"):
    return {"id": task_id, "content": content, "depends_on": list(deps), "agent_type": agent_type}


def test_valid_plan_passes_and_becomes_pending_tasks():
    specs = [spec("a"), spec("b", ["a"])]
    validate_plan(specs, agent_types=AGENTS)
    tasks = tasks_from_plan(specs)
    assert [t["id"] for t in ordered(tasks)] == ["a", "b"]
    assert all(t["status"] == "pending" and t["origin"] == "planner" for t in tasks.values())


@pytest.mark.parametrize(
    "specs, message",
    [
        ([], "no tasks"),
        ([spec("a"), spec("a")], "duplicate task id 'a'"),
        ([spec("")], "empty id"),
        ([spec("a", content=" ")], "empty content"),
        ([spec("a", ["b"])], "unknown task 'b'"),
        ([spec("a", ["a"])], "depends on itself"),
        ([spec("a", ["b"]), spec("b", ["a"])], "dependency cycle: a -> b -> a"),
        ([spec("a", agent_type="painter")], "unknown agent_type 'painter'"),
    ],
)
def test_invalid_plans_are_rejected_with_a_clear_error(specs, message):
    with pytest.raises(QueueError, match=message):
        validate_plan(specs, agent_types=AGENTS)


def test_plan_checks_existing_tasks_and_max_tasks():
    existing = queue(("done", [], "completed"))
    validate_plan([spec("n", ["done"])], agent_types=AGENTS, existing=existing)
    with pytest.raises(QueueError, match="already used"):
        validate_plan([spec("done")], agent_types=AGENTS, existing=existing)
    with pytest.raises(QueueError, match="limit is 2"):
        validate_plan([spec("x"), spec("y")], agent_types=AGENTS, existing=existing, max_tasks=2)


def test_one_error_lists_every_problem():
    with pytest.raises(QueueError) as caught:
        validate_plan([spec("a", ["zz"]), spec("a", content="")], agent_types=AGENTS)
    assert "unknown task 'zz'" in str(caught.value) and "duplicate task id 'a'" in str(caught.value)


def test_find_cycle():
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]


@given(st.lists(st.lists(st.integers(0, 30), max_size=4), min_size=1, max_size=15), st.data())
def test_dags_are_accepted_and_a_back_edge_is_a_cycle(deps_lists, data):
    edges = {f"t{i}": sorted({f"t{d % i}" for d in deps}) if i else [] for i, deps in enumerate(deps_lists)}
    validate_plan([spec(k, v) for k, v in edges.items()], agent_types=AGENTS)
    assert find_cycle(edges) is None
    if len(edges) > 1:
        last = f"t{len(edges) - 1}"
        edges["t0"] = [last]
        edges[last] = sorted({*edges[last], "t0"})
        assert find_cycle(edges) is not None


# --------------------------------------------------------------------------- failure


def test_failure_skips_dependents_transitively_and_nothing_else():
    tasks = queue(
        ("a", [], "failed"),
        ("b", ["a"], "pending"),
        ("c", ["b"], "pending"),
        ("d", ["a", "x"], "pending"),
        ("x", [], "pending"),
        ("y", [], "completed"),
    )
    updates = skip_dependents(tasks, "a")
    assert sorted(updates) == ["b", "c", "d"]
    assert updates["b"] == {"status": "skipped", "error": "dependency a did not complete"}
    assert updates["c"]["error"] == "dependency b did not complete"


# --------------------------------------------------------------------------- splitting


def test_dynamic_tasks_are_inserted_after_the_parent_and_earlier_siblings():
    tasks = queue(("1", [], "in_progress"), ("2", [], "pending"))
    tasks["1"].update(agent_type="browser", metadata={"site": "shop"})
    tasks = split(tasks, "1", 2)
    tasks = split(tasks, "1_dyn_0", 2)
    tasks = split(tasks, "1", 1)  # numbering continues after earlier children
    order = [t["id"] for t in ordered(tasks)]
    assert order == ["1", "1_dyn_0", "1_dyn_0_dyn_0", "1_dyn_0_dyn_1", "1_dyn_1", "1_dyn_2", "2"]
    child = tasks["1_dyn_0_dyn_1"]
    assert child["depends_on"] == ["1_dyn_0"] and child["parent_id"] == "1_dyn_0"
    assert child["agent_type"] == "browser" and child["metadata"] == {"site": "shop"}
    assert child["depth"] == 2 and child["origin"] == "dynamic"


def test_split_respects_caps():
    tasks = queue(("1", [], "in_progress"))
    with pytest.raises(QueueError, match="at most 3 tasks"):
        split(tasks, "1", 3, max_tasks=3)
    deep = split(split(tasks, "1", 1), "1_dyn_0", 1)
    with pytest.raises(QueueError, match="max_split_depth is 2"):
        split(deep, "1_dyn_0_dyn_0", 1, max_split_depth=2)
    with pytest.raises(QueueError, match="unknown agent_type 'painter'"):
        split_task(
            tasks, "1", [{"content": "x", "agent_type": "painter"}], agent_types=AGENTS, max_tasks=9, max_split_depth=3
        )


# --------------------------------------------------------------------------- summary and reducers


def test_plan_summary_format():
    tasks = queue(
        ("a", [], "completed"),
        ("b", [], "in_progress"),
        ("c", [], "pending"),
        ("d", [], "failed"),
        ("e", [], "skipped"),
    )
    tasks["a"]["result"] = "found " + "x" * 200
    tasks["d"]["error"] = "timeout"
    tasks["e"]["error"] = "dependency d did not complete"
    lines = plan_summary(tasks).splitlines()
    assert lines[0].startswith("[X] a: do a (Result: found xxx") and lines[0].endswith("…)")
    assert lines[1:] == [
        "[>] b: do b",
        "[ ] c: do c",
        "[!] d: do d (Error: timeout)",
        "[-] e: do e (Error: dependency d did not complete)",
    ]


def test_a_write_merges_fields_deletes_and_resets_without_mutating():
    current = queue(("a", [], "pending"), ("b", [], "pending"))
    snapshot = {k: dict(v) for k, v in current.items()}
    merged = apply_writes(current, [{"a": {"status": "completed", "result": "r"}, "b": None}])
    assert merged["a"]["status"] == "completed" and merged["a"]["content"] == "do a" and "b" not in merged
    assert current == snapshot
    assert list(apply_writes(current, [{RESET: True, "n": new_task("n", "x", position=[0])}])) == ["n"]
    assert apply_writes(current, [None]) == current


def test_concurrent_updates_for_different_tasks_merge_in_any_order():
    current = queue(("a", [], "in_progress"), ("b", [], "in_progress"))
    left, right = {"a": {"status": "completed"}}, {"b": {"status": "failed"}}
    assert apply_writes(current, [left, right]) == apply_writes(current, [right, left])


def test_replace_by_key_replaces_whole_values():
    assert replace_by_key({"a": [1, 2]}, {"a": [3], "b": [4]}) == {"a": [3], "b": [4]}
    assert replace_by_key({"a": [1]}, {"a": None}) == {}


def test_the_plan_message_lists_a_long_queue_running_and_coming_tasks_first_and_counts_the_rest():
    n = 3 * PLAN_MESSAGE_TASKS
    tasks = queue(*[(f"t{i}", [], "completed" if i < 2 * PLAN_MESSAGE_TASKS else "pending") for i in range(n)])
    asking = f"t{2 * PLAN_MESSAGE_TASKS + 1}"
    tasks[asking]["status"] = "in_progress"
    text = plan_markdown(tasks, {asking: "Which one?"})
    lines = text.splitlines()
    assert lines[0] == f"**Plan**: {2 * PLAN_MESSAGE_TASKS} of {n} done"
    assert len(lines) == 2 + PLAN_MESSAGE_TASKS + 1  # bounded: it is checkpointed whole at every update
    assert f"- [ ] {asking}: do {asking} — *waiting for your answer:* Which one?" in lines
    assert lines[-1] == f"- *… and {n - PLAN_MESSAGE_TASKS} more ({n - PLAN_MESSAGE_TASKS} completed)*"
    short = plan_markdown(queue(("a", [], "failed"), ("b", ["a"], "skipped")))
    assert short == "**Plan**: 0 of 2 done\n\n- [ ] a: do a — *failed*\n- [ ] b: do b — *skipped*"


def test_identical_follow_ups_start_one_after_another_and_a_plan_s_identical_tasks_at_once():
    """ "The next 5 products" three times: each waits for the one before, so it sees that one's result; a plan's
    identical tasks are the planner's and all start; different follow-ups all start."""
    tasks = {**queue(("1", [], "completed"), ("2", [], "pending"), ("3", [], "pending"))}
    tasks["3"]["content"] = tasks["2"]["content"]  # a plan's identical tasks
    tasks = {
        **tasks,
        **split_task(
            tasks,
            "1",
            [{"content": "the next 5"}] * 3 + [{"content": "other"}],
            agent_types=AGENTS,
            max_tasks=100,
            max_split_depth=3,
        ),
    }
    ids = [t["id"] for t in startable_tasks(tasks, 10)]
    assert ids == ["1_dyn_0", "1_dyn_3", "2", "3"]  # queue order; the second and third "next 5" wait
    assert [t["id"] for t in startable_tasks(tasks, 1)] == ["1_dyn_0"]
    running = apply_writes(tasks, [{"1_dyn_0": {"status": "in_progress"}}])
    assert [t["id"] for t in startable_tasks(running, 10)] == ["1_dyn_3", "2", "3"]  # still one at a time
    done = apply_writes(running, [{"1_dyn_0": {"status": "failed"}}])
    assert [t["id"] for t in startable_tasks(done, 10)][0] == "1_dyn_1"  # a failure holds back nothing
