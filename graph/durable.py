"""Durable runs: a checkpointer (and store) on SQLite, the default, or on PostgreSQL.

``open_saver(db)`` opens a SQLite file for a path and PostgreSQL for a
``postgres://`` or ``postgresql://`` URL; ``default_db_path()`` is the SQLite
file used when no database is named. ``thread_lease(db, thread)`` lets one
process at a time run a thread, with a lease kept in the same database.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from langgraph.checkpoint.sqlite import SqliteSaver

from replangraph import clock
from replangraph.context.fitting import output_id, result_id
from replangraph.context.output_ids import read_saved
from replangraph.context.results import report_task
from replangraph.context.workspace import WORKSPACE, Workspace, run_namespace, using
from replangraph.queue.tasks import ordered

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


SECRET_NAME = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential|session", re.I)
"""Query parameter names whose values are taken for secrets: api_key, access_token, password, signature, ..."""


def masked_url(url: str) -> str:
    """``url`` as every message shows it: its password (in the user part) and the values of query parameters whose
    names look secret (`SECRET_NAME`) as ``***``. The one masking of URLs: database and model server alike."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = [(k, "***" if SECRET_NAME.search(k) else v) for k, v in pairs]
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


def chosen_db(db: str | os.PathLike[str] | None) -> str | os.PathLike[str]:
    """``db``, else ``$REPLANGRAPH_DB``, else `default_db_path`."""
    return db if db is not None else os.environ.get(DB_ENV) or default_db_path()


@contextmanager
def open_saver(db: str | os.PathLike[str] | None = None) -> Iterator[tuple[Any, Any]]:
    """Open ``(checkpointer, store)`` on ``db``: a PostgreSQL URL gives ``PostgresSaver`` and ``PostgresStore``;
    a path (default ``$REPLANGRAPH_DB``, which may also be a URL, else `default_db_path`) gives ``SqliteSaver``
    and no store, as replangraph then keeps its results in a state channel the checkpointer saves.
    A new SQLite file is created 0600 in a folder created 0700 (`create_private`). Tables are created when
    missing; the connections close when the block ends. A graph `build_graph` compiles with this checkpointer
    runs with ``durability="sync"`` unless a call names another (`replangraph.builder.default_durability`)."""
    db = chosen_db(db)
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
        import psycopg  # optional: the postgres extra
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.store.postgres import PostgresStore
    except ImportError as error:
        raise RuntimeError(
            f'PostgreSQL needs the postgres extra: pip install "replangraph[postgres]" ({error})'
        ) from error
    conninfo = postgres_conninfo(url)
    with ExitStack() as stack:
        try:
            saver = stack.enter_context(PostgresSaver.from_conn_string(conninfo))
            store = stack.enter_context(PostgresStore.from_conn_string(conninfo))
        except psycopg.OperationalError as error:
            raise unreachable(url, error) from error
        saver.setup()
        store.setup()
        yield saver, store


def postgres_conninfo(url: str) -> str:
    """``url`` with a connect timeout of `CONNECT_TIMEOUT_S` unless it or ``PGCONNECT_TIMEOUT`` names one."""
    import psycopg  # optional: the postgres extra

    if "connect_timeout" in psycopg.conninfo.conninfo_to_dict(url) or os.environ.get("PGCONNECT_TIMEOUT"):
        return url
    return psycopg.conninfo.make_conninfo(url, connect_timeout=CONNECT_TIMEOUT_S)


def unreachable(url: str, error: Exception) -> ConnectionError:
    """The sentence for a PostgreSQL server at ``url`` that refused or did not answer: psycopg's first line
    says what failed (the lines after it are hints in sentences of their own)."""
    reason = " ".join((str(error).strip().splitlines() or [type(error).__name__])[0].split()).rstrip(".")
    return ConnectionError(
        f"Cannot connect to PostgreSQL at {masked_url(url)} ({reason}): start the server or fix the URL."
    )


# --------------------------------------------------------------------------- one runner per thread

LEASE_TTL_ENV = "REPLANGRAPH_LEASE_TTL_S"
LEASE_TTL_S = 30.0
"""Seconds a thread's lease lasts unless renewed (``$REPLANGRAPH_LEASE_TTL_S`` overrides it): how long a thread
whose runner crashed stays refused to others. The holder renews it every third of that."""
LEASE_TABLE = "replangraph_thread_leases"
POLL_S = 1.0
"""The longest wait between two tries of `thread_lease` when it waits for a lease."""


class ThreadBusy(RuntimeError):
    """Another process holds the lease of the thread (it is running it): the message says who, until when, and
    what to do."""

    def __init__(self, thread_id: str, owner: str, expires_at: float):
        self.thread_id, self.owner, self.expires_at = thread_id, owner, expires_at
        host, pid = owner_parts(owner)
        until = time.strftime("%H:%M:%S UTC", time.gmtime(expires_at))
        super().__init__(
            f"Thread {thread_id!r} is being run by another process (pid {pid} on {host}), whose lease on it lasts "
            f"until {until} and is renewed while it runs: wait for that run to end, or, if that process is gone, "
            f"try again after {until}."
        )


def new_owner() -> str:
    """Who holds a lease: ``host:pid:token``, the token telling apart two leases of one process."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def owner_parts(owner: str) -> tuple[str, str]:
    """``(host, pid)`` of a `new_owner` string."""
    parts = owner.rsplit(":", 2)
    return (parts[0], parts[1]) if len(parts) == 3 else (owner, "?")


def lease_ttl(ttl_s: float | None = None) -> float:
    """``ttl_s``, else ``$REPLANGRAPH_LEASE_TTL_S``, else `LEASE_TTL_S`; a ValueError unless a positive number."""
    named = os.environ.get(LEASE_TTL_ENV) if ttl_s is None else ttl_s
    try:
        value = LEASE_TTL_S if named in (None, "") else float(named)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        source = f"${LEASE_TTL_ENV}" if ttl_s is None else "ttl_s"
        raise ValueError(f"{source} must be a positive number of seconds, not {named!r}")
    return value


class LeaseTable:
    """The ``replangraph_thread_leases`` table of a database, on a connection of its own. Expiry times are seconds
    since the epoch by the database's clock on PostgreSQL (the runners' clocks may differ), by the process's clock
    on SQLite (a local file)."""

    NOW = {False: "lease_now()", True: "extract(epoch from clock_timestamp())::float8"}

    def __init__(self, conn: Any, postgres: bool):
        self.conn, self.postgres = conn, postgres
        self.lock = threading.Lock()  # the heartbeat thread and the owner's thread share the connection
        self.run(
            f"CREATE TABLE IF NOT EXISTS {LEASE_TABLE} "
            "(thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL)"
        )

    def run(self, sql: str, params: tuple = ()) -> tuple[list[tuple], int]:
        """Rows and row count of one statement, committed on its own."""
        sql = sql.replace("lease_now()", self.NOW[self.postgres])
        if self.postgres:
            sql = sql.replace("?", "%s")
        with self.lock:
            cursor = self.conn.execute(sql, params)
            return (cursor.fetchall() if cursor.description else []), cursor.rowcount

    def take(self, thread_id: str, owner: str, ttl_s: float) -> tuple[str, float, float] | None:
        """Take the lease when it is free, expired or ``owner``'s (one atomic statement); then ``(holder, expires
        at, seconds left)``, or None when nobody holds it (it was released in between)."""
        self.run(
            f"INSERT INTO {LEASE_TABLE} (thread_id, owner, expires_at) VALUES (?, ?, lease_now() + ?) "
            "ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at "
            f"WHERE {LEASE_TABLE}.expires_at <= lease_now() OR {LEASE_TABLE}.owner = excluded.owner",
            (thread_id, owner, ttl_s),
        )
        return self.holder(thread_id)

    def holder(self, thread_id: str) -> tuple[str, float, float] | None:
        """``(holder, expires at, seconds left)`` of the thread's lease, or None when nobody holds it."""
        rows, _ = self.run(
            f"SELECT owner, expires_at, expires_at - lease_now() FROM {LEASE_TABLE} WHERE thread_id = ?", (thread_id,)
        )
        return tuple(rows[0]) if rows else None

    def renew(self, thread_id: str, owner: str, ttl_s: float) -> bool:
        """Extend ``owner``'s lease by ``ttl_s`` from now; False when ``owner`` holds it no more."""
        _, count = self.run(
            f"UPDATE {LEASE_TABLE} SET expires_at = lease_now() + ? WHERE thread_id = ? AND owner = ?",
            (ttl_s, thread_id, owner),
        )
        return count == 1

    def release(self, thread_id: str, owner: str) -> None:
        self.run(f"DELETE FROM {LEASE_TABLE} WHERE thread_id = ? AND owner = ?", (thread_id, owner))


@contextmanager
def open_lease_table(db: str | os.PathLike[str]) -> Iterator[LeaseTable]:
    """The lease table of ``db`` (a path or PostgreSQL URL, as for `open_saver`), created when missing."""
    if is_postgres_url(db):
        import psycopg  # optional: the postgres extra

        url = re.sub(r"^postgres(ql)?\+\w+://", "postgresql://", str(db), flags=re.I)
        try:
            conn = psycopg.connect(postgres_conninfo(url), autocommit=True)
        except psycopg.OperationalError as error:
            raise unreachable(url, error) from error
    else:
        path = sqlite_path(db)
        create_private(path)
        conn = sqlite3.connect(path, timeout=CONNECT_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        conn.create_function("lease_now", 0, time.time)
    try:
        yield LeaseTable(conn, postgres=is_postgres_url(db))
    finally:
        conn.close()


class LeaseLost(RuntimeError):
    """Another runner took this process's lease of a thread (it went unrenewed for longer than its TTL)."""

    def __init__(self, thread_id: str, ttl_s: float, holder: str | None):
        self.thread_id, self.holder = thread_id, holder
        host, pid = owner_parts(holder) if holder else ("?", "?")
        super().__init__(
            f"This process's lease of thread {thread_id!r} went unrenewed for over {ttl_s:g} s and another process "
            f"(pid {pid} on {host}) took the thread: this run stops here so that only one process runs it."
        )


class Lease:
    """A thread's lease held by this process (`thread_lease`): a thread of its own renews it every third of
    ``ttl_s``. ``lost`` is set when a renewal found it taken by another runner (this process was stalled, or the
    database unreachable, for longer than ``ttl_s``): the run should stop (`check`), as two runners now share
    the thread."""

    def __init__(self, table: LeaseTable, thread_id: str, owner: str, ttl_s: float):
        self.table, self.thread_id, self.owner, self.ttl_s = table, thread_id, owner, ttl_s
        self.lost = threading.Event()
        self.stopped = threading.Event()
        self.heartbeat = threading.Thread(target=self.renew_until_stopped, name="replangraph-lease", daemon=True)
        self.heartbeat.start()

    def renew(self) -> None:
        """Extend the lease by ``ttl_s`` now; set `lost` when another runner holds it. A database that does not
        answer changes nothing (the next renewal tries again)."""
        if self.lost.is_set():
            return
        try:
            held = self.table.renew(self.thread_id, self.owner, self.ttl_s)
        except Exception:  # noqa: BLE001  sqlite3 or psycopg: the database did not answer
            return
        if not held:
            self.lost.set()

    def renew_until_stopped(self) -> None:
        while not self.stopped.wait(self.ttl_s / 3) and not self.lost.is_set():
            self.renew()

    def check(self) -> None:
        """Renew the lease now, between two steps of the run; `LeaseLost` when another runner took it."""
        self.renew()
        if self.lost.is_set():
            try:
                holder = self.table.holder(self.thread_id)
            except Exception:  # noqa: BLE001
                holder = None
            raise LeaseLost(self.thread_id, self.ttl_s, holder[0] if holder else None)

    def release(self) -> None:
        """Stop renewing and delete the lease (one the database cannot delete now runs out after ``ttl_s``). A
        renewal stuck on a database that stopped answering is left behind, as is the lease, rather than waited for."""
        self.stopped.set()
        self.heartbeat.join(self.ttl_s)
        if not self.heartbeat.is_alive():
            with suppress(Exception):
                self.table.release(self.thread_id, self.owner)


@contextmanager
def thread_lease(
    db: str | os.PathLike[str] | None, thread_id: str, *, ttl_s: float | None = None, wait_s: float = 0.0
) -> Iterator[Lease]:
    """Hold the lease of ``thread_id`` in ``db`` (a path or PostgreSQL URL, as for `open_saver`; None: the same
    default) while the block runs, so that no other process runs the thread meanwhile. A lease held by another
    process raises `ThreadBusy`, at once or, with ``wait_s``, once that many seconds passed without it being
    released or expiring. The lease is renewed while the block runs and deleted when it ends; a crashed holder's
    lease expires ``ttl_s`` (`lease_ttl`) after its last renewal."""
    ttl_s = lease_ttl(ttl_s)
    owner, deadline = new_owner(), time.monotonic() + wait_s
    with open_lease_table(chosen_db(db)) as table:
        while True:
            holder = table.take(thread_id, owner, ttl_s)
            if holder is not None and holder[0] == owner:
                break
            if holder is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ThreadBusy(thread_id, holder[0], holder[1])
                clock.wait(  # the package's one sleep, which tests can replace
                    min(max(holder[2], 0.01), POLL_S, left)
                )
        lease = Lease(table, thread_id, owner, ttl_s)
        try:
            yield lease
        finally:
            lease.release()


# --------------------------------------------------------------------------- kept outputs of a run


def run_workspace(values: Mapping[str, Any], store: Any, thread: str) -> Any:
    """The results workspace of the run on ``thread``: the graph's ``store`` (its namespace for the thread),
    else the ``workspace`` channel of its state ``values``."""
    workspace = Workspace(values.get(WORKSPACE), store)
    workspace.namespace = run_namespace(thread) if store is not None else ()
    return workspace


def kept_output(values: Mapping[str, Any], store: Any, thread: str, ident: str) -> str | None:
    """The whole text kept under output id ``ident`` (``2/window-at-failure``, ``2/result``, ``goal``) in the run
    on ``thread`` (its state ``values`` and the graph's ``store``), or None when there is none."""
    with using(run_workspace(values, store, thread)):
        return read_saved(ident, values.get("tasks") or {}, values.get("goal", ""), "")


def kept_output_ids(values: Mapping[str, Any], store: Any, thread: str) -> list[str]:
    """Output ids of the run on ``thread`` that `kept_output` reads: each subtask's result and kept outputs,
    then the whole lists the fallback report kept."""
    workspace = run_workspace(values, store, thread)
    tasks = values.get("tasks") or {}
    found = []
    for task in ordered(tasks):
        if task.get("result") is not None:
            found.append(result_id(task["id"]))
        found += [output_id(task["id"], key) for key in workspace.keys(task, limit=1_000)]
    report = report_task(tasks)
    return found + [output_id(report["id"], key) for key in workspace.keys(report, limit=1_000)]
