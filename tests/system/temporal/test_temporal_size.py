"""replangraph on Temporal at size, against a loopback dev server with workers as processes: payloads cross as
references to the payload store (none in the history past a few KiB), a long run continues as new and keeps every
item, a 10 MB tool output is cut for the model and kept whole with its side effect run once, and a run's own
concurrency reaches the workers whatever they were built with."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta

import pytest
from temporal_support import RUN_S, chain_events, new_queue, worker_process

pytestmark = pytest.mark.system  # a Temporal dev server and worker processes

EVENT_BYTES = 16 * 1024
"""No history event of these runs is larger: every payload past 4 KiB is in the payload store."""


def largest_event(runs: list[list]) -> int:
    return max(event.ByteSize() for events in runs for event in events)


async def run_on(address: str, queue: str, goal: str, **options):
    """Start ``goal`` on ``queue``, follow its stream to the end: (final state, the runs' events, stream pairs)."""
    from langchain_core.messages import HumanMessage

    from replangraph.temporal import connect, start, stream

    client = await connect(address)
    handle = await start(
        client,
        {"messages": [HumanMessage(goal)]},
        id=queue,
        task_queue=queue,
        execution_timeout=timedelta(seconds=3 * RUN_S),
        **options,
    )
    pairs = []

    async def follow():
        async for pair in stream(handle):
            pairs.append(pair)

    following = asyncio.create_task(follow())
    out = await handle.result()
    await asyncio.wait_for(following, RUN_S)
    return out, await chain_events(handle), pairs


def test_a_long_run_continues_as_new_with_every_item_and_references_in_its_history(temporal_address):
    from benchmarks.worlds import CatalogWorld

    world = CatalogWorld(150)  # 30 subtasks, each reading 5 products
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:catalog_run", "150"):
        out, runs, pairs = asyncio.run(run_on(temporal_address, queue, world.goal, history_limit=120))
    assert len(runs) >= 3  # it continued as new, more than once
    assert world.score(out["final_answer"]) == 150  # every product in the answer
    assert sum(t["status"] == "completed" for t in out["tasks"].values()) == len(out["tasks"]) >= 30
    assert largest_event(runs) < EVENT_BYTES
    # the stream followed the run into its continuations, up to the end
    assert pairs[-1][0] == "values" and pairs[-1][1]["final_answer"] == out["final_answer"]
    completed = {e["task_id"] for mode, e in pairs if mode == "custom" and e.get("event") == "step_completed"}
    assert completed == set(out["tasks"])


async def activity_inputs(address: str, runs: list[list]) -> dict[str, list[int]]:
    """Each activity's input size as JSON (what its payload holds, read through the payload store), by activity."""
    import json

    from benchmarks.temporal_table import payloads_of
    from replangraph.temporal import connect
    from replangraph.temporal.converter import LangChainEncoder

    client = await connect(address)
    sizes: dict[str, list[int]] = {}
    for events in runs:
        payloads = await payloads_of(client, events)
        for event in events:
            if event.WhichOneof("attributes") == "activity_task_scheduled_event_attributes":
                name = event.activity_task_scheduled_event_attributes.activity_type.name.rsplit(".", 1)[-1]
                text = json.dumps(payloads[event.event_id], cls=LangChainEncoder)
                sizes.setdefault(name, []).append(len(text))
    return sizes


def test_the_completion_checks_model_calls_cross_with_their_subtask_not_the_state(temporal_address):
    """The completion check reads the whole queue to place what it queues, so it runs in the workflow with the
    state; each of its model calls is an activity of its own whose input is one subtask and its answer. Before,
    the check was an activity whose input was the whole state (about 2 KB more per subtask in the run)."""
    from benchmarks.worlds import CatalogWorld

    world = CatalogWorld(100)  # 20 subtasks, each reading 5 products, each answer checked
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:catalog_run", "100"):
        out, runs, _ = asyncio.run(run_on(temporal_address, queue, world.goal))
        sizes = asyncio.run(activity_inputs(temporal_address, runs))
    assert world.score(out["final_answer"]) == 100
    assert "verifier" not in sizes  # the check itself is no activity
    checks = sizes["arun_node_call"]
    assert len(checks) >= 20  # one per answer checked
    whole_state = max(sizes["finalize"])  # the final answer's node reads the whole state
    assert max(checks) < 6_000 < whole_state, (max(checks), whole_state)
    per_subtask = [max(sizes[name]) for name in ("executor", "arun_call", "arun_node_call")]
    assert max(per_subtask) < whole_state / 4, sizes


def test_a_10_mb_tool_output_is_cut_for_the_model_kept_whole_and_run_once(temporal_address, tmp_path):
    log = tmp_path / "calls.log"
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:huge_output", "10", str(log)):
        out, runs, _ = asyncio.run(run_on(temporal_address, queue, "Dump the archive."))
    assert len(log.read_text().splitlines()) == 1  # the tool's side effect ran once
    seen = int(re.search(r"saw (\d+) characters", out["final_answer"]).group(1))
    assert 0 < seen < 20_000  # the model saw the cut version
    kept = [entry["content"] for step in out["workspace"].values() for entry in step.values()]
    assert any(len(text) >= 9_900_000 for text in kept)  # the whole output is kept
    assert largest_event(runs) < EVENT_BYTES


def test_the_runs_concurrency_reaches_workers_built_with_less(temporal_address, tmp_path):
    """Workers built with max_concurrency 2; the run asks for 8: its 8 one-second calls run at once, on both."""
    from replangraph import AgentConfig

    log = tmp_path / "calls.log"
    queue = new_queue()
    factory = ("temporal_graphs:logged_calls", "8", str(log), "1", "2")
    with worker_process(temporal_address, queue, *factory), worker_process(temporal_address, queue, *factory):
        out, _, _ = asyncio.run(
            run_on(temporal_address, queue, "Work on every item.", context=AgentConfig(max_concurrency=8))
        )
    assert sum(t["status"] == "completed" for t in out["tasks"].values()) == 8
    lines = [line.split() for line in log.read_text().splitlines()]
    running = peak = 0
    for kind, _pid, _item in lines:
        running += 1 if kind == "START" else -1
        peak = max(peak, running)
    assert peak == 8
    assert len({pid for kind, pid, _ in lines if kind == "START"}) == 2


def test_the_payload_store_on_postgresql_serves_a_run(temporal_address, postgres_db, monkeypatch):
    """Workers and client on one PostgreSQL payload store (``--payloads postgresql://...``): the run completes, and
    its large payloads are rows of ``replangraph_payloads``."""
    import psycopg

    from benchmarks.worlds import CatalogWorld

    world = CatalogWorld(50)
    monkeypatch.setenv("REPLANGRAPH_PAYLOADS", postgres_db)  # the worker process and this client
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:catalog_run", "50"):
        out, runs, _ = asyncio.run(run_on(temporal_address, queue, world.goal))
    assert world.score(out["final_answer"]) == 50
    assert largest_event(runs) < EVENT_BYTES
    with psycopg.connect(postgres_db) as connection:
        rows, size = connection.execute("SELECT count(*), sum(length(data)) FROM replangraph_payloads").fetchone()
    assert rows > 10 and size > 50_000
