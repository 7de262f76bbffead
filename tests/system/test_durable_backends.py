"""Durable runs on SQLite and PostgreSQL: a run's final state, results included, outlives its connection."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from scripting import make_model, plan_of, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.app.demo import DEMO_GOAL, build_demo_graph, expected_products
from replangraph.durable import default_db_path, is_postgres_url, open_saver

PARTS = ("a", "b", "c")
LONG = {part: f"FIRST-{part} " + "detail " * 1_000 + f"LAST-{part}" for part in PARTS}
PLAN = plan_of(
    *({"id": part, "content": f"collect {part}"} for part in PARTS),
    {"id": "use", "content": "use them", "depends_on": list(PARTS)},
)
PARALLEL = AgentConfig(max_concurrency=4)  # the three collecting subtasks run as parallel branches


def work(request):
    subtask = subtask_of(request)
    if subtask.startswith("collect "):
        return LONG[subtask.removeprefix("collect ")]
    return "used: " + " ".join(f"LAST-{part}" for part in PARTS if f"LAST-{part}" in request.prompt)


def whole_results(state: dict, store, thread: str) -> dict[str, str]:
    """Each task's whole result: from the store when there is one, else from the state's workspace channel."""
    results = {}
    for task_id, task in state["tasks"].items():
        ref = task.get("result_ref")
        if not ref:
            results[task_id] = task["result"]
        elif store is not None:
            results[task_id] = store.get(("replangraph", thread), ref["key"]).value["content"]
        else:
            step = state["workspace"][f"plan:{task.get('plan_id') or '1'}:step:{task_id}"]
            results[task_id] = step[f":result:v{ref['version']}"]["content"]
    return results


def snapshot(state: dict, store, thread: str) -> dict:
    statuses = {task_id: task["status"] for task_id, task in state["tasks"].items()}
    return {"final": state["final_answer"], "statuses": statuses, "results": whole_results(state, store, thread)}


@pytest.mark.parametrize("build", ["demo", "long results"])
def test_a_finished_run_reads_back_whole_through_a_new_connection(durable_db, build):
    run = {"configurable": {"thread_id": "job"}}

    def graph(checkpointer, store):
        if build == "demo":  # hands work off to three new subtasks
            return build_demo_graph(config=PARALLEL, checkpointer=checkpointer, store=store)
        return build_graph(make_model(PLAN, work), config=PARALLEL, checkpointer=checkpointer, store=store)

    with open_saver(durable_db) as (checkpointer, store):
        assert (store is None) != is_postgres_url(durable_db)
        goal = DEMO_GOAL if build == "demo" else "go"
        final = graph(checkpointer, store).invoke({"messages": [("user", goal)]}, run)
        before = snapshot(final, store, "job")
    assert all(status == "completed" for status in before["statuses"].values())
    if build == "demo":
        assert len(before["statuses"]) == 4 and all(name in before["final"] for name in expected_products(19))
    else:
        assert before["results"] == {**LONG, "use": "used: LAST-a LAST-b LAST-c"}
        assert all(f"LAST-{part}" in before["final"] for part in PARTS)

    with open_saver(durable_db) as (checkpointer, store):  # a new process: new connections, nothing in memory
        after = snapshot(graph(checkpointer, store).get_state(run).values, store, "job")
    assert after == before


def test_the_default_database_is_named_by_the_environment_or_in_the_data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("REPLANGRAPH_DB", str(tmp_path / "mine.sqlite"))
    assert default_db_path() == tmp_path / "mine.sqlite"
    monkeypatch.delenv("REPLANGRAPH_DB")
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_db_path() == tmp_path / "data" / "replangraph" / "runs.sqlite"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_db_path() == tmp_path / ".local" / "share" / "replangraph" / "runs.sqlite"


def test_without_a_name_the_saver_opens_the_default_database(monkeypatch, tmp_path):
    monkeypatch.delenv("REPLANGRAPH_DB", raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    with open_saver() as (checkpointer, store):
        assert checkpointer is not None and store is None
    assert (tmp_path / "replangraph" / "runs.sqlite").is_file()


def test_postgres_urls_are_told_from_paths():
    assert is_postgres_url("postgresql://u@127.0.0.1/db") and is_postgres_url("postgres://u@127.0.0.1/db")
    assert not is_postgres_url("runs.sqlite") and not is_postgres_url("/tmp/postgresql/runs.sqlite")


def record_connects(monkeypatch) -> list[dict]:
    """The connection settings of every PostgreSQL connection opened from now on (psycopg's ``Connection.connect``)."""
    import psycopg

    attempts: list[dict] = []
    real = psycopg.Connection.connect.__func__

    def connect(cls, conninfo: str = "", **kwargs):
        attempts.append(psycopg.conninfo.conninfo_to_dict(conninfo))
        return real(cls, conninfo, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "connect", classmethod(connect))
    return attempts


def test_an_unreachable_server_is_one_clear_sentence_without_the_password(monkeypatch):
    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://user:s3cret@127.0.0.1:{port}/db"
    attempts = record_connects(monkeypatch)
    with pytest.raises(ConnectionError) as raised, open_saver(url):
        pass
    message = str(raised.value)
    assert message.startswith(f"Cannot connect to PostgreSQL at postgresql://user:***@127.0.0.1:{port}/db (")
    assert message.endswith("): start the server or fix the URL.") and message.count(". ") == 0
    assert "s3cret" not in message and "\n" not in message
    assert len(attempts) == 1  # at once: no second try, nor a second connection after the first failed
    assert float(attempts[0]["connect_timeout"]) > 0  # and a server that never answers is not waited on forever


def test_without_the_postgres_extra_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.postgres", None)  # importing it fails
    with pytest.raises(RuntimeError, match=r'pip install "replangraph\[postgres\]"'), open_saver("postgres://u@h/db"):
        pass


def test_a_missing_folder_is_created(tmp_path):
    path = tmp_path / "not" / "yet" / "runs.sqlite"
    with open_saver(path) as (checkpointer, _store):
        checkpointer.setup()  # again: setup is idempotent
    assert path.is_file()


def test_database_names_in_other_spellings(tmp_path, monkeypatch):
    from replangraph.durable import sqlite_path

    monkeypatch.chdir(tmp_path)
    assert sqlite_path("sqlite:///runs.db") == Path("runs.db")
    assert sqlite_path(f"sqlite:///{tmp_path}/abs.db") == tmp_path / "abs.db"
    assert is_postgres_url("postgresql+psycopg://me@127.0.0.1/db") and is_postgres_url("POSTGRES://x")
    with pytest.raises(ValueError, match="neither a PostgreSQL URL"):
        sqlite_path("mysql://me:secret@host/db")
    with pytest.raises(ValueError, match="is a folder"):
        sqlite_path(tmp_path)
    with open_saver("sqlite:///named.sqlite") as (saver, store):
        assert store is None
    assert (tmp_path / "named.sqlite").is_file() and not (tmp_path / "sqlite:").exists()
