"""The fault matrix's probes that start processes: durable workers killed with SIGKILL, several processes on one
SQLite file, and the ``replangraph`` command itself against the loopback OpenAI-compatible server.

The durable runs are tests/helpers/durable_worker.py (eight subtasks, two at a time, every model and tool call
logged with its process id), so a call made again after a kill can be told apart and counted.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from replangraph.app.console import EXIT_BUSY
from replangraph.durable import open_saver
from replangraph.testing import ScriptedRequest, tool_call

from .fault_probes import HELPERS, Finding, OpenAILoopback

WORKER = HELPERS / "durable_worker.py"
ROOT = HELPERS.parent.parent
WAIT_S = 90.0
CLI = "import sys; from replangraph.app.cli import main; sys.exit(main())"

from durable_worker import CONFIG, HOLD_ENV, ITEMS, build, result_path, run_config, task_id  # noqa: E402


def databases(args: argparse.Namespace, folder: str) -> dict[str, str]:
    """The databases a durable probe runs on: a SQLite file in ``folder``, and PostgreSQL when given."""
    found = {"SQLite": str(Path(folder) / "runs.sqlite")}
    if args.postgres:
        found["PostgreSQL"] = args.postgres
    return found


def wait_until(condition, what: str, seconds: float = WAIT_S) -> None:
    """Poll ``condition()`` until it is true; TimeoutError naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {seconds:g} s")
        time.sleep(0.02)


def log_lines(log: Path) -> list[list[str]]:
    """The durable worker's complete log lines, split into fields (``kind, pid, ...``)."""
    if not log.exists():
        return []
    text = log.read_text(encoding="utf-8")
    return [line[:-1].split("\t") for line in text.splitlines(keepends=True) if line.endswith("\n") and line.strip()]


def start_worker(db: str, thread: str, log: Path, mode: str, hold_after: int | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != HOLD_ENV}
    if hold_after is not None:
        env[HOLD_ENV] = str(hold_after)
    err = open(f"{log}.err", "wb")  # noqa: SIM115  (the child holds it; closed with the process)
    try:
        return subprocess.Popen(
            [sys.executable, str(WORKER), db, thread, str(log), mode],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,  # never written: a held answer waits on it until the kill
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    finally:
        err.close()


def stop(process: subprocess.Popen) -> int:
    """Kill ``process`` if it still runs; its exit code."""
    if process.poll() is None:
        process.kill()
    code = process.wait(timeout=30)
    if process.stdin:
        process.stdin.close()
    return code


def saved_tasks(db: str, thread: str, log: Path) -> dict:
    """The tasks of the thread's last saved checkpoint, read as a new process would ({} before the first)."""
    with open_saver(db) as (checkpointer, store):
        return build(checkpointer, store, log).get_state(run_config(thread)).values.get("tasks") or {}


def completed_in(db: str, thread: str, log: Path) -> int:
    return sum(t["status"] == "completed" for t in saved_tasks(db, thread, log).values())


# 1. SIGKILL, then resume -----------------------------------------------------------------------------------------


def kill_once(db: str, folder: Path, hold_after: int) -> tuple[int, int, bool]:
    """Kill a run while the answer after ``hold_after`` answers is held; resume it in a new process.
    ``(subtasks completed before the kill, of them called again after it, whether the run finished whole)``."""
    thread = f"kill-{hold_after}-{uuid.uuid4().hex[:8]}"
    log = folder / f"{thread}.log"
    first = start_worker(db, thread, log, "start", hold_after=hold_after)
    try:
        wait_until(lambda: any(f[0] == "HELD" for f in log_lines(log)) or first.poll() is not None, "HELD line")
        # The answers before the held one are saved a superstep later (its sibling's may be in flight too).
        saved = max(hold_after - CONFIG.max_concurrency, 0)
        wait_until(lambda: completed_in(db, thread, log) >= saved or first.poll() is not None, "checkpoint")
        os.kill(first.pid, signal.SIGKILL)
    finally:
        stop(first)
    done_before = {tid for tid, t in saved_tasks(db, thread, log).items() if t["status"] == "completed"}
    second = start_worker(db, thread, log, "resume")
    try:
        second.wait(timeout=WAIT_S)
    finally:
        stop(second)
    again = {
        task_id(f[3])
        for f in log_lines(log)
        if f[0] in ("CALL", "TOOL") and f[1] == str(second.pid) and f[2] in ("subtask", "fetch")
    } & done_before
    whole = False
    if result_path(log).exists():
        statuses = json.loads(result_path(log).read_text(encoding="utf-8"))["statuses"]
        whole = statuses == {task_id(item): "completed" for item in ITEMS}
    return len(done_before), len(again), whole


def kill_and_resume(args: argparse.Namespace) -> Finding:
    moments = (2, 6) if args.quick else (1, 3, 5, 7)
    figures, bad = [], 0
    with tempfile.TemporaryDirectory() as folder:
        for name, db in databases(args, folder).items():
            found = [kill_once(db, Path(folder), hold) for hold in moments]
            again = sum(f[1] for f in found)
            whole = sum(f[2] for f in found)
            bad += again + len(found) - whole
            before = "+".join(str(f[0]) for f in found)
            figures.append(
                f"{name}: completed before the kills {before}, called again {again}, runs whole {whole}/{len(found)}"
            )
    return Finding(
        bad == 0, f"{len(moments)} kills after {', '.join(map(str, moments))} answers; " + "; ".join(figures)
    )


# 3. Processes on one SQLite file ---------------------------------------------------------------------------------


def sqlite_processes(args: argparse.Namespace) -> Finding:
    sizes = (4,) if args.quick else (2, 4, 8)
    figures, bad = [], 0
    with tempfile.TemporaryDirectory() as folder:
        for n in sizes:
            db = str(Path(folder) / f"shared-{n}.sqlite")
            logs = [Path(folder) / f"p{n}-{i}.log" for i in range(n)]
            started = [start_worker(db, f"p{i}", log, "start") for i, log in enumerate(logs)]
            try:
                for process in started:
                    process.wait(timeout=WAIT_S * 2)
            finally:
                codes = [stop(process) for process in started]
            locked = sum(Path(f"{log}.err").read_text(errors="replace").count("database is locked") for log in logs)
            whole = sum(result_path(log).exists() for log in logs)
            bad += locked + n - whole
            figures.append(f"{n} processes: locked {locked}, exit codes {dict(Counter(codes))}, runs whole {whole}/{n}")
    return Finding(bad == 0, "; ".join(figures))


# The `replangraph` command against the loopback server -----------------------------------------------------------


def cli_env(folder: Path, **extra: str) -> dict[str, str]:
    """An environment for the command whose home and data folders are under ``folder``."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "REPLANGRAPH_DB", "OPENAI_API_KEY")}
    env.update(HOME=str(folder / "home"), XDG_DATA_HOME=str(folder / "data"), REPLANGRAPH_MODEL="local")
    env.setdefault("OPENAI_API_KEY", "sk-loopback")
    return {**env, **extra}


def command(argv: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CLI, *argv],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,  # not a terminal: a question ends the command
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def subtask_id(request: ScriptedRequest) -> str:
    found = re.search(r"Your subtask \((\w+)\)", request.prompt)
    return found.group(1) if found else ""


def three_flags(on_subtask=lambda n: None):
    """A plan of three subtasks, each answering at once (after ``on_subtask(id)`` returns), and a final answer."""

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            tasks = [{"id": n, "content": f"Find the colour of flag {n}", "depends_on": []} for n in "123"]
            return tool_call("Plan", {"tasks": tasks})
        found = subtask_id(request)
        if found:
            on_subtask(found)
            return f"COLOUR {found}: colour-{found}"
        return "FINAL\n" + "\n".join(sorted(set(re.findall(r"COLOUR \d: [\w-]+", request.prompt))))

    return respond


# 6. Secrets ------------------------------------------------------------------------------------------------------


def secrets(args: argparse.Namespace) -> Finding:
    password, key = f"pw-{uuid.uuid4().hex}", f"sk-{uuid.uuid4().hex}"
    with tempfile.TemporaryDirectory() as name, OpenAILoopback(three_flags(), models=["local"]) as server:
        folder = Path(name)
        url = server.base_url.replace("http://", f"http://user:{password}@")
        run = command(
            ["run", "Find the colours of three flags", "--base-url", url], cli_env(folder, OPENAI_API_KEY=key)
        )
        output, _ = run.communicate(timeout=WAIT_S)
        files = [p for p in folder.rglob("*") if p.is_file()]
        holding = [p for p in files if password.encode() in p.read_bytes() or key.encode() in p.read_bytes()]
        printed = password in output or key in output
    held = not holding and run.returncode == 0 and not printed
    return Finding(
        held,
        f"exit code {run.returncode}; files under home and data folders {len(files)}, holding the password or "
        f"the key {len(holding)}; printed {int(printed)}",
    )


# 10. Two resumes at once -----------------------------------------------------------------------------------------


class Resumes:
    """The model side of the double-resume probe: the first run's subtask 2 is never answered (the run is killed
    there); after that, the first subtask request waits for a second one (both processes at work) or for a
    process to end (`ended`), so that two resumes overlap when both run."""

    def __init__(self) -> None:
        self.phase = "run"
        self.asked: Counter[str] = Counter()
        self.holding, self.overlap, self.stop = threading.Event(), threading.Event(), threading.Event()
        self.lock = threading.Lock()

    def on_subtask(self, found: str) -> None:
        with self.lock:
            phase = self.phase
            if phase == "resume":
                self.asked[found] += 1
                if sum(self.asked.values()) >= 2:
                    self.overlap.set()
        if phase == "run" and found == "2":
            self.holding.set()
            self.stop.wait(WAIT_S)  # never answered: the process is killed meanwhile
        elif phase == "resume":
            self.overlap.wait(WAIT_S)


LEASE_TTL_S = 2.0
"""The runs' lease time here, so that the killed run's lease expires within the probe."""


def double_resume_on(db: str, folder: Path) -> tuple[dict, list[int]]:
    """``(subtask requests after the kill by id, exit codes of the two resumes)``."""
    side = Resumes()
    with OpenAILoopback(three_flags(side.on_subtask), models=["local"]) as server:
        server.server.handle_error = lambda *args: None  # the killed run's request, answered to no one
        env = cli_env(folder, OPENAI_BASE_URL=server.base_url, REPLANGRAPH_LEASE_TTL_S=str(LEASE_TTL_S))
        thread = f"twice-{uuid.uuid4().hex[:8]}"
        one_at_a_time = ["--concurrency", "1"]  # subtask 1 answered and saved before subtask 2 is asked
        goal = "Find the colours of three flags"
        first = command(["run", goal, "--db", db, "--thread", thread, "--no-verify", *one_at_a_time], env)
        try:
            wait_until(lambda: side.holding.is_set() or first.poll() is not None, "request of subtask 2")
            os.kill(first.pid, signal.SIGKILL)
        finally:
            stop(first)
        time.sleep(LEASE_TTL_S + 0.5)  # the killed run's lease expires: both resumes may take the thread
        with side.lock:
            side.phase = "resume"
        resumes = [command(["resume", "--thread", thread, "--db", db], env) for _ in range(2)]
        try:
            wait_until(lambda: any(r.poll() is not None for r in resumes), "resume ending", WAIT_S * 2)
            side.overlap.set()
            for resume in resumes:
                resume.communicate(timeout=WAIT_S)
        finally:
            codes = [stop(resume) for resume in resumes]
            side.stop.set()
            side.overlap.set()
    return dict(side.asked), codes


def double_resume(args: argparse.Namespace) -> Finding:
    figures, bad = [], 0
    with tempfile.TemporaryDirectory() as folder:
        for name, db in databases(args, folder).items():
            asked, codes = double_resume_on(db, Path(folder))
            twice = sorted(n for n, count in asked.items() if count > 1)
            bad += len(twice) + asked.get("1", 0) + (sorted(codes) != [0, EXIT_BUSY])
            figures.append(
                f"{name}: subtasks run twice {len(twice)} {twice or ''}, completed one re-run {asked.get('1', 0)}, "
                f"resume exit codes {codes}"
            )
    return Finding(bad == 0, "; ".join(figures))


# 11. Storage failing mid-run -------------------------------------------------------------------------------------

LOOKUPS: Counter[str] = Counter()


def lookup(name: str) -> str:
    """Look up one flag by name."""
    LOOKUPS[name] += 1
    return f"{name} is colour-{name.split()[-1]}"


def lookup_flags(request: ScriptedRequest):
    """Three subtasks, each calling ``lookup`` once, then answering what it returned."""
    if "Plan" in request.tool_names:
        tasks = [{"id": n, "content": f"Look up flag {n}", "depends_on": []} for n in "123"]
        return tool_call("Plan", {"tasks": tasks})
    found = subtask_id(request)
    if found:
        result = request.last_result("lookup")
        return f"COLOUR {found}: {result}" if result else tool_call("lookup", {"name": f"flag {found}"})
    return "FINAL\n" + "\n".join(sorted(set(re.findall(r"COLOUR \d: .*", request.prompt))))


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` set (and the model's settings taken out) in the block."""
    saved = dict(os.environ)
    for name in ("OPENAI_BASE_URL", "REPLANGRAPH_DB"):
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def failing_put(at: int) -> Iterator[None]:
    """SqliteSaver.put raises a disk error on its ``at``-th call in the block."""
    real, calls = SqliteSaver.put, []

    def put(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == at:
            raise sqlite3.OperationalError("disk I/O error")
        return real(self, *args, **kwargs)

    SqliteSaver.put = put
    try:
        yield
    finally:
        SqliteSaver.put = real


def storage_failure_at(at: int, folder: Path, base_url: str) -> tuple[int, int, int]:
    """``(exit code of the failing run, of the resume, tool calls made twice)``."""
    from replangraph.app import cli

    db, out = str(folder / f"fail-{at}.sqlite"), io.StringIO()
    LOOKUPS.clear()
    tools = ["--tools", f"{__name__}:lookup", "--no-verify", "--db", db, "--thread", f"fail-{at}"]
    with failing_put(at):
        failed = cli.main(["run", "Look up three flags", "--base-url", base_url, *tools], out=out)
    found = re.search(r"the traceback is in (\S+)\.", out.getvalue())
    if found:
        with suppress(OSError):
            Path(found.group(1)).unlink()
    resumed = cli.main(["resume", "--thread", f"fail-{at}", "--db", db, "--base-url", base_url], out=io.StringIO())
    return failed, resumed, sum(count - 1 for count in LOOKUPS.values())


def storage_failure(args: argparse.Namespace) -> Finding:
    points = (4, 7) if args.quick else (3, 4, 5, 6, 7, 8, 9)
    with tempfile.TemporaryDirectory() as name, OpenAILoopback(lookup_flags, models=["local"]) as server:
        folder = Path(name)
        with environment(HOME=str(folder), XDG_DATA_HOME=str(folder), OPENAI_API_KEY="sk-loopback"):
            found = [storage_failure_at(at, folder, server.base_url) for at in points]
    twice = sum(f[2] for f in found)
    finished = sum(f[1] == 0 for f in found)
    return Finding(
        twice == 0 and finished == len(found),
        f"put failing at {', '.join(map(str, points))}: run exit codes {[f[0] for f in found]}, resumes that "
        f"finished {finished}/{len(found)}, tool calls made twice {twice} (per point {[f[2] for f in found]})",
    )


# 18. The process exits when the run ends -------------------------------------------------------------------------

EXIT_WITHIN_S = 2.0


def process_exit(args: argparse.Namespace) -> Finding:
    from hung_run import STEP_TIMEOUT_S, run_and_exit, silent_server

    figures, held = [], True
    with silent_server() as base_url:
        for mode in ("invoke", "ainvoke"):
            run_s, to_exit_s, _ = run_and_exit(base_url, mode, wait_s=WAIT_S / 3)
            held &= run_s is not None and to_exit_s is not None and to_exit_s <= EXIT_WITHIN_S
            ran = "did not end" if run_s is None else f"{run_s:.1f} s"
            left = f"not within {WAIT_S / 3:g} s (killed)" if to_exit_s is None else f"{to_exit_s:.1f} s after its end"
            figures.append(f"{mode}: run {ran}, process exited {left}")
    return Finding(held, f"step_timeout_s={STEP_TIMEOUT_S:g}, server never answers; " + "; ".join(figures))
