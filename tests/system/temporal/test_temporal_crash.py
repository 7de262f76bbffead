"""A worker killed with SIGKILL in the middle of a run on Temporal: another worker takes the run over; no subtask
is lost, and the only tool calls made twice are those the killed worker had in flight."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from temporal_support import new_queue, on_temporal, worker_process

pytestmark = pytest.mark.system  # a Temporal dev server and worker processes

SUBTASKS = 8
CALL_S = 2.0


def log_lines(log: Path) -> list[tuple[str, int, str]]:
    if not log.exists():
        return []
    return [(kind, int(pid), item) for kind, pid, item in (line.split() for line in log.read_text().splitlines())]


def test_a_killed_worker_loses_nothing_and_repeats_only_its_calls_in_flight(temporal_address, tmp_path):
    log = tmp_path / "calls.log"
    queue = new_queue()
    args = (str(SUBTASKS), str(log), str(CALL_S))
    factory = "temporal_graphs:logged_calls"
    with (
        worker_process(temporal_address, queue, factory, *args) as first,
        worker_process(temporal_address, queue, factory, *args) as second,
    ):
        workers = {first.pid: first, second.pid: second}
        killed: dict[str, object] = {}

        def kill_when_calls_run() -> None:  # the worker with the most calls in flight dies while they run
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(kind == "START" for kind, _, _ in log_lines(log)):
                time.sleep(0.05)
            time.sleep(CALL_S / 4)  # the other calls of the wave start
            lines = log_lines(log)
            victim = max(workers, key=lambda pid: len(in_flight(lines, pid)))
            os.kill(victim, signal.SIGKILL)
            killed["pid"] = victim
            killed["in_flight"] = in_flight(lines, victim)

        killer = threading.Thread(target=kill_when_calls_run)
        killer.start()
        out, _, _ = on_temporal(temporal_address, queue, "work on the items")
        killer.join()
    assert killed, "no call started"
    assert killed["in_flight"], "the worker was killed with no call in flight"
    assert {t["status"] for t in out["tasks"].values()} == {"completed"}  # lost: 0
    assert len(out["tasks"]) == SUBTASKS
    assert out["final_answer"].count(" done") == SUBTASKS
    lines = log_lines(log)
    started = Counter(item for kind, _, item in lines if kind == "START")
    twice = {item for item, times in started.items() if times > 1}
    assert set(started) == {f"item-{n}" for n in range(SUBTASKS)}
    # the calls the killed worker had started and not ended (at the kill, or after: before it died)
    assert twice <= in_flight(lines, killed["pid"])
    assert max(started.values()) <= 2
    # every call in flight at the kill ran again elsewhere, to its end
    ended_elsewhere = {item for kind, pid, item in lines if kind == "END" and pid != killed["pid"]}
    assert killed["in_flight"] <= ended_elsewhere
    print(f"killed {killed['pid']}: {len(killed['in_flight'])} in flight, made twice {sorted(twice)}")


def in_flight(lines: list[tuple[str, int, str]], pid: int) -> set[str]:
    """Calls ``pid`` started and did not end."""
    begun = {item for kind, p, item in lines if kind == "START" and p == pid}
    return begun - {item for kind, p, item in lines if kind == "END" and p == pid}
