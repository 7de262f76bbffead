"""`python -m benchmarks faults --quick`: the fault matrix prints one row per probe of the review, with figures,
and every probe that must hold on this code holds (a *pending* probe waits for a branch not yet merged)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.faults import HEADER, PROBES

pytestmark = pytest.mark.system  # processes, loopback servers, SQLite files

ROOT = Path(__file__).resolve().parents[2]
FIGURES = {
    "failed-child": r"recovery paths run 4/4 .*answers lost 0; .*handed-off children failed \d+, items lost 0 ",
    "window-outputs": r"60 items(.*kept 0 times 0, twice 0; in the result 60){4}",
    "huge-call": r"refused True; subtasks \{'1': 'completed', '1_dyn_0': 'completed'\}.*equal True.*equal True",
    "huge-report": r"report [\d,]+ characters \(cap 300,000\); whole lists read back by id: 5,000 of 5,000",
    "workspace-attacks": r"refused 3/3 .*changed 0; .*largest size seen 2,000; .*reads outside 0, listings outside "
    r"0, files outside changed 0",
    "process-exit": r"invoke: run [\d.]+ s, process exited [\d.]+ s after its end; "
    r"ainvoke: run [\d.]+ s, process exited [\d.]+ s after its end",
    "kill-in-call": r"(SQLite, max_concurrency [14]: made twice / in flight .*twice outside in flight 0, items lost 0, "
    r"completed re-run 0, whole 2/2.*){2}",
}
"""What the figures of issue 23's later rows (13-17) and of rows 18-19 must say: the row's own numbers, not only
its verdict."""


def table_rows(text: str) -> list[list[str]]:
    """The cells of each row of the table under `HEADER`."""
    lines = text.splitlines()
    start = lines.index(HEADER) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_the_quick_fault_matrix_has_a_row_per_probe_and_what_must_hold_holds():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "faults", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    rows = table_rows(done.stdout)
    assert [row[1] for row in rows] == [probe.name for probe in PROBES], done.stdout + done.stderr[-3000:]
    assert re.search(r"^Machine: .*\d+ cores.*\d{4}-\d\d-\d\d", done.stdout, flags=re.M)
    for number, (row, probe) in enumerate(zip(rows, PROBES, strict=True), 1):
        assert len(row) == 7 and row[0] == str(number), row
        assert re.search(r"\d", row[4]) and "probe crashed" not in row[4], row  # figures, not a bare verdict
        assert row[5] in ("pass", "FAIL"), row
        assert row[6] == (f"until {probe.pending}" if probe.pending else ""), row
    for row in rows:
        if row[1] in FIGURES:
            assert re.search(FIGURES[row[1]], row[4]), row
    must_hold = [row for row, probe in zip(rows, PROBES, strict=True) if not probe.pending]
    assert [row[1] for row in must_hold if row[5] != "pass"] == [], done.stdout
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    pending = [f"{row[1]}: {row[5]}" for row, probe in zip(rows, PROBES, strict=True) if probe.pending]
    print("\npending probes (flip when their branch is merged): " + ", ".join(pending))
