"""Trust: no secret of the base URL is stored, a new database is private to its owner, and `resume` does not
send the run (and the API key) to a server that only the database names. The model is the loopback server of
tests/helpers/openai_loopback.py, scripted by the request's content."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_helpers import ASK_GOAL, hitl_responder, main
from openai_loopback import OpenAILoopback

from replangraph.app import cli
from replangraph.app.server import url_without_secrets
from replangraph.app.settings import SETTINGS_KEY
from replangraph.durable import open_saver

pytestmark = pytest.mark.system  # loopback servers

PASSWORD = "s3cret-pass-9f2"


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    monkeypatch.setenv("REPLANGRAPH_MODEL", "local")
    monkeypatch.setenv("REPLANGRAPH_DB", str(tmp_path / "default-runs.sqlite"))
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a terminal: a question ends the command (exit 3)


@pytest.fixture
def server() -> Iterator[OpenAILoopback]:
    with OpenAILoopback(hitl_responder, models=["local"]) as loopback:
        yield loopback


@contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def with_password(url: str) -> str:
    return url.replace("http://", f"http://user:{PASSWORD}@")


def stored_base_url(db: Path, thread: str) -> set:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT metadata FROM checkpoints WHERE thread_id = ?", (thread,)).fetchall()
    return {json.loads(json.loads(row[0])[SETTINGS_KEY])["base_url"] for row in rows}


def test_the_password_of_the_base_url_is_used_but_not_stored(server, tmp_path):
    db = tmp_path / "runs.sqlite"
    code, text = main("run", ASK_GOAL, "--base-url", with_password(server.base_url), "--db", str(db), "--thread", "s1")
    assert code == 3, text  # waiting for an answer: checkpoints were written
    assert server.requests  # the run talked to the server
    assert stored_base_url(db, "s1") == {server.base_url}  # recorded, without the user part
    assert not any(PASSWORD.encode() in path.read_bytes() for path in tmp_path.glob("runs.sqlite*"))
    assert PASSWORD not in text


@pytest.mark.parametrize(
    ("url", "stored"),
    [
        ("http://u:p@host:8000/v1", "http://host:8000/v1"),
        ("https://host/v1?api_key=K&x=1", "https://host/v1?x=1"),
        ("https://host/v1?token=T&Secret=S&password=P&sig=G&auth=A", "https://host/v1"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
        (None, None),
    ],
)
def test_secrets_are_taken_out_of_the_url_before_it_is_stored(url, stored):
    assert url_without_secrets(url) == stored


def test_a_new_database_and_its_folders_are_readable_by_their_owner_only(tmp_path, monkeypatch):
    path = tmp_path / "new" / "deeper" / "runs.sqlite"
    with umask(0o022), open_saver(path):
        pass
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700

    # the CLI's default database, in the user's data folder
    monkeypatch.delenv("REPLANGRAPH_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    (tmp_path / "data").mkdir(mode=0o755)
    with umask(0o022), cli.ExitStack() as stack:
        cli.open_db(stack, cli.chosen_db(None))
    default = tmp_path / "data" / "replangraph" / "runs.sqlite"
    assert stat.S_IMODE(default.stat().st_mode) == 0o600
    assert stat.S_IMODE(default.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o755  # a folder that was there is left as it is


def test_an_existing_database_keeps_its_mode(tmp_path):
    path = tmp_path / "shared.sqlite"
    sqlite3.connect(path).close()
    path.chmod(0o640)
    with open_saver(path):
        pass
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_resume_refuses_a_server_written_into_the_database(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    db = tmp_path / "runs.sqlite"
    assert main("run", ASK_GOAL, "--db", str(db), "--thread", "t1")[0] == 3
    with OpenAILoopback(hitl_responder, models=["local"]) as elsewhere:
        with sqlite3.connect(db) as conn:  # someone rewrites the recorded settings
            for rowid, metadata in conn.execute("SELECT rowid, metadata FROM checkpoints").fetchall():
                found = json.loads(metadata)
                settings = json.loads(found[SETTINGS_KEY])
                found[SETTINGS_KEY] = json.dumps({**settings, "base_url": elsewhere.base_url})
                conn.execute("UPDATE checkpoints SET metadata = ? WHERE rowid = ?", (json.dumps(found), rowid))
        calls = len(server.requests)

        code, text = main("resume", "--thread", "t1", "--db", str(db), "--answer", "EU")
        assert code == 2
        assert elsewhere.gets == [] and elsewhere.requests == []  # nothing, the key least of all, was sent there
        assert len(server.requests) == calls

    code, text = main("resume", "--thread", "t1", "--db", str(db), "--answer", "EU", "--base-url", server.base_url)
    assert code == 0, text
    assert "market EU" in text.split("Final answer:", 1)[1]


def test_resume_uses_a_recorded_server_when_the_environment_names_it_or_base_url_is_given(
    server, tmp_path, monkeypatch, capsys
):
    db = tmp_path / "runs.sqlite"
    assert main("run", ASK_GOAL, "--db", str(db), "--thread", "t2", "--base-url", server.base_url)[0] == 3

    code, _ = main("resume", "--thread", "t2", "--db", str(db), "--answer", "EU")  # $OPENAI_BASE_URL is not set
    assert code == 2
    err = capsys.readouterr().err
    assert f"recorded with the model server {server.base_url}, but $OPENAI_BASE_URL is not set" in err
    assert f"pass --base-url {server.base_url}" in err

    monkeypatch.setenv("OPENAI_BASE_URL", with_password(server.base_url))  # the same server, with credentials
    code, text = main("resume", "--thread", "t2", "--db", str(db), "--answer", "EU")
    assert code == 0, text
