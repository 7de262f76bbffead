"""Table 3 through a real ``langgraph dev`` server, driven with langgraph-sdk: the path LangGraph Server and
Studio take (async nodes on the server's event loop).

    python -m benchmarks engine --langgraph-dev

The server loads `graph` below (`engine.parallel_graph`: ``$REPLANGRAPH_BENCH_TASKS`` independent subtasks whose
``work`` tool sleeps `engine.PARALLEL_SLEEP_S`); each run sets its ``max_concurrency`` in the run's context.
A figure, not a test: the server takes a few seconds to start, and the timings are wall clock.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from benchmarks.engine import PARALLEL_SLEEP_S, PARALLEL_TASKS, completed, mark, min_median, parallel_graph, sleeper

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = {"tool": "parallel-slow-tool", "model": "parallel-slow-model"}
"""The served graphs by what takes `PARALLEL_SLEEP_S` in each subtask: its ``work`` tool, or its model's answer."""
TASKS_ENV = "REPLANGRAPH_BENCH_TASKS"
READY_DEADLINE_S = 120


def served(sleeping: str) -> Any:
    """A served graph: room for 32 subtasks at once (a run's context picks how many may run)."""
    tasks = int(os.environ.get(TASKS_ENV, PARALLEL_TASKS))
    if sleeping == "model":
        return parallel_graph(tasks, 32, sleeper(0.0), model_s=PARALLEL_SLEEP_S)
    return parallel_graph(tasks, 32, sleeper(PARALLEL_SLEEP_S))


def slow_tool_graph() -> Any:
    """The graph whose ``work`` tool takes `PARALLEL_SLEEP_S`."""
    return served("tool")


def slow_model_graph() -> Any:
    """The graph whose model takes `PARALLEL_SLEEP_S` over each subtask's answer."""
    return served("model")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(folder: Path, tasks: int) -> tuple[subprocess.Popen, str]:
    """A ``langgraph dev`` serving `make_graph` on a free loopback port, once it answers ``/ok``."""
    langgraph = Path(sys.executable).parent / "langgraph"
    port = free_port()
    graphs = {
        GRAPHS["tool"]: "./benchmarks/server_parallel.py:slow_tool_graph",
        GRAPHS["model"]: "./benchmarks/server_parallel.py:slow_model_graph",
    }
    config = {"dependencies": ["."], "graphs": graphs}
    (folder / "langgraph.json").write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false", PYTHONPATH=str(ROOT), **{TASKS_ENV: str(tasks)}
    )
    command = [str(langgraph), "dev", "--no-browser", "--no-reload", "--port", str(port)]
    command += ["--config", str(folder / "langgraph.json")]
    with (folder / "server.log").open("wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    while time.monotonic() - started < READY_DEADLINE_S:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as reply:
                if reply.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.2)
    stop(process)
    raise RuntimeError(f"langgraph dev did not start:\n{(folder / 'server.log').read_text()[-4000:]}")


def stop(process: subprocess.Popen) -> None:
    """End the server's process group (signalled only while its leader is unreaped, so the group is ours)."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


def server_run(client: Any, graph: str, concurrency: int, tasks: int) -> float:
    """Seconds one run of ``graph`` on a fresh thread takes, from its first streamed event (the run started:
    ``langgraph dev``'s queue picks runs up about once a second, which is not the graph's time) to its end;
    RuntimeError unless every subtask completed."""
    thread = client.threads.create()["thread_id"]
    given = {"messages": [{"role": "user", "content": "Work on every item."}]}
    started = None
    parts = client.runs.stream(thread, graph, input=given, context={"max_concurrency": concurrency})
    for part in parts:
        started = started or time.perf_counter()
        if part.event == "error":
            raise RuntimeError(f"the run failed at max_concurrency={concurrency}: {part.data!r:.500}")
    wall = time.perf_counter() - (started or 0.0)
    state = client.threads.get_state(thread)["values"]
    if completed(state) != tasks:
        raise RuntimeError(f"only {completed(state)}/{tasks} subtasks completed at max_concurrency={concurrency}")
    return wall


def server_table(
    concurrencies: Sequence[int], runs: int, out: TextIO, tasks: int = PARALLEL_TASKS
) -> dict[str, dict[int, float]]:
    """Print table 5; median wall seconds by what sleeps (`GRAPHS`) and max_concurrency."""
    from langgraph_sdk import get_sync_client

    folder = Path(tempfile.mkdtemp(prefix="replangraph-bench-dev-"))
    data_dir = ROOT / ".langgraph_api"
    ours = not data_dir.exists()
    process, url = start_server(folder, tasks)
    medians: dict[str, dict[int, float]] = {}
    try:
        client = get_sync_client(url=url, api_key=None, timeout=600)
        print(
            f"**5. Parallel through `langgraph dev`** ({tasks} subtasks; in each, the `work` tool or the model's "
            f"answer takes {PARALLEL_SLEEP_S} s; driven with langgraph-sdk `runs.stream`, timed from the run's "
            "first event; `max_concurrency` in the run's context)\n",
            file=out,
        )
        print("| slow | max_concurrency | wall s (min / median) | speedup vs 1 (median) | target |", file=out)
        print("|---|---|---|---|---|", file=out)
        for sleeping, graph in GRAPHS.items():
            server_run(client, graph, concurrencies[-1], tasks)  # the server builds the graph on its first run
            medians[sleeping] = {}
            for k in concurrencies:
                walls = [server_run(client, graph, k, tasks) for _ in range(runs)]
                medians[sleeping][k] = statistics.median(walls)
                speedup = medians[sleeping][concurrencies[0]] / medians[sleeping][k]
                target = f"≥ 7× {mark(speedup >= 7)}" if k == 8 and tasks == PARALLEL_TASKS else ""
                row = f"| {sleeping} | {k} | {min_median(walls, '.2f')} | {speedup:.1f}× | {target} |"
                print(row, file=out, flush=True)
        print(file=out)
    finally:
        stop(process)
        if ours:
            shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
    return medians
