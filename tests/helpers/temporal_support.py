"""What the Temporal system tests share: a loopback dev server, worker processes, and a client.

Skipped without the temporal extra, except under CI (``$CI`` set), where they fail: CI installs the extra.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

WORKER = Path(__file__).resolve().parent / "temporal_worker.py"
START_S = 60
RUN_S = 60  # a run that does not end by then fails the test instead of hanging it


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
    (killed if the test killed it already)."""
    argv = [sys.executable, str(WORKER), address, queue, factory, *args]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline().strip()
        if line != "serving":
            process.kill()
            raise RuntimeError(f"the worker did not start: {line!r} {process.communicate(timeout=10)[1][-3000:]}")
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def replay(history_json: str, workflow_id: str, folder: Path, factory: str, *args: str) -> None:
    """Replay a run's history in a new process with the graph ``factory(*args)`` returns, as a worker that takes
    the run over after a crash does; fails the test with Temporal's nondeterminism error if the workflow's code
    does not make the same decisions again."""
    path = folder / f"{workflow_id}.json"
    path.write_text(history_json)
    argv = [sys.executable, str(WORKER), "--replay", str(path), factory, *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=START_S)
    assert done.stdout.strip().endswith("replayed"), done.stderr[-4000:]


def run_on_temporal(address: str, queue: str, goal: str) -> tuple[dict, Counter, str]:
    """Run ``goal`` from a client with no graph of its own; the final state, the activities it ran by type, and
    its history as JSON."""
    from langchain_core.messages import HumanMessage

    from replangraph.temporal import connect, start

    async def go():
        client = await connect(address)
        handle = await start(
            client,
            {"messages": [HumanMessage(goal)]},
            id=queue,
            task_queue=queue,
            execution_timeout=timedelta(seconds=RUN_S),
        )
        out = await handle.result()
        kinds: Counter = Counter()
        async for event in handle.fetch_history_events():
            if event.HasField("activity_task_scheduled_event_attributes"):
                kinds[event.activity_task_scheduled_event_attributes.activity_type.name] += 1
        return out, kinds, (await handle.fetch_history()).to_json()

    return asyncio.run(go())
