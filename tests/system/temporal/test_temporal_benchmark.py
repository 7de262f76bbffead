"""The Temporal benchmark (`benchmarks/temporal_table.py`): how it counts, without a server, and one tiny run of it
end to end on a loopback dev server, in a process of its own (structure and the targets that must hold; no
timing is asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from temporal_support import need_temporal

from benchmarks import temporal_table as bench
from benchmarks.__main__ import BENCHMARKS

ROOT = Path(__file__).resolve().parents[3]


def test_temporal_is_registered_and_quick_is_small_with_one_run():
    assert BENCHMARKS["temporal"] == "benchmarks.temporal_table"
    quick, full = bench.parse(["--quick"]), bench.parse([])
    assert (quick.tasks, quick.sleep, quick.runs) == (bench.QUICK_TASKS, bench.QUICK_SLEEP_S, 1)
    assert (full.tasks, full.sleep, full.runs, full.workers) == (32, 1.0, 3, [1, 2, 4])


def test_the_call_log_counts_calls_started_twice_and_skips_a_torn_line(tmp_path):
    log = tmp_path / "calls.log"
    out = bench.CallLog(log)
    for kind, item in (("START", 1), ("END", 1), ("START", 2), ("START", 2), ("END", 2), ("START", 3)):
        out.write(kind, item)
    with log.open("a") as f:
        f.write("START\t1\t4")  # a line the kill cut short
    lines = bench.log_lines(log, 0)
    assert [(kind, item) for kind, _, item, _ in lines][-1] == ("START", 3)
    assert bench.counted(lines) == 1  # item 2
    assert bench.log_lines(log, bench.log_size(log)) == []  # the next run reads from the end


def test_calls_at_once_are_counted_between_a_start_and_its_end():
    overlapping = [("START", 7, 1, 0.0), ("START", 7, 2, 0.5), ("END", 7, 1, 1.0), ("END", 7, 2, 1.5)]
    assert bench.peak(overlapping) == 2
    killed = [("START", 8, 3, 0.1), ("START", 8, 4, 0.2)]  # a killed worker's: never ended
    assert bench.peak([*overlapping, *killed, ("START", 7, 5, 2.0), ("END", 7, 5, 3.0)]) == 2


def activity(name, subtask, scheduled_id, completed_id=None, answer=False, **fields):
    return bench.Activity(
        name, subtask, float(scheduled_id), scheduled_id, completed_id=completed_id, answer=answer, **fields
    )


def test_a_subtask_is_re_run_when_an_activity_of_its_is_scheduled_after_its_answer_completed():
    ok = [
        activity("executor", "1", 5, 7),
        activity("arun_call", "1", 8, 9, item=1),
        activity("executor", "1", 10, 12, answer=True),
    ]
    assert bench.completed_rerun(ok) == set()
    again = [*ok, activity("executor", "1", 13, 14, answer=True), activity("executor", "2", 6, 11, answer=True)]
    assert bench.completed_rerun(again) == {"1"}


def test_in_flight_at_the_kill_are_the_killed_worker_s_calls_it_never_completed():
    victim, other = 100, 200
    lines = [
        ("START", victim, 1, 0.0),
        ("START", victim, 2, 0.0),
        ("END", victim, 2, 1.0),  # returned, but its activity's completion never reached Temporal
        ("START", victim, 3, 0.0),
        ("END", victim, 3, 1.0),  # returned and completed
        ("START", other, 1, 5.0),
        ("START", other, 2, 5.0),
        ("START", other, 4, 5.0),
        ("START", other, 4, 6.0),  # a call run twice on a worker nobody killed
    ]
    completed_by = {1: other, 2: other, 3: victim, 4: other}
    calls = [
        activity("arun_call", str(item), item, 10 + item, item=item, pid=pid) for item, pid in completed_by.items()
    ]
    for call in calls:
        call.completed = float(call.completed_id)
    kill = bench.Kill(workers=None, log=Path("-"), offset=0, after=1, settle_s=0.0, victim=victim)
    run = bench.Run(wall=1.0, lost=0, twice=bench.counted(lines))
    kill.figures(run, lines, calls)
    assert (run.in_flight, run.ended_unreported, run.twice, run.twice_outside) == (2, 1, 3, 1)


def test_the_verdict_fails_only_on_what_must_hold_and_judges_wall_time_at_full_size():
    fine = bench.Row("Temporal", 2, [bench.Run(wall=4.0, lost=0)], serial_s=32.0)
    crash = bench.Row("crash", 2, [bench.Run(wall=9.0, lost=0, twice=3, in_flight=4)], serial_s=32.0, crash=True)
    line, held = bench.verdict([fine, crash], judged=True, baseline=2.0)  # in-process: 2 s
    assert held and line.startswith("targets met: 4 of 5") and "(2.00×) ✗" in line
    assert "(1.33×) ✓" in bench.verdict([fine, crash], judged=True, baseline=3.0)[0]
    line, held = bench.verdict([fine, crash], judged=False, baseline=2.0)
    assert held and line.startswith("targets met: 4 of 4") and "not judged" in line
    crash.runs[0].twice_outside = 1  # one call run twice was not in flight
    assert bench.verdict([fine, crash], judged=False, baseline=2.0)[1] is False
    crash.runs[0].twice_outside, crash.runs[0].twice = 0, 5  # more run twice than were in flight
    assert bench.verdict([fine, crash], judged=False, baseline=2.0)[1] is False
    crash.runs[0].twice = 3
    fine.runs[0].lost = 1
    assert "lost 0 ✗" in bench.verdict([fine, crash], judged=False, baseline=2.0)[0]


def test_in_flight_at_a_server_kill_are_the_calls_started_before_it_and_completed_after_it():
    lines = [
        ("START", 7, 1, 0.0),
        ("END", 7, 1, 0.5),  # done and reported before the kill
        ("START", 7, 2, 0.5),
        ("END", 7, 2, 1.5),  # returned before the kill (at 2.0), its report lost with the server
        ("START", 7, 3, 1.0),  # running at the kill
        ("START", 7, 3, 14.0),  # run again: it was in flight
        ("START", 7, 4, 15.0),  # started after the kill
        ("START", 7, 4, 16.0),  # run twice though not in flight
    ]
    completed = {1: 0.6, 2: 13.0, 3: 15.0, 4: 17.0}
    calls = [activity("arun_call", str(item), item, 10 + item, item=item) for item in completed]
    for call in calls:
        call.completed = completed[call.item]
    kill = bench.ServerKill(server=None, log=Path("-"), offset=0, after=1, settle_s=0.0, at=2.0)
    run = bench.Run(wall=1.0, lost=0, twice=bench.counted(lines))
    kill.figures(run, lines, calls)
    assert (run.in_flight, run.ended_unreported, run.twice, run.twice_outside) == (2, 1, 2, 1)


@pytest.mark.system
@pytest.mark.skipif(bool(os.environ.get("CI")), reason="CI runs python -m benchmarks temporal --quick itself (.ci/run)")
def test_a_tiny_benchmark_runs_every_row_and_what_must_hold_holds():
    """4 subtasks x 0.3 s on 1 and 2 workers, in-process beside them, and the crash rows (a worker SIGKILLed in the
    second wave of calls, restarted; the server SIGKILLed, restarted on its state): every subtask completes, none
    re-run, calls twice only those in flight."""
    need_temporal()
    argv = ["--tasks", "4", "--sleep", "0.3", "--runs", "1", "--workers", "1", "2", "--no-size"]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "temporal", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = table(done.stdout)
    crash = "Temporal, max_concurrency 2: a worker SIGKILLed, restarted"
    server = "Temporal, max_concurrency 2: the server SIGKILLed, restarted"
    assert [(r["row"], r["workers"]) for r in rows] == [
        ("in-process `invoke`", "—"),
        ("in-process `ainvoke`", "—"),
        ("Temporal", "1"),
        ("Temporal", "2"),
        (crash, "2"),
        (server, "2"),
    ]
    for row in rows:
        assert (row["subtasks lost"], row["completed re-run"]) == ("0", "0"), row
        if row["row"].startswith("Temporal"):
            assert int(row["activities"]) > 4 * 3  # each subtask: two model turns and a call, at least
            assert sum(map(int, row["calls by worker (last run)"].split("/"))) >= 4
    for row in rows[-2:]:
        twice, in_flight = map(int, row["calls run twice (/ in flight at the kill)"].split(" / "))
        assert twice <= in_flight
    assert "Crash row, over 1 run(s)" in done.stdout and "Server-kill row, over 1 run(s)" in done.stdout
    assert "targets met: 4 of 4" in done.stdout


def table(text: str) -> list[dict[str, str]]:
    """The benchmark's table, a dict per row keyed by the header's cells."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    split = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]
    return [dict(zip(split[0], cells, strict=True)) for cells in split[1:]]
