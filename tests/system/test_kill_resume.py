"""Kill tests: a durable run killed with SIGKILL (mid-queue, or while a question waits) goes on in a new process.

The run is `durable_worker.py` in a subprocess; every model and tool call it makes is a line in a log, with
the process id, so the calls of the killed and the resumed process can be told apart and counted. A
subtask completed before the kill is never run again, the work in flight when it came is all that is
redone, and the final answer holds every item, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from durable_worker import CONFIG, HOLD_ENV, ITEMS, QUESTION, build, marker, result_path, run_config, task_id
from scripting import result_text

from replangraph.durable import open_saver

pytestmark = pytest.mark.system  # worker processes (and PostgreSQL for `durable_db`)

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parents[1] / "helpers" / "durable_worker.py"
WAIT_S = 60
ANSWER = "teal-answer-5150"


class Workers:
    """Worker processes of one test; `close` kills and reaps any still running."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.started: list[subprocess.Popen] = []
        self.files: list = []

    def start(
        self, db: str, thread: str, log: Path, mode: str, *extra: str, hold_after: int | None = None
    ) -> subprocess.Popen:
        """A worker (see durable_worker.py); ``hold_after``: it holds the answer after that many."""
        n = len(self.started)
        out, err = (open(self.folder / f"worker{n}.{kind}", "wb") for kind in ("out", "err"))  # noqa: SIM115
        self.files += [out, err]
        env = {k: v for k, v in os.environ.items() if k != HOLD_ENV}
        if hold_after is not None:
            env[HOLD_ENV] = str(hold_after)
        worker = subprocess.Popen(
            [sys.executable, str(WORKER), db, thread, str(log), mode, *extra],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,  # never written: a question or a held answer waits on it until the kill
            stdout=out,
            stderr=err,
        )
        self.started.append(worker)
        return worker

    def output(self, worker: subprocess.Popen) -> str:
        n = self.started.index(worker)
        return "\n".join(
            (self.folder / f"worker{n}.{kind}").read_text(errors="replace")[-3000:] for kind in ("out", "err")
        )

    def finish(self, worker: subprocess.Popen) -> None:
        """Wait for a worker to end; it must exit 0."""
        try:
            code = worker.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"worker {worker.pid} still running after {WAIT_S}s:\n{self.output(worker)}")
        assert code == 0, f"worker {worker.pid} exited {code}:\n{self.output(worker)}"

    def close(self) -> None:
        for worker in self.started:
            if worker.poll() is None:
                worker.kill()
            worker.wait(timeout=30)
            if worker.stdin:
                worker.stdin.close()
        for file in self.files:
            file.close()


@pytest.fixture
def workers(tmp_path):
    started = Workers(tmp_path)
    try:
        yield started
    finally:
        started.close()


def log_lines(log: Path) -> list[list[str]]:
    """The log's complete lines, split into fields (``kind, pid, ...``)."""
    if not log.exists():
        return []
    text = log.read_text(encoding="utf-8")
    return [line[:-1].split("\t") for line in text.splitlines(keepends=True) if line.endswith("\n") and line.strip()]


def wait_for(log: Path, worker: subprocess.Popen, workers: Workers, enough, what: str = "the log lines") -> Any:
    """Poll until ``enough(lines of the log)`` is true (its value), the worker still running; fails saying
    ``what`` was awaited after `WAIT_S` (a guard: a worker that is held or asks gets there in well under a second)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = enough(log_lines(log))
        if found:
            return found
        if worker.poll() is not None:
            pytest.fail(f"worker {worker.pid} ended ({worker.returncode}) too soon:\n{workers.output(worker)}")
        time.sleep(0.01)
    text = log.read_text() if log.exists() else "(no log)"
    pytest.fail(f"worker {worker.pid}: no {what} after {WAIT_S}s; log:\n{text}\n{workers.output(worker)}")


def held_after_three(lines: list[list[str]]) -> bool:
    """The log shows three answers and a held one."""
    return sum(f[0] == "DONE" for f in lines) == 3 and any(f[0] == "HELD" for f in lines)


def completed_in(db: str, log: Path, thread: str) -> int:
    """Subtasks completed in the thread's last saved checkpoint (0 before the first)."""
    values = read_back(db, log, thread)[0] if has_checkpoint(db, thread) else {}
    return sum(t["status"] == "completed" for t in (values.get("tasks") or {}).values())


def has_checkpoint(db: str, thread: str) -> bool:
    with open_saver(db) as (checkpointer, _store):
        return checkpointer.get_tuple(run_config(thread)) is not None


def kill(worker: subprocess.Popen) -> None:
    os.kill(worker.pid, signal.SIGKILL)
    assert worker.wait(timeout=30) == -signal.SIGKILL


def calls(lines: list[list[str]], pid: int, kinds=("CALL", "TOOL")) -> list[tuple[str, str, str, str, int]]:
    """One process's model and tool calls: ``(line kind, call kind, who, turn, superstep)``."""
    return [(f[0], f[2], f[3], f[4], int(f[5])) for f in lines if f[0] in kinds and f[1] == str(pid)]


def key(call: tuple) -> tuple:
    """What a call is, whichever process makes it: the same key in two processes is a call made twice."""
    return call[:4]


def subtask_calls(found: list[tuple]) -> list[tuple]:
    return [c for c in found if c[0] == "CALL" and c[1] == "subtask"]


def read_back(db: str, log: Path, thread: str, question: bool = False):
    """The thread's saved state, read as a new process would: ``(values, checkpoint step, whole results)``.
    Whole results come from the store where there is one (PostgreSQL), else from the ``workspace`` channel."""
    with open_saver(db) as (checkpointer, store):
        state = build(checkpointer, store, log, question=question).get_state(run_config(thread))
        values, whole = state.values, {}
        for tid, task in values["tasks"].items():
            ref = task.get("result_ref")
            if not ref:
                whole[tid] = task.get("result")
            elif store is not None:
                whole[tid] = store.get(("replangraph", thread), ref["key"]).value["content"]
            else:
                whole[tid] = result_text(values, tid, task.get("plan_id") or "1")
        return values, state.metadata["step"], whole


def assert_complete(values: dict, whole: dict, final_answer: str) -> None:
    """Nothing lost: every task completed, every item's payload (both ends) in its result and the answer."""
    assert {tid: t["status"] for tid, t in values["tasks"].items()} == {task_id(i): "completed" for i in ITEMS}
    for item in ITEMS:
        ends = (marker(item), f"end-of-{item.replace(' ', '-')}")
        assert all(end in whole[task_id(item)] for end in ends), item
        assert all(end in final_answer for end in ends), item


def finished(log: Path) -> dict:
    return json.loads(result_path(log).read_text(encoding="utf-8"))


def test_a_run_killed_mid_queue_resumes_without_running_finished_subtasks_again(durable_db, workers, tmp_path):
    # An uninterrupted run on a thread of its own: the calls the work takes.
    whole_log = tmp_path / "whole.log"
    whole = workers.start(durable_db, "whole", whole_log, "start")
    workers.finish(whole)
    baseline = subtask_calls(calls(log_lines(whole_log), whole.pid))
    assert Counter(c[2] for c in baseline) == Counter({item: 2 for item in ITEMS})  # fetch, then answer

    # Three answers go through and the fourth is held mid-superstep (its sibling's answer may be in flight too):
    # the kill lands there once the log shows it and the database holds the checkpoint with two completed.
    log = tmp_path / "killed.log"
    first = workers.start(durable_db, "job", log, "start", hold_after=3)
    wait_for(log, first, workers, held_after_three, "HELD line after three DONE lines")
    wait_for(log, first, workers, lambda _: completed_in(durable_db, log, "job") >= 2, "checkpoint with 2 completed")
    kill(first)
    values, saved_step, _ = read_back(durable_db, log, "job")
    done_before = {tid for tid, t in values["tasks"].items() if t["status"] == "completed"}
    assert len(done_before) >= 2, values["tasks"]  # items 1 and 2 answered two supersteps before the third

    second = workers.start(durable_db, "job", log, "resume")
    workers.finish(second)
    lines = log_lines(log)
    killed, resumed = calls(lines, first.pid), calls(lines, second.pid)

    # A subtask completed before the kill makes no call again, neither model nor tool.
    again = [c for c in resumed if c[1] in ("subtask", "fetch") and task_id(c[2]) in done_before]
    assert not again, f"completed before the kill: {sorted(done_before)}; called again: {again}"
    # Only the calls made after the last saved checkpoint (its superstep was in flight) may be made twice.
    in_flight = [c for c in killed if c[4] > saved_step]
    repeated = {key(c) for c in resumed} & {key(c) for c in killed}
    assert repeated <= {key(c) for c in in_flight}, (repeated, in_flight, saved_step)
    assert not [c for c in resumed if c[1] == "plan"]
    # The work as a whole costs at most the in-flight model calls more than an uninterrupted run.
    total = len(subtask_calls(killed)) + len(subtask_calls(resumed))
    extra = total - len(baseline)
    assert 0 <= extra <= len(subtask_calls(in_flight)), (total, len(baseline), in_flight)
    assert extra <= CONFIG.max_concurrency  # one superstep's executor branches at most

    result = finished(log)
    values, _, whole = read_back(durable_db, log, "job")
    assert_complete(values, whole, result["final_answer"])
    print(
        f"\nkill mid-queue: checkpoint step {saved_step}, completed before the kill {sorted(done_before)}; "
        f"subtask model calls: uninterrupted {len(baseline)}, killed {len(subtask_calls(killed))}, "
        f"resumed {len(subtask_calls(resumed))}, extra {extra}; in flight {in_flight}; repeated {sorted(repeated)}"
    )


def test_a_run_killed_while_a_question_waits_is_answered_by_a_new_process(durable_db, workers, tmp_path):
    log = tmp_path / "question.log"
    first = workers.start(durable_db, "asked", log, "question")
    lines = wait_for(log, first, workers, lambda lines: any(f[0] == "WAITING" for f in lines) and lines, "WAITING")
    assert [f[2] for f in lines if f[0] == "WAITING"] == ["Please confirm: " + QUESTION]
    kill(first)
    values, _, _ = read_back(durable_db, log, "asked", question=True)
    assert values["tasks"][task_id("item 5")]["status"] == "in_progress"

    second = workers.start(durable_db, "asked", log, "answer", ANSWER)
    workers.finish(second)
    lines = log_lines(log)
    killed, resumed = calls(lines, first.pid), calls(lines, second.pid)

    # Nothing done before the question is done again: no model call, no tool call, no second question.
    repeated = {key(c) for c in resumed} & {key(c) for c in killed}
    assert not repeated, f"made again after the answer: {sorted(repeated)}"
    assert [f for f in lines if f[0] == "WAITING"] == [f for f in lines if f[0] == "WAITING" and f[1] == str(first.pid)]
    asked_turns = [c for c in killed + resumed if c[1] == "subtask" and c[2] == "item 5"]
    assert [c[3] for c in asked_turns] == ["0", "1", "2"]  # ask, fetch, answer: each once

    values, _, whole = read_back(durable_db, log, "asked", question=True)
    result = finished(log)
    assert_complete(values, whole, result["final_answer"])
    asking = task_id("item 5")
    assert f"colour={ANSWER}" in whole[asking]
    assert values["tasks"][asking]["clarifications"] == [{"question": QUESTION, "answer": ANSWER}]
    assert f"colour={ANSWER}" in result["final_answer"]
    print(
        f"\nkill at a question: model and tool calls: killed {len(killed)}, answering {len(resumed)}, "
        f"subtask model calls {len(subtask_calls(killed))} + {len(subtask_calls(resumed))}"
    )
