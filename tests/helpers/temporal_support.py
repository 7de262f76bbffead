"""What the Temporal system tests share: a loopback dev server, worker processes, a client that runs a goal and
follows it (`on_temporal`), and waits with a deadline (never a timed assertion).

Skipped without the temporal extra, except under CI (``$CI`` set), where they fail: CI installs the extra.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

WORKER = Path(__file__).resolve().parent / "temporal_worker.py"
START_S = 60


def need_temporal() -> None:
    """Skip the test without the temporal extra, or fail it under CI, where a skipped Temporal test must not pass."""
    try:
        import temporalio.langgraph  # noqa: F401

        from replangraph.temporal.devserver import temporal_cli

        temporal_cli()
    except (ImportError, FileNotFoundError) as error:
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(f"Temporal tests cannot run under CI: {error}", pytrace=False)
        pytest.skip(f'needs the temporal extra (pip install "replangraph[temporal]"): {error}')


def new_queue() -> str:
    return "test-" + uuid.uuid4().hex[:8]


@contextmanager
def worker_process(address: str, queue: str, factory: str, *args: str) -> Iterator[subprocess.Popen]:
    """A worker process serving ``queue`` with the graph ``factory(*args)`` returns, stopped when the block ends
    (killed if the test killed it already). Its stderr goes to a file (a pipe nobody reads would fill and stop
    it); a test that fails inside the block gets the file's end as a note."""
    argv = [sys.executable, str(WORKER), address, queue, factory, *args]
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            line = process.stdout.readline().strip()
            if line != "serving":
                process.kill()
                process.wait(10)
                raise RuntimeError(f"the worker did not start: {line!r} {tail(log)}")
            yield process
        except BaseException as error:
            error.add_note(f"the worker's stderr ends with:\n{tail(log)}")
            raise
        finally:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            process.stdout.close()


def tail(log, chars: int = 4000) -> str:
    log.flush()
    log.seek(0)
    return log.read()[-chars:]


RUN_S = 60
"""A run that does not end by then fails the test instead of hanging it."""


def on_temporal(address: str, queue: str, goal: str, steer=None) -> tuple[dict, Counter, list]:
    """Run ``goal`` on ``queue`` from a client with no graph of its own (the workers' graph gives the run's
    defaults), the workflow id being ``queue``. ``steer(handle)``, when given, runs beside the
    run (answers, input). The final state, the activities it ran by type, and what `stream` gave."""
    from langchain_core.messages import HumanMessage

    from replangraph.temporal import connect, start, stream

    async def go():
        client = await connect(address)
        handle = await start(
            client,
            {"messages": [HumanMessage(goal)]},
            id=queue,
            task_queue=queue,
            execution_timeout=timedelta(seconds=RUN_S),
        )
        pairs: list = []

        async def follow():
            async for pair in stream(handle):
                pairs.append(pair)

        following = asyncio.create_task(follow())
        if steer is not None:
            await steer(handle)
        out = await handle.result()
        await asyncio.wait_for(following, RUN_S)
        kinds: Counter = Counter()
        async for event in handle.fetch_history_events():
            if event.HasField("activity_task_scheduled_event_attributes"):
                kinds[event.activity_task_scheduled_event_attributes.activity_type.name] += 1
        return out, kinds, pairs

    return asyncio.run(go())


async def waits(handle) -> list[dict]:
    """What the run waits on, once it waits on something (`pending`); fails the test after `RUN_S`."""
    from replangraph.temporal import pending

    deadline = time.monotonic() + RUN_S
    while time.monotonic() < deadline:
        waiting = await pending(handle)
        if waiting:
            return waiting
        await asyncio.sleep(0.05)
    raise AssertionError(f"the run did not pause within {RUN_S} s")


async def appears(path: Path) -> None:
    """Once ``path`` exists (a worker's tool wrote it); fails the test after `RUN_S`."""
    deadline = time.monotonic() + RUN_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {RUN_S} s")
        await asyncio.sleep(0.02)


REPLAY = Path(__file__).resolve().parent / "temporal_replay.py"


def replay(address: str, workflow_id: str, factory: str, *args: str) -> str:
    """Replay a run's history in a process of its own (`temporal_replay.py`); what it printed, or AssertionError
    with its stderr when the replay took another path."""
    argv = [sys.executable, str(REPLAY), address, workflow_id, factory, *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_S)
    if done.returncode != 0:
        raise AssertionError(f"the replay failed (exit {done.returncode}): {done.stderr[-4000:]}")
    return done.stdout.strip()


async def chain_events(handle) -> list[list]:
    """The history events of each Temporal run of the run ``handle`` started (from `start`), first run first: a run
    that continued as new ends with that event, which names the next run."""
    runs, run_id = [], handle.first_execution_run_id or handle.result_run_id
    while run_id:
        run = handle._client.get_workflow_handle(handle.id, run_id=run_id)
        events = [event async for event in run.fetch_history_events()]
        runs.append(events)
        last = events[-1]
        continued = last.HasField("workflow_execution_continued_as_new_event_attributes")
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id if continued else None
    return runs
