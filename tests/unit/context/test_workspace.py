"""The results workspace: whole results and kept outputs survive a restart, in the state or in a store."""

from __future__ import annotations

import sqlite3

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from scripting import make_model, plan_of, result_text, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.context.results import RESULT_PREVIEW_CHARS, full_result, result_fields
from replangraph.context.workspace import (
    Workspace,
    apply_effects,
    entry_update,
    open_workspace,
    output_slot,
    reading_pending,
)
from replangraph.queue.tasks import new_task
from replangraph.testing import tool_call

LONG = "FIRST-LINE " + "detail " * 1_000 + "MIDDLE-LINE " + "detail " * 1_000 + "LAST-LINE"
PLAN = plan_of({"id": "1", "content": "collect"}, {"id": "2", "content": "use it", "depends_on": ["1"]})


def work(seen: list[str]):
    def respond(request):
        if subtask_of(request) == "collect":
            return LONG
        seen.append(request.prompt)
        whole = all(line in request.prompt for line in ("FIRST-LINE", "MIDDLE-LINE", "LAST-LINE"))
        return "used: " + ("LAST-LINE" if whole else "only a preview")

    return respond


def test_a_long_result_is_kept_whole_in_the_state_and_shown_whole_to_its_dependents():
    seen: list[str] = []
    final = build_graph(make_model(PLAN, work(seen))).invoke({"messages": [("user", "go")]})
    task = final["tasks"]["1"]
    assert len(task["result"]) <= RESULT_PREVIEW_CHARS and 'read_output(output_id="1/result"' in task["result"]
    assert task["result_ref"] == {"key": "plan:1:step:1:result:v1", "version": 1, "chars": len(LONG)}
    assert result_text(final, "1") == LONG
    assert final["tasks"]["2"]["result"] == "used: LAST-LINE" and "MIDDLE-LINE" in seen[0]
    assert "MIDDLE-LINE" not in task["result"] and "MIDDLE-LINE" in final["final_answer"]  # the finalizer reads it


def test_results_survive_a_restart_on_sqlite_without_a_store(tmp_path):
    path = tmp_path / "run.db"
    run = {"configurable": {"thread_id": "job"}}
    seen: list[str] = []
    with sqlite3.connect(path, check_same_thread=False) as conn:
        graph = build_graph(make_model(PLAN, work(seen)), checkpointer=SqliteSaver(conn))
        for update in graph.stream({"messages": [("user", "go")]}, run, stream_mode="updates"):
            if any((u or {}).get("tasks", {}).get("1", {}).get("status") == "completed" for u in update.values()):
                break  # the process dies right after subtask 1 finished

    with sqlite3.connect(path, check_same_thread=False) as conn:  # a new process: nothing in memory
        graph = build_graph(make_model(PLAN, work(seen)), checkpointer=SqliteSaver(conn))
        assert result_text(graph.get_state(run).values, "1") == LONG
        final = graph.invoke(None, run)
    assert final["tasks"]["2"]["result"] == "used: LAST-LINE"
    assert result_text(final, "1") == LONG


def test_results_live_in_a_sqlite_store_when_the_graph_has_one(tmp_path):
    path = tmp_path / "run.db"
    run = {"configurable": {"thread_id": "job"}}
    # The saver and the store each get their own connection: they open transactions independently.
    with (
        sqlite3.connect(path, check_same_thread=False) as conn,
        sqlite3.connect(tmp_path / "store.db", check_same_thread=False, isolation_level=None) as store_conn,
    ):
        store = SqliteStore(store_conn)
        store.setup()
        final = build_graph(make_model(PLAN, work([])), checkpointer=SqliteSaver(conn), store=store).invoke(
            {"messages": [("user", "go")]}, run
        )
        assert not final.get("workspace") and "LAST-LINE" in final["final_answer"]
    with sqlite3.connect(tmp_path / "store.db", check_same_thread=False, isolation_level=None) as conn:
        store = SqliteStore(conn)
        item = store.get(("replangraph", "job"), "plan:1:step:1:result")
        assert item.value["content"] == LONG and item.value["version"] == 1
        assert store.get(("replangraph", "job"), "plan:1:step:1:result:v1").value["content"] == LONG


def test_each_run_of_a_step_is_a_new_version_and_none_is_lost():
    task = new_task("7", "x", position=[0], plan_id="2")
    store = InMemoryStore()
    first, writes = result_fields(task, "first answer")
    apply_effects(writes, store)
    with open_workspace(None) as workspace:
        workspace.store, workspace.namespace = store, ("replangraph", "default")
        second, writes = result_fields({**task, "result_ref": {"version": 0}}, "second answer")  # a replayed run
        assert second["result_ref"]["version"] == 2
    apply_effects(writes, store)
    with open_workspace(None) as workspace:
        workspace.store, workspace.namespace = store, ("replangraph", "default")
        assert full_result({**task, **second}) == "second answer"
    assert store.get(("replangraph", "default"), "plan:2:step:7:result").value["content"] == "second answer"
    assert store.get(("replangraph", "default"), "plan:2:step:7:result:v1").value["content"] == "first answer"


def test_without_a_store_writes_stay_in_the_update_and_pending_reads_see_them():
    task = new_task("1", "x", position=[0])
    update = entry_update(output_slot(task, "new"), "NEW")
    with open_workspace({"plan:1:step:1": {":output:old": {"content": "OLD"}}}) as workspace:
        assert not workspace.has(output_slot(task, "new"))  # nothing is written before the node returns
        with reading_pending(update) as view:
            assert view.get(output_slot(task, "old")) == "OLD" and view.has(output_slot(task, "new"))
            assert view.keys(task) == ["old", "new"]
    new = {"content": "NEW", "step": "plan:1:step:1"}
    assert apply_effects(update, None) == {"workspace": {"plan:1:step:1": {":output:new": new}}}
    names_only = Workspace({"plan:1:step:1": {":output:old": {}}})  # what a Send payload carries: keys, no text
    assert names_only.has(output_slot(task, "old")) and names_only.get(output_slot(task, "old")) is None


def test_task_ids_that_look_like_keys_keep_their_own_entries():
    odd, plain = new_task("fetch:result", "x", position=[0]), new_task("fetch", "y", position=[1])
    store = InMemoryStore()
    apply_effects(entry_update(output_slot(odd, "call_1"), "ODD"), store)
    with open_workspace(None) as workspace:
        workspace.store, workspace.namespace = store, ("replangraph", "default")
        assert workspace.keys(odd) == ["call_1"] and workspace.keys(plain) == []
    with open_workspace({}), reading_pending(entry_update(output_slot(odd, "call_1"), "ODD")) as workspace:
        assert workspace.keys(odd) == ["call_1"] and workspace.keys(plain) == []


def test_a_two_megabyte_output_is_checkpointed_twice(tmp_path):
    def dump() -> str:
        """Dump everything."""
        return "X" * 2_000_000

    def respond(request):
        return "done" if request.tool_results else tool_call("dump", {})

    plan = plan_of(*({"id": str(i), "content": f"step {i}"} for i in range(6)))
    path = tmp_path / "run.db"
    with sqlite3.connect(path, check_same_thread=False) as conn:
        one_at_a_time = AgentConfig(max_concurrency=1)  # one tools update, so one workspace write, per output
        graph = build_graph(make_model(plan, respond), [dump], config=one_at_a_time, checkpointer=SqliteSaver(conn))
        final = graph.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "t"}})
        assert all(t["status"] == "completed" for t in final["tasks"].values())
        big = conn.execute("SELECT channel FROM writes WHERE length(value) > 1000000").fetchall()
        checkpoints = conn.execute("SELECT sum(length(checkpoint)) FROM checkpoints").fetchone()[0]
    # Each 2 MB output is written twice: as its call's result when the call returns (so a crash keeps it) and
    # as a kept output with the tools node's update; no checkpoint copies it (it was ~45 MB for one).
    assert sorted(channel for (channel,) in big) == ["__return__"] * 6 + ["workspace"] * 6
    assert checkpoints < 2_000_000


def test_a_second_goal_on_the_same_thread_gets_its_own_plan_id_and_keeps_the_first_ones_results():
    from langgraph.checkpoint.memory import InMemorySaver

    def respond(request):
        return "answer for " + ("goal two" if "goal two" in request.prompt else "goal one")

    store, run = InMemoryStore(), {"configurable": {"thread_id": "t"}}
    graph = build_graph(
        make_model(plan_of({"id": "1", "content": "answer"}), respond), checkpointer=InMemorySaver(), store=store
    )
    graph.invoke({"messages": [("user", "goal one")]}, run)
    second = graph.invoke({"messages": [("user", "goal two")]}, run)
    assert second["tasks"]["1"]["plan_id"] == "2"
    assert store.get(("replangraph", "t"), "plan:1:step:1:result:v1").value["content"] == "answer for goal one"
    assert store.get(("replangraph", "t"), "plan:2:step:1:result:v1").value["content"] == "answer for goal two"
