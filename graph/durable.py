"""Durable runs: a checkpointer (and store) on SQLite, the default, or on PostgreSQL.

``open_saver(db)`` opens a SQLite file for a path and PostgreSQL for a
``postgres://`` or ``postgresql://`` URL; ``default_db_path()`` is the SQLite
file used when no database is named.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from langgraph.checkpoint.sqlite import SqliteSaver

DB_ENV = "REPLANGRAPH_DB"
CONNECT_TIMEOUT_S = 10
"""Seconds to wait for a PostgreSQL server unless the URL or ``PGCONNECT_TIMEOUT`` says otherwise."""


def is_postgres_url(db: str | os.PathLike[str]) -> bool:
    """Whether ``db`` is a ``postgres://`` or ``postgresql://`` URL (``postgresql+psycopg://`` too)."""
    return isinstance(db, str) and re.match(r"postgres(ql)?(\+\w+)?://", db, re.I) is not None


def sqlite_path(db: str | os.PathLike[str]) -> Path:
    """The file a SQLite name means: a path, or a ``sqlite:///path`` URL. Another URL is a ValueError
    (it would otherwise become a folder named after it)."""
    text = os.fspath(db)
    if text.lower().startswith("sqlite:///"):
        text = text[len("sqlite:///") :]  # sqlite:///relative, sqlite:////absolute
    elif "://" in text:
        raise ValueError(f"{masked_url(text)} is neither a PostgreSQL URL (postgresql://...) nor a SQLite file path")
    path = Path(text).expanduser()
    if path.is_dir():
        raise ValueError(f"{path} is a folder: name a SQLite file in it, e.g. {path / 'runs.sqlite'}")
    return path


def default_db_path() -> Path:
    """``$REPLANGRAPH_DB`` when it names a file, else ``runs.sqlite`` in the user's data folder
    (``$XDG_DATA_HOME`` or ``~/.local/share``, ``~/Library/Application Support``, ``%LOCALAPPDATA%``)."""
    named = os.environ.get(DB_ENV)
    if named and not is_postgres_url(named):
        return Path(named).expanduser()
    # The three platform rules are written out here rather than taken from platformdirs, to keep a dependency out.
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "replangraph" / "runs.sqlite"


def masked_url(url: str) -> str:
    """``url`` with its password (in the user part or the query) shown as ``***``."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    query = [(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query, safe="*") if query else ""))


def create_private(path: Path) -> None:
    """Create the SQLite file at ``path`` readable by its owner only (0600), in a folder created 0700 when
    missing (its missing parents too): the checkpoints hold the run's prompts and results. An existing file or
    folder keeps its mode; SQLite gives its journal files the file's mode."""
    missing = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


@contextmanager
def open_saver(db: str | os.PathLike[str] | None = None) -> Iterator[tuple[Any, Any]]:
    """Open ``(checkpointer, store)`` on ``db``: a PostgreSQL URL gives ``PostgresSaver`` and ``PostgresStore``;
    a path (default ``$REPLANGRAPH_DB``, which may also be a URL, else `default_db_path`) gives ``SqliteSaver``
    and no store, as replangraph then keeps its results in a state channel the checkpointer saves.
    A new SQLite file is created 0600 in a folder created 0700 (`create_private`). Tables are created when
    missing; the connections close when the block ends."""
    if db is None:
        db = os.environ.get(DB_ENV) or default_db_path()
    if is_postgres_url(db):
        with _open_postgres(re.sub(r"^postgres(ql)?\+\w+://", "postgresql://", str(db), flags=re.I)) as opened:
            yield opened
        return
    path = sqlite_path(db)
    create_private(path)
    conn = sqlite3.connect(path, check_same_thread=False)  # SqliteSaver serialises its calls with a lock
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        yield saver, None
    finally:
        conn.close()


@contextmanager
def _open_postgres(url: str) -> Iterator[tuple[Any, Any]]:
    """``PostgresSaver`` and ``PostgresStore`` on one connection each (both lock around every call, so parallel
    branches share them safely, and a pool would not let their calls overlap)."""
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.store.postgres import PostgresStore
    except ImportError as error:
        raise RuntimeError(
            f'PostgreSQL needs the postgres extra: pip install "replangraph[postgres]" ({error})'
        ) from error
    conninfo = url
    if "connect_timeout" not in psycopg.conninfo.conninfo_to_dict(url) and not os.environ.get("PGCONNECT_TIMEOUT"):
        conninfo = psycopg.conninfo.make_conninfo(url, connect_timeout=CONNECT_TIMEOUT_S)
    with ExitStack() as stack:
        try:
            saver = stack.enter_context(PostgresSaver.from_conn_string(conninfo))
            store = stack.enter_context(PostgresStore.from_conn_string(conninfo))
        except psycopg.OperationalError as error:
            # psycopg's first line says what failed; the lines after it are hints in sentences of their own
            reason = " ".join((str(error).strip().splitlines() or [type(error).__name__])[0].split()).rstrip(".")
            raise ConnectionError(
                f"Cannot connect to PostgreSQL at {masked_url(url)} ({reason}): start the server or fix the URL."
            ) from error
        saver.setup()
        store.setup()
        yield saver, store


# --------------------------------------------------------------------------- kept outputs of a run


def run_workspace(values: Mapping[str, Any], store: Any, thread: str) -> Any:
    """The results workspace of the run on ``thread``: the graph's ``store`` (its namespace for the thread),
    else the ``workspace`` channel of its state ``values``."""
    from replangraph.context.kept import WORKSPACE, Workspace, run_namespace

    workspace = Workspace(values.get(WORKSPACE), store)
    workspace.namespace = run_namespace(thread) if store is not None else ()
    return workspace


def kept_output(values: Mapping[str, Any], store: Any, thread: str, ident: str) -> str | None:
    """The whole text kept under output id ``ident`` (``2/window-at-failure``, ``2/result``, ``goal``) in the run
    on ``thread`` (its state ``values`` and the graph's ``store``), or None when there is none."""
    from replangraph.context.kept import read_saved, using

    with using(run_workspace(values, store, thread)):
        return read_saved(ident, values.get("tasks") or {}, values.get("goal", ""), "")


def kept_output_ids(values: Mapping[str, Any], store: Any, thread: str) -> list[str]:
    """Output ids of the run on ``thread`` that `kept_output` reads: each subtask's result and kept outputs,
    then the whole lists the fallback report kept."""
    from replangraph.context.fitting import output_id, result_id
    from replangraph.context.kept import report_task
    from replangraph.queue.tasks import ordered

    workspace = run_workspace(values, store, thread)
    tasks = values.get("tasks") or {}
    found = []
    for task in ordered(tasks):
        if task.get("result") is not None:
            found.append(result_id(task["id"]))
        found += [output_id(task["id"], key) for key in workspace.keys(task, limit=1_000)]
    report = report_task(tasks)
    return found + [output_id(report["id"], key) for key in workspace.keys(report, limit=1_000)]
