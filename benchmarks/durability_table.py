"""Table 4 of the engine benchmark (``python -m benchmarks engine``): what ``durability="sync"``, the default on a
durable checkpointer, costs beside LangGraph's ``"async"``, on SQLite.

Table 2's run of N items, both modes in one process, alternating, each run on a new file; the saver's writes are
counted and timed, since on a shared machine the wall time varies more than the difference.
"""

from __future__ import annotations

import functools
import sqlite3
import statistics
import tempfile
import time
from collections import Counter as Tally
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from langgraph.checkpoint.sqlite import SqliteSaver

from replangraph import build_graph

from .engine import completed, config_for, independent_plan, min_median, read_then_report, reader, scripted

DURABILITY_TASKS = 100


def counting_writes(saver: Any) -> Tally:
    """Count ``saver``'s ``put`` (checkpoints) and ``put_writes`` (a task's writes) calls from now on, and the
    seconds they take (``put_s``, ``put_writes_s``)."""
    calls: Tally = Tally()

    def counted(name: str, write: Callable) -> Callable:
        @functools.wraps(write)  # keeps the signature LangGraph inspects
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            started = time.perf_counter()
            try:
                return write(*args, **kwargs)
            finally:
                calls[f"{name}_s"] += time.perf_counter() - started

        return call

    for name in ("put", "put_writes"):
        setattr(saver, name, counted(name, getattr(saver, name)))
    return calls


def durability_run(n: int, path: Path, durability: str) -> dict:
    """Table 2's run of ``n`` items on a new SQLite file at ``path`` with ``durability``: wall time, the writes
    and the seconds spent in them."""
    connection = sqlite3.connect(str(path), check_same_thread=False)
    saver = SqliteSaver(connection)
    writes = counting_writes(saver)
    graph = build_graph(
        scripted(independent_plan(n, "Read"), read_then_report),
        tools=[reader(None)],
        config=config_for(n),
        checkpointer=saver,
    )
    started = time.perf_counter()
    state = graph.invoke(
        {"messages": [("user", f"Read items 1 to {n}.")]}, {"configurable": {"thread_id": "d"}}, durability=durability
    )
    wall = time.perf_counter() - started
    connection.close()
    if completed(state) != n:
        raise RuntimeError(f"only {completed(state)}/{n} subtasks completed with durability={durability}")
    return {"wall_s": wall, **writes}


def durability_table(n: int, runs: int, out: TextIO) -> dict[str, float]:
    """Print table 4 (both modes in this process, alternating, each run on a new file); median ms per subtask."""
    print(
        f"**4. Durability on SQLite** ({n} independent subtasks as in table 2, in one process, "
        f"{runs} run(s) of each mode, alternating, each on a new file, after a warm-up run)\n",
        file=out,
    )
    print(
        "| durability | ms per subtask (min / median) | × async (median) | checkpoints / task writes per subtask "
        "| ms in those writes per subtask (min / median) |",
        file=out,
    )
    print("|---|---|---|---|---|", file=out)
    results: dict[str, list[dict]] = {"sync": [], "async": []}
    with tempfile.TemporaryDirectory() as folder:
        durability_run(5, Path(folder) / "warm-up.sqlite", "sync")  # imports and first-call costs, not timed
        for run in range(runs):
            for mode in results:
                results[mode].append(durability_run(n, Path(folder) / f"{mode}-{run}.sqlite", mode))
    medians = {mode: statistics.median(r["wall_s"] for r in rows) * 1e3 / n for mode, rows in results.items()}
    for mode, rows in results.items():
        per = [r["wall_s"] * 1e3 / n for r in rows]
        writes = f"{rows[0]['put'] / n:.1f} / {rows[0]['put_writes'] / n:.1f}"
        writing = [(r["put_s"] + r["put_writes_s"]) * 1e3 / n for r in rows]
        print(
            f"| {mode} | {min_median(per, '.2f')} | {medians[mode] / medians['async']:.2f}× | {writes} "
            f"| {min_median(writing, '.2f')} |",
            file=out,
            flush=True,
        )
    print(file=out)
    return medians
