"""The engine benchmark: what replangraph's own machinery costs, per subtask, at scale and in parallel.

    python -m benchmarks engine                 # chains of 150..1000, 100..5000 items, 64 parallel subtasks
    python -m benchmarks engine --quick         # tiny sizes, 1 run: well under a minute (CI)
    python -m benchmarks engine --runs 5 --max-seconds 120
    python -m benchmarks engine --parallel-only  # table 3 alone

Every model is scripted and answers at once, from the request alone, so the
figures are the engine's: routing, state updates, checkpoints, the thread pool.
Four tables: overhead per subtask beside a bare LangGraph superstep; a run of
N independent subtasks with a SqliteSaver (each size in a fresh process, for
its own peak RSS); 64 sleeping subtasks at max_concurrency 1, 8 and 32 under
both ``invoke`` and ``await ainvoke`` (16 at 1, 8 and 16 with --quick); and
the cost of ``durability="sync"`` (the default on a durable checkpointer)
beside LangGraph's ``"async"`` on SQLite (`benchmarks/durability_table.py`).
With ``--langgraph-dev``, table 5 runs table 3's graphs through a ``langgraph dev``
server driven with langgraph-sdk (`benchmarks/server_parallel.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO, TypedDict

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from replangraph import AgentConfig, build_graph
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

from .persona_table import machine

ROOT = Path(__file__).resolve().parent.parent
ITEM_CHARS = 1_000
BIG_OUTPUT_CHARS = 2_000_000
BIG_OUTPUT_TASKS = 24
BARE_LAPS = 2_000
PARALLEL_TASKS = 64
PARALLEL_SLEEP_S = 0.2
PARALLEL_TARGETS = {8: 7, 32: 25}
"""Speedup over max_concurrency 1 that table 3 asks for, by max_concurrency (at `PARALLEL_TASKS` subtasks)."""
WAYS = ("invoke", "ainvoke")
"""How table 3 runs the graph: ``graph.invoke`` (sync nodes) and ``await graph.ainvoke`` (async nodes)."""
BARE = "bare"
"""Table 3's rows for the same supersteps with LangGraph and LangChain alone (`benchmarks.bare_parallel`)."""
WAY_LABELS = {"invoke": "`invoke`", "ainvoke": "`ainvoke`", BARE: "`invoke`, LangGraph alone"}

Work = Callable[[ScriptedRequest, int], Any]
"""A subtask's reply, given the request and the item index its text names."""


def subtask_index(request: ScriptedRequest) -> int:
    """The item index named in the subtask's text ("Your subtask (ID): ... item 7 ...")."""
    found = re.search(r"Your subtask \([^)]*\): \D*(\d+)", request.prompt)
    if not found:
        raise ValueError("no subtask in the request")
    return int(found.group(1))


def scripted(tasks: list[dict], work: Work, finalize: Callable[[], str] = lambda: "done") -> ScriptedChatModel:
    """Planner gets ``tasks``, each subtask ``work(request, index)``, the finalizer ``finalize()``."""

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return tool_call("Plan", {"tasks": tasks})
        if request.tool_names:
            return work(request, subtask_index(request))
        return finalize()

    return ScriptedChatModel(respond=respond)


def independent_plan(n: int, verb: str) -> list[dict]:
    return [{"id": str(i), "content": f"{verb} item {i} and report it", "depends_on": []} for i in range(1, n + 1)]


def chain_plan(n: int) -> list[dict]:
    return [{"id": str(i), "content": f"Step {i}", "depends_on": [str(i - 1)][: i - 1]} for i in range(1, n + 1)]


def config_for(n: int, **fields: Any) -> AgentConfig:
    """Limits that let ``n`` subtasks finish: room for the plan and ten model calls per subtask; one item per
    subtask (``batch_size`` 1), so the plan's one task per item is run as planned, not batched."""
    return AgentConfig(max_tasks=n + 10, max_steps=max(10 * n, 100), **{"batch_size": 1, **fields})


def completed(state: dict) -> int:
    """Subtasks that completed with a result naming their own item (the scripted replies do)."""
    return sum(
        1
        for task in state["tasks"].values()
        if task["status"] == "completed" and re.search(rf"\bitem {task['id']}\b", task.get("result") or "")
    )


# Table 1: overhead per subtask ---------------------------------------------------------------------------------


def chain_seconds_per_subtask(n: int) -> float:
    """Engine time per subtask on a chain of ``n`` that the model answers at once, no tools, no checkpointer."""
    marks: dict[str, float] = {}
    answered: set[int] = set()

    def finish(request: ScriptedRequest, index: int) -> str:
        answered.add(index)
        return f"Finished item {index}."

    def finalize() -> str:
        marks.setdefault("finalize", time.perf_counter())
        return "done"

    graph = build_graph(scripted(chain_plan(n), finish, finalize), config=config_for(n))
    # From the planner's update reaching the stream (its node has ended) to the finalizer's model request: every
    # executor, tools and routing step of the n subtasks, the instant model's replies, and what the finalize node
    # does before its model call; not the planner's or the finalizer's model calls.
    for update in graph.stream({"messages": [("user", "Do the steps in order.")]}, stream_mode="updates"):
        if "planner" in update:
            marks["planner"] = time.perf_counter()
    if len(answered) != n or "finalize" not in marks:
        raise RuntimeError(f"the chain of {n} stopped after {len(answered)} subtasks")
    return (marks["finalize"] - marks["planner"]) / n


class Counter(TypedDict):
    count: int


def bare_superstep_seconds(steps: int) -> float:
    """Seconds per superstep of a one-node StateGraph that adds 1 and loops ``steps`` times (no checkpointer)."""
    builder = StateGraph(Counter)
    builder.add_node("step", lambda state: {"count": state["count"] + 1})
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda state: "step" if state["count"] < steps else END, ["step", END])
    graph = builder.compile()
    started = time.perf_counter()
    graph.invoke({"count": 0}, {"recursion_limit": steps + 10})
    return (time.perf_counter() - started) / steps


def min_median(values: Sequence[float], fmt: str) -> str:
    return f"{min(values):{fmt}} / {statistics.median(values):{fmt}}"


def overhead_table(sizes: Sequence[int], runs: int, out: TextIO) -> list[float]:
    """Print table 1; per-subtask medians in ms, one per size."""
    bare = [bare_superstep_seconds(BARE_LAPS) * 1e3 for _ in range(runs)]
    bare_median = statistics.median(bare)
    title = "**1. Overhead per subtask** (a chain: subtask i depends on i-1; instant model, no tools, no checkpointer)"
    print(title, file=out)
    bare_cell = f"{min_median(bare, '.3f')} ms per superstep"
    print(f"\nBare LangGraph (one node looping {BARE_LAPS:,} times on a conditional edge): {bare_cell}\n", file=out)
    print("| N | ms per subtask (min / median) | × bare superstep (median / median) | target |", file=out)
    print("|---|---|---|---|", file=out)
    medians = []
    for n in sizes:
        per_subtask = [chain_seconds_per_subtask(n) * 1e3 for _ in range(runs)]
        median = statistics.median(per_subtask)
        medians.append(median)
        ratio = median / bare_median
        target = f"≤ 20× {mark(ratio <= 20)}" + (f", ≤ 3 ms {mark(median <= 3)}" if n == 500 else "")
        print(f"| {n} | {min_median(per_subtask, '.2f')} | {ratio:.0f}× | {target} |", file=out, flush=True)
    flatness = max(medians) / min(medians)
    print(
        f"\nFlatness, max/min of the medians from {sizes[0]} to {sizes[-1]}: {flatness:.2f} "
        f"(target ≤ 1.5, flat within ±50 %) {mark(flatness <= 1.5)}\n",
        file=out,
    )
    return medians


def mark(ok: bool) -> str:
    return "✓" if ok else "✗"


# Table 2: scale with a SqliteSaver -----------------------------------------------------------------------------


def item_text(index: int, chars: int = ITEM_CHARS) -> str:
    """About ``chars`` characters describing item ``index``."""
    line = f"Item {index}: a widget of batch {index % 97}, stored on shelf {index % 13}, checked and in stock. "
    return (line * (chars // len(line) + 1))[:chars]


def reader(big_index: int | None) -> Callable[[int], str]:
    def read_item(index: int) -> str:
        """Read one item's record by its index."""
        return item_text(index, BIG_OUTPUT_CHARS if index == big_index else ITEM_CHARS)

    return read_item


def read_then_report(request: ScriptedRequest, index: int):
    if not request.called("read_item"):
        return tool_call("read_item", {"index": index})
    return f"Read item {index}: in stock."


def database_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def scale_run(n: int, path: Path, big_index: int | None = None) -> dict:
    """Read ``n`` items, one subtask each, checkpointed to SQLite at ``path``; wall time, RSS, DB size, completed."""
    connection = sqlite3.connect(str(path), check_same_thread=False)
    model = scripted(independent_plan(n, "Read"), read_then_report)
    graph = build_graph(model, tools=[reader(big_index)], config=config_for(n), checkpointer=SqliteSaver(connection))
    started = time.perf_counter()
    state = graph.invoke({"messages": [("user", f"Read items 1 to {n}.")]}, {"configurable": {"thread_id": "scale"}})
    wall = time.perf_counter() - started
    connection.close()
    return {
        "n": n,
        "wall_s": wall,
        "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "db_bytes": database_bytes(path),
        "completed": completed(state),
    }


def scale_in_child(n: int, max_seconds: float, big_index: int | None = None) -> dict:
    """`scale_run` in a fresh interpreter; ``{"error": ...}`` when it fails or runs past ``max_seconds``."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "benchmarks", "engine", "--scale-child", str(n), str(Path(folder) / "db")]
        if big_index is not None:
            command += ["--big-index", str(big_index)]
        try:
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=max_seconds)
        except subprocess.TimeoutExpired:
            return {"n": n, "error": f"timed out after {max_seconds:g} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"n": n, "error": f"failed: {last[:120]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def scale_row(label: str, result: dict) -> str:
    n = result["n"]
    if "error" in result:
        return f"| {label} | {result['error']} | | | | |"
    return (
        f"| {label} | {result['wall_s']:.1f} | {result['rss_kb'] / 1024:.0f} | {result['db_bytes']:,} "
        f"| {result['db_bytes'] / n:,.0f} | {result['completed']}/{n} {mark(result['completed'] == n)} |"
    )


def scale_table(sizes: Sequence[int], max_seconds: float, out: TextIO) -> list[dict]:
    """Print table 2 (each row a fresh process)."""
    print(
        "**2. Scale with SqliteSaver** (N independent subtasks, each calls `read_item` (1 KB) then answers; "
        "max_concurrency 1; each row a fresh process)\n",
        file=out,
    )
    print("| N | wall s | peak RSS MB | database bytes | bytes per subtask | completed |", file=out)
    print("|---|---|---|---|---|---|", file=out)
    results = []
    for n in sizes:
        results.append(scale_in_child(n, max_seconds))
        print(scale_row(str(n), results[-1]), file=out, flush=True)
    # The first item read is the big one, so every later checkpoint could carry it: the worst place for it.
    big = scale_in_child(BIG_OUTPUT_TASKS, max_seconds, big_index=1)
    print(scale_row(f"{BIG_OUTPUT_TASKS}, item 1's output 2 MB", big), file=out, flush=True)
    print(f"\n{scale_targets(results)}\n", file=out)
    return [*results, big]


def scale_targets(results: list[dict]) -> str:
    """The table's verdicts: bytes per subtask flat within ±30 %; 5000 items under 60 s and 500 MB."""
    if any("error" in r for r in results):
        return "Targets: bytes per subtask flat within ±30 %; 5000 items under 60 s and 500 MB ✗ (a row did not finish)"
    per = [r["db_bytes"] / r["n"] for r in results]
    flat = max(per) / min(per)
    verdict = f"Bytes per subtask, max/min: {flat:.2f} (target ≤ 1.3, flat within ±30 %) {mark(flat <= 1.3)}; "
    largest = results[-1]
    fast = largest["wall_s"] < 60 and largest["rss_kb"] / 1024 < 500
    judged = mark(fast) if largest["n"] >= 5000 else "(not judged below 5000)"
    return verdict + f"target for 5000 items: under 60 s and 500 MB RSS {judged}"


# Table 3: parallel ---------------------------------------------------------------------------------------------


def sleeper(sleep_s: float) -> Callable[[int], str]:
    """The ``work`` tool of table 3: it sleeps ``sleep_s``, as a slow API would."""

    def work(index: int) -> str:
        """Work on one item by its index."""
        time.sleep(sleep_s)
        return f"worked on item {index}"

    return work


ANSWER = "Did item"
"""How a subtask's answer in table 3 starts: the reply a slow provider takes `PARALLEL_SLEEP_S` over."""


async def awaited_latency(seconds: float) -> None:
    """A provider's time over an answer on the async path: awaited, no thread held."""
    await asyncio.sleep(seconds)


class SlowProvider(ScriptedChatModel):
    """A scripted model that takes ``latency_s`` over each subtask's answer, as a provider does over the
    network: the sync call blocks its thread, the async one awaits (``ChatOpenAI.ainvoke`` awaits its HTTP
    request the same way, so the async path holds no thread while a provider thinks)."""

    latency_s: float = 0.0

    def slow(self, result: ChatResult) -> bool:
        return str(result.generations[0].message.content).startswith(ANSWER)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any):
        result = super()._generate(messages, stop, run_manager, **kw)
        if self.slow(result):
            time.sleep(self.latency_s)
        return result

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any):
        result = super()._generate(messages, stop, None, **kw)
        if self.slow(result):
            await awaited_latency(self.latency_s)
        return result


def parallel_graph(tasks: int, concurrency: int | None, work: Callable[[int], str], model_s: float = 0.0) -> Any:
    """The graph of table 3: ``tasks`` independent subtasks, each calling the ``work`` tool once; the model
    takes ``model_s`` over each subtask's answer (`SlowProvider`). ``concurrency`` None: the default
    max_concurrency (a run brings its own, as its context)."""

    def call_then_answer(request: ScriptedRequest, index: int):
        if not request.called("work"):
            return tool_call("work", {"index": index})
        return f"{ANSWER} {index}."

    model = scripted(independent_plan(tasks, "Work on"), call_then_answer)
    model = SlowProvider(respond=model.respond, latency_s=model_s) if model_s else model
    limits = {} if concurrency is None else {"max_concurrency": concurrency}
    return build_graph(model, tools=[work], config=config_for(tasks, **limits))


def parallel_run(
    tasks: int, concurrency: int, work: Callable[[int], str], way: str = "invoke", model_s: float = 0.0
) -> float:
    """Run ``tasks`` independent subtasks, each calling the ``work`` tool once (the model taking ``model_s``
    over each answer), at ``max_concurrency``, the ``way`` given (`WAYS`); the run's wall time (the graph
    built beforehand). RuntimeError unless every subtask completed."""
    graph = parallel_graph(tasks, concurrency, work, model_s)
    given = {"messages": [("user", "Work on every item.")]}  # no run config: the graph sizes its pool
    started = time.perf_counter()
    state = asyncio.run(graph.ainvoke(given)) if way == "ainvoke" else graph.invoke(given)
    wall = time.perf_counter() - started
    if completed(state) != tasks:
        raise RuntimeError(f"only {completed(state)}/{tasks} subtasks completed at max_concurrency={concurrency}")
    return wall


def parallel_seconds(
    tasks: int, sleep_s: float, concurrency: int, way: str = "invoke", sleeping: str = "tool"
) -> float:
    """Wall time of ``tasks`` independent subtasks whose tool (``sleeping="tool"``) or model's answer
    (``"model"``) takes ``sleep_s``, at ``max_concurrency``; ``way`` `BARE`: the same without replangraph."""
    if way == BARE:
        from .bare_parallel import bare_parallel_run  # it builds on this module's model and tool

        if sleeping == "model":
            return bare_parallel_run(tasks, concurrency, sleeper(0.0), model_s=sleep_s)
        return bare_parallel_run(tasks, concurrency, sleeper(sleep_s))
    if sleeping == "model":
        return parallel_run(tasks, concurrency, sleeper(0.0), way, model_s=sleep_s)
    return parallel_run(tasks, concurrency, sleeper(sleep_s), way)


def parallel_table(
    concurrencies: Sequence[int],
    runs: int,
    out: TextIO,
    tasks: int = PARALLEL_TASKS,
    ways: Sequence[str] = (*WAYS, BARE),
    sleepers: Sequence[str] = ("tool", "model"),
) -> dict[str, dict[int, float]]:
    """Print table 3; median wall seconds by ``"<what sleeps> <way>"`` (`WAYS`, and `BARE`: the same
    supersteps with LangGraph alone) and max_concurrency. Targets (`PARALLEL_TARGETS`) are judged at
    `PARALLEL_TASKS` subtasks, on replangraph's rows."""
    print(
        f"**3. Parallel** ({tasks} independent subtasks; in each, the `work` tool or the model's answer takes "
        f"{PARALLEL_SLEEP_S} s; nothing in the run config; `invoke`: sync nodes, `ainvoke`: async nodes; "
        "LangGraph alone: the same supersteps without replangraph, `benchmarks/bare_parallel.py`)\n",
        file=out,
    )
    print("| slow | way | max_concurrency | wall s (min / median) | speedup vs 1 (median) | target |", file=out)
    print("|---|---|---|---|---|---|", file=out)
    targets = PARALLEL_TARGETS if tasks == PARALLEL_TASKS else {}
    medians: dict[str, dict[int, float]] = {}
    for sleeping in sleepers:
        for way in ways:
            name = f"{sleeping} {way}"
            medians[name] = {}
            for k in concurrencies:
                walls = [parallel_seconds(tasks, PARALLEL_SLEEP_S, k, way, sleeping) for _ in range(runs)]
                medians[name][k] = statistics.median(walls)
                speedup = medians[name][concurrencies[0]] / medians[name][k]
                target = f"≥ {targets[k]}× {mark(speedup >= targets[k])}" if k in targets and way != BARE else ""
                cells = [sleeping, WAY_LABELS[way], k, min_median(walls, ".2f"), f"{speedup:.1f}×", target]
                row = "| " + " | ".join(map(str, cells)) + " |"
                print(row, file=out, flush=True)
    print(file=out)
    return medians


# Command line --------------------------------------------------------------------------------------------------


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks engine", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=None, help="runs per row of tables 1, 3 and 4 (default 3; quick 1)")
    parser.add_argument(
        "--quick", action="store_true", help="chains of 150 and 300, 100 and 300 items, 20 for table 4, 1 run (CI)"
    )
    parser.add_argument("--max-seconds", type=float, default=300.0, help="seconds one table 2 row may take")
    parser.add_argument(
        "--langgraph-dev", action="store_true", help="add table 5: table 3 through a langgraph dev server (sdk)"
    )
    parser.add_argument("--parallel-only", action="store_true", help="run table 3 (parallel) alone")
    parser.add_argument("--scale-child", nargs=2, metavar=("N", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--big-index", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.runs = args.runs or (1 if args.quick else 3)
    return args


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse(argv)
    if args.scale_child:
        n, path = args.scale_child
        print(json.dumps(scale_run(int(n), Path(path), args.big_index)), file=out)
        return 0
    chains, items = ([150, 300], [100, 300]) if args.quick else ([150, 250, 500, 1000], [100, 1000, 5000])
    print(f"Machine: {machine()}\n", file=out)
    print(f"Scripted models answer at once; min / median over {args.runs} run(s) in tables 1, 3 and 4.\n", file=out)
    if args.parallel_only:
        sizes = {"concurrencies": [1, 8, 16], "tasks": 16} if args.quick else {"concurrencies": [1, 8, 32]}
        parallel_table(runs=args.runs, out=out, **sizes)
        return 0
    overhead_table(chains, args.runs, out)
    scale_table(items, args.max_seconds, out)
    parallel_table([1, 8, 16], args.runs, out, tasks=16) if args.quick else parallel_table([1, 8, 32], args.runs, out)
    from .durability_table import DURABILITY_TASKS, durability_table  # it builds on this module's runs

    durability_table(20 if args.quick else DURABILITY_TASKS, args.runs, out)
    if args.langgraph_dev:
        from .server_parallel import server_table  # it starts a server: only when asked

        server_table([1, 8, 16], args.runs, out, tasks=16) if args.quick else server_table([1, 8, 32], args.runs, out)
    return 0
