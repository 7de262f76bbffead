"""The splits benchmark: what a run that splits its work costs per subtask as the queue grows.

    python -m benchmarks splits                  # 100, 1,000, 5,000, 20,000 items; check off at 1,000, 5,000
    python -m benchmarks splits --quick          # 100 and 500 items (CI)
    python -m benchmarks splits --sizes 1000 --check-off

The lazy-catalog world: the `lazy` persona reads 5 products and stops ("I have collected
enough data"); the completion check (on by default) finds the rest missing and queues it as
follow-ups split from the first subtask, N/5 of them, each of which reads its 5. With the check
off, the `compliant` persona makes the same shape itself: it reads 5, reviews the plan and hands
off the rest with ``split_and_handoff``. Every run is checkpointed to SQLite, each size in a fresh
process (after an unmeasured warm-up run of 25 items); the figures are the process's CPU time (not
wall) per subtask, the run's wall time and the database's bytes per subtask. The scripted model
answers at once, so the CPU is the engine's.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from langgraph.checkpoint.sqlite import SqliteSaver

from replangraph import AgentConfig, build_graph

from .engine import database_bytes, mark
from .persona_table import machine
from .personas import persona
from .worlds import CatalogWorld

ROOT = Path(__file__).resolve().parent.parent
SIZES = (100, 1_000, 5_000, 20_000)
CHECK_OFF_SIZES = (1_000, 5_000)
QUICK_SIZES = (100, 500)
LARGEST_WALL_S = 120.0
WARM_UP_ITEMS = 25
"""Each child process first runs this many items, unmeasured, so the rows compare work per subtask alone."""


def limits_for(n: int) -> dict[str, int]:
    """Batches of one page (5 items, so N/5 subtasks), room for them and their model calls; every other
    setting is the default."""
    return {"batch_size": 5, "max_tasks": n // 5 + 20, "max_steps": 10 * n + 100}


def split_run(n: int, path: Path, check: bool = True) -> dict:
    """One split run over ``n`` catalog items on SQLite at ``path``: CPU and wall seconds, database bytes, subtasks."""
    world = CatalogWorld(n)
    model = persona("lazy" if check else "compliant", world).model()
    config = AgentConfig(verify_results=check, retry_backoff_s=0.01, **limits_for(n))
    connection = sqlite3.connect(str(path), check_same_thread=False)
    graph = build_graph(model, tools=world.tools, config=config, checkpointer=SqliteSaver(connection))
    cpu, wall = time.process_time(), time.perf_counter()
    state = graph.invoke({"messages": [("user", world.goal)]}, {"configurable": {"thread_id": "splits"}})
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    connection.close()
    tasks = state["tasks"].values()
    return {
        "n": n,
        "check": check,
        "subtasks": len(tasks),
        "completed": sum(t["status"] == "completed" for t in tasks),
        "cpu_s": cpu,
        "wall_s": wall,
        "db_bytes": database_bytes(path),
    }


def split_in_child(n: int, check: bool = True, max_seconds: float = 900.0) -> dict:
    """`split_run` in a fresh interpreter; ``{"error": ...}`` when it fails or runs past ``max_seconds``."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "benchmarks", "splits", "--child", str(n), str(Path(folder) / "db")]
        command += [] if check else ["--check-off"]
        try:
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=max_seconds)
        except subprocess.TimeoutExpired:
            return {"n": n, "check": check, "error": f"timed out after {max_seconds:g} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"n": n, "check": check, "error": f"failed: {last[:120]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def split_row(result: dict) -> str:
    """One table row: N, check, subtasks, CPU, CPU per subtask, wall, bytes per subtask, completed."""
    check = "on" if result["check"] else "off"
    if "error" in result:
        return f"| {result['n']:,} | {check} | {result['error']} | | | | | |"
    per = result["subtasks"] or 1
    return (
        f"| {result['n']:,} | {check} | {result['subtasks']:,} | {result['cpu_s']:.1f} "
        f"| {result['cpu_s'] / per * 1e3:.1f} | {result['wall_s']:.1f} | {result['db_bytes'] / per:,.0f} "
        f"| {result['completed']}/{result['subtasks']} {mark(result['completed'] == result['subtasks'])} |"
    )


def split_targets(results: list[dict]) -> str:
    """The verdicts: CPU and bytes per subtask flat within ±30 % (max/min ≤ 1.3); 20,000 items under 120 s."""
    if not results or any("error" in r for r in results):
        return "Targets ✗ (a row did not finish)"
    cpu = [r["cpu_s"] / r["subtasks"] for r in results]
    size = [r["db_bytes"] / r["subtasks"] for r in results]
    cpu_flat, size_flat = max(cpu) / min(cpu), max(size) / min(size)
    largest = max(results, key=lambda r: r["n"])
    fast = f"{largest['n']:,} items in {largest['wall_s']:.0f} s"
    judged = mark(largest["wall_s"] < LARGEST_WALL_S) if largest["n"] >= 20_000 else "(judged at 20,000)"
    return (
        f"CPU per subtask, max/min: {cpu_flat:.2f} (target ≤ 1.3) {mark(cpu_flat <= 1.3)}; "
        f"bytes per subtask, max/min: {size_flat:.2f} (target ≤ 1.3) {mark(size_flat <= 1.3)}; "
        f"{fast} (target under {LARGEST_WALL_S:.0f} s at 20,000) {judged}"
    )


def split_table(sizes: Sequence[int], check: bool, max_seconds: float, out: TextIO) -> list[dict]:
    """Print one table (each row a fresh process); its rows' results."""
    head = "| N items | check | subtasks | CPU s | CPU ms per subtask | wall s | bytes per subtask | completed |"
    print(head, file=out)
    print("|---|---|---|---|---|---|---|---|", file=out)
    results = []
    for n in sizes:
        results.append(split_in_child(n, check, max_seconds))
        print(split_row(results[-1]), file=out, flush=True)
    print(f"\n{split_targets(results)}\n", file=out)
    return results


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks splits", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 and 500 items, check on only (CI)")
    parser.add_argument("--sizes", type=int, nargs="+", help="item counts (default 100 1000 5000 20000)")
    parser.add_argument("--check-off", action="store_true", help="only the check-off table (compliant persona)")
    parser.add_argument("--max-seconds", type=float, default=900.0, help="seconds one row may take")
    parser.add_argument("--child", nargs=2, metavar=("N", "PATH"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse(argv)
    if args.child:
        n, path = args.child
        with tempfile.TemporaryDirectory() as folder:  # one-time costs (first calls, caches) are not per subtask
            split_run(WARM_UP_ITEMS, Path(folder) / "warm-up", check=not args.check_off)
        print(json.dumps(split_run(int(n), Path(path), check=not args.check_off)), file=out)
        return 0
    print(f"Machine: {machine()}\n", file=out)
    print("Lazy-catalog world with splits on SQLite; default config but for max_tasks and max_steps.\n", file=out)
    if not args.check_off:
        split_table(args.sizes or (QUICK_SIZES if args.quick else SIZES), True, args.max_seconds, out)
    if args.check_off or not (args.quick or args.sizes):
        print("Completion check off (`verify_results=False`): the compliant persona splits its own work.\n", file=out)
        split_table(args.sizes or CHECK_OFF_SIZES, False, args.max_seconds, out)
    return 0
