"""A durable run killed inside one of a turn's eight tool calls repeats only the calls in flight at the kill.

Every call to an agent's own tool runs as a LangGraph task of its own (`replangraph.nodes.execution.calls`), so its
result is written as soon as it returns. The run is `call_kill_worker.py` in a subprocess, killed with SIGKILL in
call 8 of the second wave's first turn and resumed in a new process; the log tells which calls each process
started and which results the saver had written. In flight at the kill: the calls running, and those that had
returned while their result was still being written. On SQLite and PostgreSQL, under ``invoke`` and ``ainvoke``, with
``durability`` "sync" and "async".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.fault_calls import kill_in_call

pytestmark = pytest.mark.system  # worker processes (and PostgreSQL for `durable_db`)


@pytest.mark.parametrize("durable_db", ["sqlite", "postgres"], indirect=True)
@pytest.mark.parametrize("way", ["invoke", "ainvoke"])
@pytest.mark.parametrize("durability", ["sync", "async"])
def test_a_kill_in_a_call_repeats_only_the_calls_in_flight(durable_db, way, durability, tmp_path):
    kill = kill_in_call(durable_db, Path(tmp_path), concurrency=4, at=8, way=way, durability=durability)
    assert kill.finished and kill.lost == 0 and kill.rerun == 0
    assert kill.twice <= kill.in_flight  # nothing saved before the kill ran again
    # in flight: the calls running (four at once, the killed one included) and those whose result was still being
    # written; every call saved before the kill ran once
    assert "s5-item8" in kill.in_flight and len(kill.in_flight - kill.unsaved) <= 4
    # call 1 returned well before the kill (call n takes n x 20 ms; call 8 starts when call 4 returns): kept
    assert "s5-item1" not in kill.twice


def test_one_call_at_a_time_repeats_one(tmp_path):
    kill = kill_in_call(str(tmp_path / "runs.sqlite"), Path(tmp_path), concurrency=1, at=8)
    assert kill.finished and kill.lost == 0 and kill.rerun == 0
    assert kill.twice == kill.in_flight == {"s2-item8"}


def test_a_run_killed_under_invoke_finds_its_saved_calls_under_ainvoke(tmp_path):
    """The sync and async paths name a call's task alike, so the resume's path does not matter."""
    kill = kill_in_call(str(tmp_path / "runs.sqlite"), Path(tmp_path), concurrency=4, at=8, resume_way="ainvoke")
    assert kill.finished and kill.lost == 0 and kill.rerun == 0
    assert kill.twice <= kill.in_flight and "s5-item1" not in kill.twice
