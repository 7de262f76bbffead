"""PostgreSQL for the tests: ``$REPLANGRAPH_TEST_POSTGRES``, else a throwaway server on 127.0.0.1.

Without a server the PostgreSQL tests are skipped, except under CI (``$CI`` set), where they fail.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

POSTGRES_ENV = "REPLANGRAPH_TEST_POSTGRES"


def _no_server(reason: str):
    """Skip the test, or fail it under CI, where a skipped PostgreSQL run must not pass."""
    reason = " ".join(reason.split())
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}", pytrace=False)
    hint = "" if os.environ.get(POSTGRES_ENV) else f" (set {POSTGRES_ENV} to a server's URL to run them)"
    pytest.skip(f"no PostgreSQL server: {reason}{hint}")


SERVER_SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "postgres"


def _throwaway_server() -> Iterator[str]:
    """Start PostgreSQL in a temporary folder with the script CI uses (``.ci/postgres``); yield its URL."""
    folder = tempfile.mkdtemp(prefix="replangraph-pg-")  # under /tmp: the server's user must reach it
    try:
        started = subprocess.run(
            ["bash", str(SERVER_SCRIPT), "start", folder], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        _no_server(f".ci/postgres could not run: {error}")
    if started.returncode:
        subprocess.run(["bash", str(SERVER_SCRIPT), "stop", folder], capture_output=True)
        _no_server(f".ci/postgres start failed: {(started.stderr + started.stdout).strip()[-800:]}")
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["bash", str(SERVER_SCRIPT), "stop", folder], capture_output=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a PostgreSQL server for the session: ``$REPLANGRAPH_TEST_POSTGRES``, else a throwaway server
    started on 127.0.0.1 and stopped when the session ends. Skips without one (fails under CI)."""
    try:
        import psycopg
    except ImportError:
        _no_server('psycopg is not installed (pip install -e ".[test]")')
    url = os.environ.get(POSTGRES_ENV)
    if url:
        try:
            psycopg.connect(url, connect_timeout=10).close()
        except psycopg.OperationalError as error:
            _no_server(f"{POSTGRES_ENV} names a server that cannot be reached: {error}")
        yield url
        return
    started = time.monotonic()
    servers = _throwaway_server()
    url = next(servers)
    print(f"\nthrowaway PostgreSQL at {url}, started in {time.monotonic() - started:.2f}s")
    yield url
    next(servers, None)


@pytest.fixture
def postgres_db(postgres_url: str) -> Iterator[str]:
    """URL of a new, empty database on the session's server, dropped after the test."""
    import psycopg

    name = f"replangraph_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(postgres_url)._replace(path="/" + name))
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.system)])
def durable_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database for ``replangraph.durable.open_saver``, once per backend: ``"sqlite"`` gives the path of a
    new SQLite file under ``tmp_path``; ``"postgres"`` gives the URL of a new, empty PostgreSQL database
    (`postgres_db`, dropped after the test; skipped without a server, failing under CI; marked ``system``). Open it
    as often as a test needs (each ``open_saver`` is a new connection, as after a restart); ``request.param`` names
    the backend."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.sqlite")
    return request.getfixturevalue("postgres_db")


@pytest.fixture(autouse=True)
def _runs_database_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's default database is in the user's data folder: tests keep theirs in ``tmp_path``."""
    monkeypatch.setenv("REPLANGRAPH_DB", str(tmp_path / "cli-runs.sqlite"))


@pytest.fixture(params=["invoke", "ainvoke"])
def way(request) -> str:
    """Run the test's graph on the sync path (``invoke``, ``stream``) and again on the async one (``ainvoke``,
    ``astream``): the same scripted world must give the same outcome (see ``scripting.run``)."""
    return request.param
