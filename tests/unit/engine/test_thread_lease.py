"""`replangraph.durable.thread_lease`: one holder of a thread at a time, renewed while held, released at the end,
taken over once expired; each lease on a connection of its own, as two processes would hold them. On SQLite
and (marked ``system``) on PostgreSQL."""

from __future__ import annotations

import time

import pytest

from replangraph.durable import (
    LEASE_TABLE,
    LEASE_TTL_ENV,
    LeaseLost,
    ThreadBusy,
    lease_ttl,
    open_lease_table,
    thread_lease,
)

GUARD_S = 30
"""How long a test waits for what must happen long before (a renewal, an expiry): a guard, not a timing."""


def row(db: str, thread: str) -> tuple[str, float] | None:
    """``(owner, expires_at)`` of the thread's lease, read on a new connection."""
    with open_lease_table(db) as table:
        rows, _ = table.run(f"SELECT owner, expires_at FROM {LEASE_TABLE} WHERE thread_id = ?", (thread,))
    return tuple(rows[0]) if rows else None


def db_now(db: str) -> float:
    """The lease clock of ``db``: PostgreSQL's, or this process's for SQLite."""
    with open_lease_table(db) as table:
        return table.run("SELECT lease_now()")[0][0][0]


def wait_until(condition, what: str):
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.01)
    pytest.fail(f"no {what} within {GUARD_S}s")


def test_one_holder_at_a_time_and_the_end_of_the_block_frees_the_thread(durable_db):
    with thread_lease(durable_db, "t1") as held:
        with pytest.raises(ThreadBusy) as refused, thread_lease(durable_db, "t1"):
            pytest.fail("a second holder got the lease")
        assert refused.value.owner == held.owner and refused.value.thread_id == "t1"
        assert row(durable_db, "t1")[0] == held.owner
        with thread_lease(durable_db, "t2") as other:  # another thread is another lease
            assert other.owner != held.owner
    assert row(durable_db, "t1") is None and row(durable_db, "t2") is None
    with thread_lease(durable_db, "t1") as again:
        assert row(durable_db, "t1")[0] == again.owner


def test_the_holder_renews_its_lease_while_it_holds_it(durable_db):
    with thread_lease(durable_db, "t1", ttl_s=0.6) as held:
        first = row(durable_db, "t1")[1]
        later = wait_until(lambda: (found := row(durable_db, "t1")) and found[1] > first and found, "renewal")
        assert later[0] == held.owner and not held.lost.is_set()
        with pytest.raises(ThreadBusy), thread_lease(durable_db, "t1"):
            pass


def test_a_crashed_holders_lease_is_taken_over_once_it_expired(durable_db):
    with open_lease_table(durable_db) as table:  # a holder that crashed: it will never renew
        assert table.take("t1", "gone-host:4242:dead", 60)[0] == "gone-host:4242:dead"
    with pytest.raises(ThreadBusy) as refused, thread_lease(durable_db, "t1", wait_s=0.05):
        pass
    assert "(pid 4242 on gone-host)" in str(refused.value)

    with open_lease_table(durable_db) as table:
        table.run(f"UPDATE {LEASE_TABLE} SET expires_at = lease_now() + 0.2 WHERE thread_id = 't1'")
    expires_at = row(durable_db, "t1")[1]
    with thread_lease(durable_db, "t1", wait_s=GUARD_S) as taken:
        assert db_now(durable_db) >= expires_at
        assert row(durable_db, "t1")[0] == taken.owner


def steal(db: str) -> None:
    """Another process takes the lease, as if its holder had stalled past its TTL."""
    with open_lease_table(db) as table:
        table.run(f"UPDATE {LEASE_TABLE} SET owner = 'other-host:4343:new', expires_at = lease_now() + 60")


def test_a_holder_whose_lease_was_taken_is_told_and_leaves_the_new_holders_lease(durable_db):
    with thread_lease(durable_db, "t1", ttl_s=0.3) as held:
        held.check()  # held: nothing to say
        steal(durable_db)
        assert held.lost.wait(GUARD_S)  # the heartbeat found out
    assert row(durable_db, "t1")[0] == "other-host:4343:new"


def test_check_between_steps_finds_a_taken_lease_at_once(durable_db, monkeypatch):
    monkeypatch.delenv(LEASE_TTL_ENV, raising=False)
    with thread_lease(durable_db, "t1") as held:  # renewed every 10 s: the check, not the heartbeat, finds out
        steal(durable_db)
        with pytest.raises(LeaseLost) as lost:
            held.check()
    assert str(lost.value) == (
        "This process's lease of thread 't1' went unrenewed for over 30 s and another process (pid 4343 on "
        "other-host) took the thread: this run stops here so that only one process runs it."
    )
    assert row(durable_db, "t1")[0] == "other-host:4343:new"


def test_the_lease_ttl_is_a_positive_number_of_seconds(monkeypatch):
    monkeypatch.delenv(LEASE_TTL_ENV, raising=False)
    assert lease_ttl() == 30.0 and lease_ttl(2) == 2.0
    monkeypatch.setenv(LEASE_TTL_ENV, "5")
    assert lease_ttl() == 5.0 and lease_ttl(1.5) == 1.5
    for bad in ("soon", "0", "-1", "inf", "nan"):
        monkeypatch.setenv(LEASE_TTL_ENV, bad)
        with pytest.raises(ValueError, match=rf"\$REPLANGRAPH_LEASE_TTL_S must be a positive number .*'{bad}'"):
            lease_ttl()
    with pytest.raises(ValueError, match="ttl_s must be a positive number of seconds, not 0"):
        lease_ttl(0)


def test_the_busy_message_says_who_until_when_and_what_to_do():
    busy = ThreadBusy("job-7", "worker-3.example:812:ab12cd34", 1_800_000_000.5)
    assert str(busy) == (
        "Thread 'job-7' is being run by another process (pid 812 on worker-3.example), whose lease on it lasts "
        "until 08:00:00 UTC and is renewed while it runs: wait for that run to end, or, if that process is gone, "
        "try again after 08:00:00 UTC."
    )
