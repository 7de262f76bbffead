"""The fault matrix's call-grain rows: a durable run killed (SIGKILL) inside tool call k of a turn of eight, then
resumed in a new process (tests/helpers/call_kill_worker.py). What must hold: the calls made twice are only calls
that were in flight at the kill; no item is lost; no subtask completed before the kill runs again.

In flight: started and not yet saved. A call's result is written by LangGraph just after the call returns, so a
call that had returned a moment before the kill may not be saved yet: such calls are counted apart ("returned,
unsaved"), from the saver's own log of its writes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: F401  (the worker's saver; imported to fail early)

from .fault_probes import Finding
from .fault_processes import ROOT, WAIT_S, databases, log_lines

WORKER = ROOT / "tests" / "helpers" / "call_kill_worker.py"
sys.path.insert(0, str(WORKER.parent))
from call_kill_worker import CALLS, build, items, killed_subtask  # noqa: E402

from replangraph.durable import open_saver  # noqa: E402


@dataclass
class Kill:
    """One kill in call ``at`` and its resume."""

    at: int
    concurrency: int
    in_flight: set[str]
    """Calls started and not saved in the killed process."""
    unsaved: set[str]
    """Of those, the calls that had returned."""
    twice: set[str]
    """Calls started in both processes."""
    lost: int
    """Items whose call's reply reached no subtask's result."""
    rerun: int
    """Subtasks completed in the checkpoint before the resume that took a model turn after it."""
    finished: bool

    @property
    def held(self) -> bool:
        return self.finished and self.twice <= self.in_flight and self.lost == 0 and self.rerun == 0


def worker(
    db: str, thread: str, log: Path, mode: str, concurrency: int, at: int | None, way: str, durability: str = "-"
) -> int:
    """Run the worker to its end (or its kill); its exit code."""
    argv = [sys.executable, str(WORKER), db, thread, str(log), mode, str(concurrency), str(at or "-"), way, durability]
    with open(f"{log}.err", "ab") as err:
        return subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, timeout=WAIT_S).returncode


def saved_completed(db: str, thread: str, log: Path, concurrency: int) -> set[str]:
    """The subtasks completed in the thread's saved checkpoint, read as a new process would."""
    with open_saver(db) as (saver, _store):
        tasks = build(saver, str(log), concurrency, None).get_state({"configurable": {"thread_id": thread}})
    return {tid for tid, t in (tasks.values.get("tasks") or {}).items() if t["status"] == "completed"}


def kill_in_call(
    db: str,
    folder: Path,
    concurrency: int,
    at: int,
    way: str = "invoke",
    durability: str = "-",
    resume_way: str | None = None,
) -> Kill:
    """Kill a run in call ``at`` of the turn of `killed_subtask`, resume it; what repeated and what was kept.
    ``durability``: the runs' ``durability=`` ("-": the graph's default, "sync" on a durable saver);
    ``resume_way``: how the resume runs (default: as the killed run, ``way``)."""
    thread = f"call-{concurrency}-{at}-{way}-{uuid.uuid4().hex[:8]}"
    log = folder / f"{thread}.log"
    code = worker(db, thread, log, "start", concurrency, at, way, durability)
    lines = log_lines(log)
    first = {f[1] for f in lines if f[0] == "KILL"}
    if code != -9 or len(first) != 1:
        raise RuntimeError(f"the worker was not killed in call {at} (exit {code}): {log.with_suffix('.log.err')}")
    killed = first.pop()
    done_before = saved_completed(db, thread, log, concurrency)
    worker(db, thread, log, "resume", concurrency, None, resume_way or way, durability)
    lines = log_lines(log)
    started = {pid: {f[2] for f in lines if f[0] == "START" and f[1] == pid} for pid in {f[1] for f in lines}}
    ended = {f[2] for f in lines if f[0] == "END" and f[1] == killed}
    saved = {f[2] for f in lines if f[0] == "SAVED" and f[1] == killed}
    in_flight = started.get(killed, set()) - saved
    again = set().union(*(s for pid, s in started.items() if pid != killed)) if len(started) > 1 else set()
    rerun = {f"s{f[2]}" for f in lines if f[0] == "MODEL" and f[1] != killed} & done_before
    result = Path(f"{log}.result.json")
    finished, lost = False, 0
    if result.exists():
        saved = json.loads(result.read_text(encoding="utf-8"))
        finished = all(status == "completed" for status in saved["statuses"].values())
        text = "\n".join(saved["results"].values())
        lost = sum(f"appended {item}" not in text for n in range(1, 2 * concurrency + 1) for item in items(n))
    twice = started.get(killed, set()) & again
    return Kill(at, concurrency, in_flight, in_flight & ended, twice, lost, len(rerun), finished)


def kills_in_calls(args: argparse.Namespace) -> Finding:
    """The row: kills in calls 1..8 (``--quick``: 1 and 8) at max_concurrency 1 and 4, on each database; under
    ``invoke``, and under ``ainvoke`` for calls 1 and 8 at 4 (not with ``--quick``: the system test
    tests/system/test_call_grain_kills.py covers ``ainvoke``)."""
    moments = (1, CALLS) if args.quick else tuple(range(1, CALLS + 1))
    asynchronous = () if args.quick else (1, CALLS)
    figures, held = [], True
    with tempfile.TemporaryDirectory() as folder:
        for name, db in databases(args, folder).items():
            runs = [kill_in_call(db, Path(folder), c, at) for c in (1, 4) for at in moments]
            tail = [kill_in_call(db, Path(folder), 4, at, "ainvoke") for at in asynchronous]
            held &= all(k.held for k in [*runs, *tail])
            for concurrency in (1, 4):
                mine = [k for k in runs if k.concurrency == concurrency]
                figures.append(
                    f"{name}, max_concurrency {concurrency}: made twice / in flight (returned, unsaved) per kill "
                    + " ".join(f"{len(k.twice)}/{len(k.in_flight)} ({len(k.unsaved)})" for k in mine)
                    + f", twice outside in flight {sum(len(k.twice - k.in_flight) for k in mine)}"
                    + f", items lost {sum(k.lost for k in mine)}, completed re-run {sum(k.rerun for k in mine)}"
                    + f", whole {sum(k.finished for k in mine)}/{len(mine)}"
                )
            if not tail:
                continue
            figures.append(
                f"{name}, ainvoke at 4: "
                + " ".join(f"{len(k.twice)}/{len(k.in_flight)} ({len(k.unsaved)})" for k in tail)
                + f", held {sum(k.held for k in tail)}/{len(tail)}"
            )
    return Finding(
        held,
        f"kills in call {', '.join(map(str, moments))} of {CALLS} at subtask {killed_subtask(1)}/"
        + (f"{killed_subtask(4)}; " + "; ".join(figures)),
    )
