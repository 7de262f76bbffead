"""A database that fails mid-run: with a durable checkpointer the run stops there, and a resume repeats no tool call.

Six independent subtasks, two at a time, each call ``fetch`` (a side effect, counted) once, then answer. Once
the first answer is written, every checkpoint write raises, as a full disk would. With LangGraph's ``"async"``
durability the run would go on calling tools it can no longer record, and a resume would call them again;
graphs built on a durable checkpointer default to ``"sync"``, which stops at the failed write.
"""

from __future__ import annotations

import sqlite3
from collections import Counter

import pytest
from full_disk import Disk
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from scripting import make_model, plan_of, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.builder import default_durability
from replangraph.durable import open_saver
from replangraph.testing import tool_call

ITEMS = [f"item {n}" for n in range(1, 7)]
THREAD = {"configurable": {"thread_id": "disk-full"}}


def build(checkpointer, store, fetched: Counter, fills: Disk | None = None):
    """The graph of this page: each item's subtask calls ``fetch`` then answers; item 1's answer fills ``fills``."""

    @tool
    def fetch(item: str) -> str:
        """Fetch one item (a side effect: counted)."""
        fetched[item] += 1
        return f"payload of {item}"

    def work(request):
        item = subtask_of(request).removeprefix("collect ")
        if request.last_result("fetch") is None:
            return tool_call("fetch", {"item": item})
        if item == "item 1" and fills is not None:
            fills.fill()
        return f"RESULT {item}: {request.last_result('fetch')}"

    plan = plan_of(*({"id": item.replace(" ", ""), "content": f"collect {item}"} for item in ITEMS))
    config = AgentConfig(max_concurrency=2, verify_results=False)
    return build_graph(make_model(plan, work), tools=[fetch], config=config, checkpointer=checkpointer, store=store)


def fail_then_resume(db: str, disk: Disk | None = None, **durability) -> tuple[int, Counter, dict]:
    """Run on ``db`` until ``disk`` fills (default: at item 1's answer; the run must raise), then resume on a
    healthy connection. ``(tool calls before the failure, calls per item in all, final state)``."""
    fetched: Counter = Counter()
    disk = disk or Disk()
    with open_saver(db) as (checkpointer, store):
        graph = build(disk.breaks(checkpointer), store, fetched, fills=disk if disk.room is None else None)
        with pytest.raises(sqlite3.OperationalError, match="disk is full"):
            graph.invoke({"messages": [("user", "collect the six items")]}, THREAD, **durability)
    before = sum(fetched.values())
    assert disk.refused > 0
    with open_saver(db) as (checkpointer, store):
        state = build(checkpointer, store, fetched).invoke(None, THREAD)
    return before, fetched, state


def test_a_failed_write_stops_the_run_and_the_resume_repeats_no_tool_call(durable_db):
    before, fetched, state = fail_then_resume(durable_db)
    assert before < len(ITEMS)  # it stopped at the failure, not at the end
    assert fetched == Counter(ITEMS)  # every item fetched exactly once over both runs
    assert all(task["status"] == "completed" for task in state["tasks"].values())
    assert all(f"RESULT {item}" in state["final_answer"] for item in ITEMS)


def test_a_calls_own_durability_wins_and_async_repeats_tool_calls(tmp_path):
    """Why ``"sync"`` is the default: with ``"async"`` the run calls every tool before the failure surfaces."""
    before, fetched, _ = fail_then_resume(str(tmp_path / "runs.sqlite"), durability="async")
    assert before == len(ITEMS)
    assert sum(fetched.values()) > len(ITEMS)  # the calls made after the disk filled are made again


def test_only_a_checkpointer_that_outlives_the_process_defaults_to_sync(tmp_path):
    with sqlite3.connect(tmp_path / "runs.sqlite", check_same_thread=False) as conn:
        assert default_durability(SqliteSaver(conn)) == "sync"
    assert default_durability(InMemorySaver()) is None
    assert default_durability(None) is None
    assert default_durability(True) is None  # a subgraph's "use the parent's"


def writes_of_a_whole_run(tmp_path) -> int:
    """Checkpoint writes (``put`` and ``put_writes``) a run of this page makes when nothing fails."""
    disk = Disk(room=10**6)
    with open_saver(str(tmp_path / "whole.sqlite")) as (checkpointer, store):
        build(disk.breaks(checkpointer), store, Counter()).invoke({"messages": [("user", "collect")]}, THREAD)
    return disk.made


def test_wherever_the_writes_start_failing_the_default_repeats_at_most_the_failed_step(tmp_path):
    """The disk fills after the 1st, 8th, 15th... write of a whole run (36 writes; every one takes 17 s). The
    default (``"sync"``) repeats at most the calls of the step whose write failed (two run at a time here: 2
    after the 8th write, which records two fetches), none elsewhere; ``"async"`` repeats every call made since."""
    repeats: dict[str, list[int]] = {"default": [], "async": []}
    for room in range(1, writes_of_a_whole_run(tmp_path), 7):  # with no write, there is nothing to resume
        for mode in repeats:
            chosen = {} if mode == "default" else {"durability": mode}
            _, fetched, _ = fail_then_resume(str(tmp_path / f"{mode}{room}.sqlite"), Disk(room), **chosen)
            repeats[mode].append(sum(fetched.values()) - len(ITEMS))
    assert max(repeats["default"]) <= 2 and repeats["default"].count(0) > len(repeats["default"]) / 2, repeats
    assert all(s <= a for s, a in zip(repeats["default"], repeats["async"], strict=True)), repeats
    assert max(repeats["async"]) == len(ITEMS), repeats  # failing before the first fetch was saved: all again
