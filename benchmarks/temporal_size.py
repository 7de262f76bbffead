"""The Temporal size benchmark: what a long run costs on Temporal beside the same run in-process, per subtask, as
the run grows; and one tool output of 10 MB.

    python -m benchmarks temporal --size             # 100, 1,000 and 2,000 subtasks, and the 10 MB output
    python -m benchmarks temporal --size --quick     # 100 subtasks and the 10 MB output (CI)
    python -m benchmarks temporal --size --subtasks 4000   # the 20,000-item splits world: how far it gets

``python -m benchmarks temporal`` prints this table after the one of `benchmarks.temporal_table`.

The world is the splits benchmark's lazy catalog (`benchmarks.splits`): N x 5 products; the `lazy` persona reads 5
and stops, the completion check queues the rest as follow-ups, N subtasks in all; the scripted model answers at
once, so the figures are the engine's and Temporal's. On Temporal: a loopback ``temporal server start-dev`` with its
state in a file, one worker process started as the docs start one (the graph's defaults; ``serve`` with the default
payload store: a folder of the benchmark's own), a client that starts the run and waits for it. What a row prints:

- completed / subtasks, and the products of the world the final answer names;
- Temporal runs: the workflow's runs (it continues as new when Temporal suggests it);
- history events and KB per subtask: every run's history, summed, over the subtasks;
- largest event KB: the largest history event of any run (every payload of 4 KiB or more is a reference);
- store KB per subtask: what the payload store grew by (content-defined chunks, each kept once);
- wall s: from start to result; CPU s: user + system of every process (server, worker, client; from /proc).

The in-process row runs the same graph with ``invoke`` in a process of its own (no checkpointer).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from .temporal_table import ROOT, Workers, cpu_seconds

SIZES = (100, 1_000, 2_000)
QUICK_SIZES = (100,)
HUGE_MB = 10.0
RUN_LIMIT_S = 3_600
STALL_CHECK_S = 10.0
"""How often a run is checked for a workflow task that keeps failing."""
FACTORY = "benchmarks.temporal_size:catalog_graph"
HUGE_FACTORY = "benchmarks.temporal_size:huge_graph"


def catalog_graph(items: str) -> Any:
    """The lazy-catalog world at ``items`` products, as a worker (or this process) builds it."""
    from replangraph import AgentConfig, build_graph

    from .personas import persona
    from .splits import limits_for
    from .worlds import CatalogWorld

    world = CatalogWorld(int(items))
    config = AgentConfig(verify_results=True, retry_backoff_s=0.01, **limits_for(int(items)))
    return build_graph(persona("lazy", world).model(), tools=world.tools, config=config)


HUGE_GOAL = "Dump the archive."


def huge_graph(megabytes: str, log: str) -> Any:
    """One subtask whose one call returns ``megabytes`` MB and logs a ``CALL`` line; its answer says how many
    characters of it the model saw."""
    import re

    from langchain_core.tools import tool

    from replangraph import AgentConfig, build_graph
    from replangraph.testing import ScriptedChatModel, tool_call

    @tool
    def dump() -> str:
        """Dump the whole archive."""
        with open(log, "a") as out:
            out.write(f"CALL {os.getpid()}\n")
        line = "archive record 0123456789 abcdefghij\n"
        return line * (int(float(megabytes) * 1_000_000) // len(line))

    def respond(request):
        if "Plan" in request.tool_names:
            return tool_call("Plan", {"tasks": [{"id": "1", "content": HUGE_GOAL}]})
        if "Your subtask" in request.prompt:
            seen = [len(str(m.content)) for m in request.tool_results]
            return f"saw {seen[0]} characters of the archive" if seen else tool_call("dump", {})
        return "\n".join(sorted(set(re.findall(r"saw \d+ characters of the archive", request.prompt))))

    return build_graph(ScriptedChatModel(respond=respond), tools=[dump], config=AgentConfig(verify_results=False))


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def in_process(subtasks: int) -> dict:
    """The catalog run in this process (``invoke``): wall and CPU seconds, what it completed and found."""
    from .worlds import CatalogWorld

    world = CatalogWorld(5 * subtasks)
    graph = catalog_graph(str(5 * subtasks))
    wall, cpu = time.perf_counter(), time.process_time()
    state = graph.invoke({"messages": [("user", world.goal)]}, {"recursion_limit": 10**6})
    tasks = state["tasks"].values()
    return {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "planned": len(tasks),
        "completed": sum(t["status"] == "completed" for t in tasks),
        "found": world.score(state["final_answer"]),
    }


def in_child(subtasks: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "temporal", "--size", "--child", str(subtasks)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
    )
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:160]}
    return json.loads(done.stdout.strip().splitlines()[-1])


async def chain(client: Any, handle: Any) -> list[list]:
    """The history events of every run of the workflow ``handle`` started, first run first."""
    runs, run_id = [], handle.first_execution_run_id or handle.result_run_id
    while run_id:
        events = [e async for e in client.get_workflow_handle(handle.id, run_id=run_id).fetch_history_events()]
        runs.append(events)
        last = events[-1]
        continued = last.HasField("workflow_execution_continued_as_new_event_attributes")
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id if continued else None
    return runs


async def on_temporal(address: str, server_pid: int, queue: str, goal: str, workers: Workers, store: Path) -> dict:
    """One run on ``queue`` to its end: the final state and the figures of its histories, store and processes."""
    from langchain_core.messages import HumanMessage

    from replangraph.temporal import connect, start

    client = await connect(address, payloads=store)
    pids = [os.getpid(), server_pid, *workers.by_pid()]
    stored, cpu, wall = folder_bytes(store), cpu_seconds(pids), time.perf_counter()
    handle = await start(
        client,
        {"messages": [HumanMessage(goal)]},
        id=f"{queue}-run",
        task_queue=queue,
        execution_timeout=timedelta(seconds=RUN_LIMIT_S),
    )
    state, error = await outcome_of(client, handle)
    wall = time.perf_counter() - wall
    used = cpu_seconds(pids)
    runs = await chain(client, handle)
    events = [e for run in runs for e in run]
    return {
        "state": state,
        "error": error,
        "wall": wall,
        "cpu": None if used is None or cpu is None else used - cpu,
        "runs": len(runs),
        "events": len(events),
        "bytes": sum(e.ByteSize() for e in events),
        "largest": max(e.ByteSize() for e in events),
        "stored": folder_bytes(store) - stored,
    }


async def outcome_of(client: Any, handle: Any) -> tuple[dict, str | None]:
    """The run's final state and None; or, for a run Temporal ended without one, the state it carried into its
    last Temporal run (empty for the first) and what ended it. A run whose workflow task keeps failing (Temporal
    would retry it without end) is terminated and said to be stalled."""
    ending = asyncio.ensure_future(handle.result())
    watching = asyncio.ensure_future(stalled(handle))
    try:
        await asyncio.wait({ending, watching}, return_when=asyncio.FIRST_COMPLETED)
        if not ending.done():
            why = watching.result()
            await handle.terminate(reason=f"stalled: {why}")
            state = await carried_state(client, handle)
            return state, f"stalled: {why}"
        try:
            return ending.result(), None
        except Exception as failed:  # noqa: BLE001 - a run Temporal ended is a row that says so
            return await carried_state(
                client, handle
            ), f"{type(failed).__name__}: {getattr(failed, 'cause', None) or failed}"
    finally:
        for task in (ending, watching):
            task.cancel()


async def stalled(handle: Any) -> str:
    """Waits until the run's workflow task keeps failing; why it fails."""
    from replangraph.temporal.client import failing_task

    while not (why := await failing_task(handle)):
        await asyncio.sleep(STALL_CHECK_S)
    return why


async def carried_state(client: Any, handle: Any) -> dict:
    """The state the run's latest Temporal run started from (what its last continuation carried), else {}."""
    latest = client.get_workflow_handle(handle.id)
    async for event in latest.fetch_history_events():
        started = event.workflow_execution_started_event_attributes
        request = (await client.data_converter.decode(started.input.payloads))[0]
        continuation = request.get("continuation") if isinstance(request, dict) else None
        return (continuation or {}).get("values") or {}
    return {}


def size_rows(server: Any, sizes: Sequence[int], folder: Path, out: TextIO) -> list[dict]:
    """One Temporal row and one in-process row per size."""
    from .worlds import CatalogWorld

    rows = []
    for subtasks in sizes:
        world = CatalogWorld(5 * subtasks)
        store = folder / f"store-{subtasks}"
        env = {"REPLANGRAPH_PAYLOADS": str(store)}
        workers = Workers(server.address, f"size-{subtasks}", [str(5 * subtasks)], folder, factory=FACTORY, env=env)
        try:
            workers.add(1)
            found = asyncio.run(on_temporal(server.address, server.pid, workers.queue, world.goal, workers, store))
        finally:
            workers.close()
        state, tasks = found["state"], (found["state"].get("tasks") or {}).values()
        row = {
            "subtasks": subtasks,
            "where": "Temporal, 1 worker",
            "completed": sum(t["status"] == "completed" for t in tasks),
            "planned": len(tasks),
            "found": world.score(state.get("final_answer", "")),
            "items": 5 * subtasks,
            **{k: found[k] for k in ("error", "wall", "cpu", "runs", "events", "bytes", "largest", "stored")},
        }
        rows.append(row)
        print(size_line(row), file=out, flush=True)
        local = in_child(subtasks)
        local.update({"subtasks": subtasks, "where": "in-process `invoke`", "items": 5 * subtasks})
        rows.append(local)
        print(size_line(local), file=out, flush=True)
    return rows


SIZE_HEADER = (
    "| subtasks (products) | where | completed / subtasks | products in the answer | Temporal runs "
    "| history events per subtask | history KB per subtask | largest event KB | store KB per subtask "
    "| wall s | CPU s (all processes) |"
)


def size_line(row: dict) -> str:
    n = row["subtasks"]
    if row.get("error") and not row.get("completed"):
        return f"| {n:,} ({row['items']:,}) | {row['where']} | {row['error']} |" + " |" * 8
    temporal = "events" in row
    cells = [
        f"{n:,} ({row['items']:,})",
        row["where"] + (f": {row['error']}" if row.get("error") else ""),
        f"{row.get('completed', 0)} / {row.get('planned', 0)}",
        f"{row.get('found', 0):,} / {row['items']:,}",
        str(row["runs"]) if temporal else "—",
        f"{row['events'] / n:.1f}" if temporal else "—",
        f"{row['bytes'] / n / 1024:.1f}" if temporal else "—",
        f"{row['largest'] / 1024:.1f}" if temporal else "—",
        f"{row['stored'] / n / 1024:.1f}" if temporal else "—",
        f"{row['wall']:.1f}",
        f"{row['cpu']:.1f}" if row.get("cpu") is not None else "—",
    ]
    return "| " + " | ".join(cells) + " |"


def longest_kept(state: dict) -> int:
    """The longest text a run without a store kept (its ``workspace`` channel)."""
    steps = (state.get("workspace") or {}).values()
    return max((len(entry["content"]) for step in steps for entry in step.values()), default=0)


def huge_row(server: Any, folder: Path, out: TextIO) -> dict:
    """A 10 MB tool output on Temporal and in-process: what the model saw, the calls made, the largest event."""
    import re

    log = folder / "huge.log"
    store = folder / "store-huge"
    workers = Workers(
        server.address,
        "huge",
        [str(HUGE_MB), str(log)],
        folder,
        factory=HUGE_FACTORY,
        env={"REPLANGRAPH_PAYLOADS": str(store)},
    )
    try:
        workers.add(1)
        found = asyncio.run(on_temporal(server.address, server.pid, workers.queue, HUGE_GOAL, workers, store))
    finally:
        workers.close()
    calls = len(log.read_text().splitlines()) if log.exists() else 0
    state = found["state"]
    seen = re.search(r"saw (\d+) characters", state.get("final_answer", ""))
    kept = max(
        (len(e["content"]) for step in (state.get("workspace") or {}).values() for e in step.values()), default=0
    )
    local_log = folder / "huge-local.log"
    started = time.perf_counter()
    local = huge_graph(str(HUGE_MB), str(local_log)).invoke({"messages": [("user", HUGE_GOAL)]})
    local_wall = time.perf_counter() - started
    local_seen = re.search(r"saw (\d+) characters", local["final_answer"])
    print(
        "\n| a tool output of 10 MB | calls made | characters the model saw | longest text kept | largest event KB "
        "| history KB | store KB | wall s |\n|---|---|---|---|---|---|---|---|",
        file=out,
    )
    print(
        f"| Temporal, 1 worker | {calls} | {seen.group(1) if seen else '—'} | {kept:,} | "
        f"{found['largest'] / 1024:.1f} | {found['bytes'] / 1024:.0f} | {found['stored'] / 1024:.0f} | "
        f"{found['wall']:.1f} |",
        file=out,
    )
    local_kept = max(
        (len(e["content"]) for s in (local.get("workspace") or {}).values() for e in s.values()), default=0
    )
    local_calls = len(local_log.read_text().splitlines()) if local_log.exists() else 0
    print(
        f"| in-process `invoke` | {local_calls} | {local_seen.group(1) if local_seen else '—'} | {local_kept:,} "
        f"| — | — | — | {local_wall:.1f} |",
        file=out,
        flush=True,
    )
    return {"calls": calls, "seen": int(seen.group(1)) if seen else None, "kept": kept, "largest": found["largest"]}


def verdict(rows: Sequence[dict], huge: dict | None) -> tuple[str, bool]:
    """What must hold: every subtask and product on Temporal up to 2,000 subtasks (a bigger run is a report of how
    far it gets), no event past 2 MB (none past 64 KiB), history bytes per subtask flat (the largest size within
    1.5x of the smallest), the 10 MB output cut and kept whole, its call made once."""
    temporal = [r for r in rows if "events" in r and not r.get("error")]
    required = [r for r in rows if r["where"].startswith("Temporal") and r["subtasks"] <= max(SIZES)]
    must = [
        (
            f"every product on Temporal up to {max(SIZES):,} subtasks",
            all(r.get("found") == r["items"] for r in required) and len(required) > 0,
        ),
        ("no history event past 64 KiB", all(r["largest"] < 64 * 1024 for r in temporal)),
    ]
    if len(temporal) > 1:
        per = [r["bytes"] / r["subtasks"] for r in temporal]
        must.append((f"history bytes per subtask flat ({max(per) / min(per):.2f}x)", max(per) <= 1.5 * min(per)))
    if huge is not None:
        must.append(("10 MB output: one call", huge["calls"] == 1))
        must.append(("the model saw a cut", bool(huge["seen"]) and huge["seen"] < 20_000))
        must.append(("kept whole", huge["kept"] >= HUGE_MB * 1_000_000 * 0.99))
    met = sum(ok for _, ok in must)
    marks = "; ".join(f"{name} {'✓' if ok else '✗'}" for name, ok in must)
    return f"size targets met: {met} of {len(must)} ({marks})", met == len(must)


def size_main(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """The size table, the 10 MB row and their verdict."""
    from .persona_table import machine
    from .temporal_table import Server, versions

    if args.child is not None:
        print(json.dumps(in_process(args.child)))
        return 0
    sizes = args.subtasks or (QUICK_SIZES if args.quick else SIZES)
    print(f"Machine: {machine()}; {versions()}\n", file=out)
    print(
        "**Temporal at size** (the lazy catalog: N subtasks of 5 products; one worker; payloads of 4 KiB or more in "
        "the payload store)\n",
        file=out,
    )
    print(SIZE_HEADER, file=out)
    print("|---" * (SIZE_HEADER.count("|") - 1) + "|", file=out)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="replangraph-bench-size-") as name:
        folder = Path(name)
        server = Server(folder)
        try:
            rows = size_rows(server, sizes, folder, out)
            huge = huge_row(server, folder, out)
        finally:
            server.close()
    line, held = verdict(rows, huge)
    print(f"\nWall time of the size benchmark: {time.perf_counter() - started:.0f} s.\n", file=out)
    print(line, file=out, flush=True)
    return 0 if held else 1
