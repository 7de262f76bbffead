"""Runs sharing a store or a workspace root keep apart: any thread id names its own store namespace, and a run
without a thread id reads no other run's kept outputs."""

from __future__ import annotations

import sqlite3

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from scripting import make_model, plan_of

from benchmarks.fault_probes import ODD_THREAD_IDS as ODD_IDS
from replangraph import AgentConfig, build_graph
from replangraph.context import workspace as kept
from replangraph.context.excerpts import NOTE_RE
from replangraph.durable import kept_output, kept_output_ids
from replangraph.llm.reading import message_text
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

LONG = "FIRST " + "detail " * 2_000 + "LAST"


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.system)])
def store(request, tmp_path):
    """An empty store of each kind runs use: in memory, SQLite, and PostgreSQL (`postgres_db`, marked ``system``)."""
    if request.param == "memory":
        yield InMemoryStore()
    elif request.param == "sqlite":
        with sqlite3.connect(tmp_path / "store.db", check_same_thread=False, isolation_level=None) as conn:
            found = SqliteStore(conn)
            found.setup()
            yield found
    else:
        from langgraph.store.postgres import PostgresStore

        with PostgresStore.from_conn_string(request.getfixturevalue("postgres_db")) as found:
            found.setup()
            yield found


NAMES = ["dot", "dots", "slashes", "unicode", "1000", "1000-wide", "a-dot", "pct"]


@pytest.mark.parametrize("thread", ODD_IDS, ids=NAMES)
def test_any_thread_id_runs_with_a_store_and_its_outputs_read_back(store, thread):
    model = make_model(plan_of({"id": "1", "content": "collect"}), lambda request: LONG)
    graph = build_graph(model, checkpointer=InMemorySaver(), store=store)
    run = {"configurable": {"thread_id": thread}}
    final = graph.invoke({"messages": [("user", "go")]}, run)
    assert final["tasks"]["1"]["status"] == "completed" and not final.get("workspace")  # kept in the store
    assert kept_output(final, store, thread, "1/result") == LONG
    assert "1/result" in kept_output_ids(final, store, thread)
    assert store.get(kept.run_namespace(thread), "plan:1:step:1:result").value["content"] == LONG


def test_thread_labels_are_store_labels_file_names_and_never_shared():
    labels = [kept.thread_label(t) for t in [*ODD_IDS, "a%2Eb", "x" * 999 + "y", "t", "run-1"]]
    assert len(set(labels)) == len(labels)
    assert all("." not in label and "/" not in label and len(label.encode()) <= kept.LABEL_MAX for label in labels)
    assert kept.thread_label("t") == "t" and kept.thread_label("a.b") == "a%2Eb"  # plain ids keep their namespace


def test_runs_without_a_thread_id_on_one_store_read_none_of_each_other_s_outputs(store):
    seen_ids, replies = [], []

    def big() -> str:
        """Big output."""
        return "A " * 5_000 + "SECRET-7 " + "B " * 5_000

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return plan_of({"id": "1", "content": "look"})
        if not request.tool_names:
            return "final"
        last = message_text(request.tool_results[-1]) if request.tool_results else ""
        if "go first" in request.prompt:  # the first run keeps a big output and notes its id
            if not request.tool_results:
                return tool_call("big", {})
            seen_ids.append(NOTE_RE.search(last).group(1))
            return "kept"
        if not request.tool_results:  # the second run asks for the first run's output
            return tool_call("read_output", {"output_id": seen_ids[0]})
        replies.append(last)
        return "done"

    graph = build_graph(
        ScriptedChatModel(respond=respond), tools=[big], config=AgentConfig(max_observation_chars=2_000), store=store
    )
    assert graph.invoke({"messages": [("user", "go first")]})["tasks"]["1"]["status"] == "completed"
    assert graph.invoke({"messages": [("user", "go second")]})["tasks"]["1"]["status"] == "completed"
    assert seen_ids and replies
    assert "SECRET-7" not in replies[0] and f"no kept output named {seen_ids[0]!r}" in replies[0]
    assert "Known ids: goal." in replies[0]  # the first run's ids are not hinted either
