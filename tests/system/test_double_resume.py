"""One runner per thread, across processes: a second process resuming a thread that another one runs is refused
and runs nothing; when the runner is killed, its lease expires and the next runner finishes the work. On SQLite
and on PostgreSQL.

The runs are `durable_worker.py` processes holding the thread's lease (``$DURABLE_WORKER_LEASE_TTL``); every
model and tool call is a line in a log, with the process id, as in test_kill_resume.py. Without the lease (as in
0.8.0) the second process resumed the thread too and ran all the work left a second time.
"""

from __future__ import annotations

import socket
from collections import Counter

import pytest
from durable_worker import CONFIG, EXIT_BUSY, ITEMS, LEASE_ENV, LEASE_WAIT_ENV, task_id
from test_kill_resume import (  # noqa: F401  (`workers` is the fixture)
    WAIT_S,
    assert_complete,
    finished,
    held_after_three,
    kill,
    log_lines,
    read_back,
    wait_for,
    workers,
)

from replangraph.durable import LEASE_TABLE, open_lease_table

pytestmark = pytest.mark.system  # worker processes (and PostgreSQL for `durable_db`)

TTL_S = 3.0
"""The workers' lease: renewed every second, so a loaded machine does not let it lapse while its holder runs."""


def lease_row(db: str, thread: str) -> tuple[str, float] | None:
    """``(owner, expires_at)`` of the thread's lease, or None."""
    with open_lease_table(db) as table:
        rows, _ = table.run(f"SELECT owner, expires_at FROM {LEASE_TABLE} WHERE thread_id = ?", (thread,))
    return tuple(rows[0]) if rows else None


def lines_of(lines: list[list[str]], pid: int) -> list[list[str]]:
    return [f for f in lines if f[1] == str(pid)]


def test_a_second_runner_is_refused_and_a_killed_runners_lease_expires(durable_db, workers, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv(LEASE_ENV, str(TTL_S))
    log = tmp_path / "job.log"
    first = workers.start(durable_db, "job", log, "start", hold_after=3)
    wait_for(log, first, workers, held_after_three, "HELD line after three DONE lines")

    # A second process resumes the thread while the first runs it: refused at once, no call made.
    second = workers.start(durable_db, "job", log, "resume")
    assert second.wait(timeout=WAIT_S) == EXIT_BUSY, workers.output(second)
    said = lines_of(log_lines(log), second.pid)
    assert [f[0] for f in said] == ["BUSY"], said
    message = said[0][2]
    assert message.startswith(f"Thread 'job' is being run by another process (pid {first.pid} on ")
    assert f"on {socket.gethostname()}), whose lease on it lasts until " in message
    assert message.endswith(" UTC.") and "if that process is gone, try again after" in message

    # The first is killed mid-superstep: its lease stays until it expires, then a runner that waits takes over.
    kill(first)
    owner, expires_at = lease_row(durable_db, "job")
    assert owner.split(":")[-2] == str(first.pid)
    monkeypatch.setenv(LEASE_WAIT_ENV, str(WAIT_S))
    third = workers.start(durable_db, "job", log, "resume")
    workers.finish(third)
    lines = log_lines(log)
    leased_at = float(next(f[2] for f in lines_of(lines, third.pid) if f[0] == "LEASED"))
    assert leased_at >= expires_at - 0.05  # the same clock: the process's, or PostgreSQL's on this machine
    assert lease_row(durable_db, "job") is None  # released when the run ended

    # The work ran once in total: only the answers in flight at the kill were made again.
    answered = Counter(f[3] for f in lines if f[0] == "DONE")
    assert set(answered) == set(ITEMS)
    twice = [item for item, n in answered.items() if n > 1]
    assert len(twice) <= CONFIG.max_concurrency, answered
    assert all(f[1] in (str(first.pid), str(third.pid)) for f in lines if f[0] in ("CALL", "TOOL", "DONE"))
    values, _, whole = read_back(durable_db, log, "job")
    assert_complete(values, whole, finished(log)["final_answer"])
    assert {task_id(item) for item in ITEMS} == set(values["tasks"])
    print(
        f"\nthread lease: second runner refused (exit {EXIT_BUSY}, 0 calls); killed holder's lease taken over "
        f"{leased_at - expires_at:+.2f}s after it expired (TTL {TTL_S:g}s); subtask answers "
        f"{sum(answered.values())} for {len(ITEMS)} subtasks (made twice, in flight at the kill: {twice})"
    )
