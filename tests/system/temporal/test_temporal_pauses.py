"""Questions, plan approval, slash commands and the stream on Temporal (loopback server, workers as processes):
each test runs the same graph in-process beside, driven the same way (answers as ``Command(resume=...)``, commands
as input), and expects what it gave. A run is held inside a tool call by a file the test writes (`chain`), never
by timing."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from langgraph.types import Command
from temporal_graphs import asking, chain
from temporal_support import appears, new_queue, on_temporal, replay, waits, worker_process

pytestmark = pytest.mark.system  # a Temporal dev server and worker processes

GOAL = "Sum up the sales of one year."
CALL = "replangraph.nodes.execution.calls.arun_call"


def in_process(graph, thread: str, inputs: list) -> tuple[dict, list[list[dict]], list]:
    """Stream ``inputs`` one after another on ``thread`` (the goal, then answers and commands), with the modes the
    stream on Temporal has. The last state (as ``invoke`` returns it), what each pause waited on, and the pairs."""
    config = {"configurable": {"thread_id": thread}}
    out, pauses, pairs = {}, [], []
    for given in inputs:
        for mode, chunk in graph.stream(given, config, stream_mode=["updates", "custom", "values"]):
            if mode == "values":
                out = chunk
            else:
                pairs.append((mode, chunk))
        waiting = graph.get_state(config).interrupts
        if waiting:
            pauses.append([{"id": i.id, "value": i.value} for i in waiting])
    return out, pauses, pairs


def goal(text: str = GOAL) -> dict:
    return {"messages": [("user", text)]}


def texts(out: dict) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in out["messages"]]


def statuses(out: dict) -> dict[str, str]:
    return {t["id"]: t["status"] for t in out["tasks"].values()}


def events(pairs: list) -> list[str]:
    return [chunk["event"] for mode, chunk in pairs if mode == "custom"]


def nodes(pairs: list) -> list[str]:
    return [name for mode, chunk in pairs if mode == "updates" for name in chunk]


def values(waiting: list[dict]) -> list[dict]:
    return [w["value"] for w in waiting]


def test_a_question_answered_by_update_gives_the_in_process_answer(temporal_address):
    queue = new_queue()
    local, local_pauses, local_pairs = in_process(asking(), queue, [goal(), Command(resume="2024")])
    seen = {}

    async def steer(handle):
        from replangraph.temporal import answer, pending

        seen["waiting"] = await waits(handle)
        await answer(handle, "2024")  # one interrupt waits: the answer alone, as Command(resume="2024")
        seen["after"] = await pending(handle)

    with worker_process(temporal_address, queue, "temporal_graphs:asking"):
        out, activities, pairs = on_temporal(temporal_address, queue, GOAL, steer)
    assert values(seen["waiting"]) == values(local_pauses[0])
    assert seen["waiting"][0]["value"]["question"] == "Please confirm: Which year?"
    assert seen["after"] == []  # taken: nothing waits while the run goes on
    assert out["final_answer"] == local["final_answer"] and "Sales of 2024" in out["final_answer"]
    assert texts(out) == texts(local) and statuses(out) == statuses(local)
    # the stream, as astream gives it in-process: the same events and node updates, in order, the pause included
    assert events(pairs) == events(local_pairs) and "question_answered" in events(pairs)
    assert nodes(pairs) == nodes(local_pairs) and "__interrupt__" in nodes(pairs)
    (paused,) = [chunk["__interrupt__"] for mode, chunk in pairs if mode == "updates" and "__interrupt__" in chunk]
    assert [i.value for i in paused] == values(local_pauses[0])
    assert "replangraph.ask" not in activities  # the nodes that pause run in the workflow


def test_plan_approval_and_an_invalid_edit_by_update(temporal_address):
    queue = new_queue()
    cycle = [{"id": "a", "content": "A", "depends_on": ["b"]}, {"id": "b", "content": "B", "depends_on": ["a"]}]
    edited = [{"id": "x", "content": "Report the yearly totals."}]
    local, local_pauses, _ = in_process(asking("yes"), queue, [goal(), Command(resume=cycle), Command(resume=edited)])
    seen = {}

    async def steer(handle):
        from replangraph.temporal import answer

        plan = await waits(handle)
        seen["plan"] = plan
        await answer(handle, {plan[0]["id"]: cycle})  # by interrupt id, as Command(resume={id: ...})
        seen["error"] = await waits(handle)
        await answer(handle, edited)

    with worker_process(temporal_address, queue, "temporal_graphs:asking", "yes"):
        out, activities, _ = on_temporal(temporal_address, queue, GOAL, steer)
    assert values(seen["plan"]) == values(local_pauses[0]) and seen["plan"][0]["value"]["kind"] == "plan"
    assert values(seen["error"]) == values(local_pauses[1]) and "dependency cycle" in seen["error"][0]["value"]["error"]
    assert statuses(out) == statuses(local) == {"x": "completed"}
    assert out["final_answer"] == local["final_answer"] and "Report the yearly totals. done" in out["final_answer"]
    assert "replangraph.plan_review" not in activities
    # a worker that replays the run (after a restart) takes the same path: the answers name the same interrupts
    assert replay(temporal_address, queue, "temporal_graphs:asking", "yes").startswith("replayed ")


def test_a_plan_cancelled_by_update_skips_every_task_as_in_process(temporal_address):
    queue = new_queue()
    local, _, _ = in_process(asking("yes"), queue, [goal(), Command(resume="/cancel")])

    async def steer(handle):
        from replangraph.temporal import answer

        await waits(handle)
        await answer(handle, "/cancel")

    with worker_process(temporal_address, queue, "temporal_graphs:asking", "yes"):
        out, _, _ = on_temporal(temporal_address, queue, GOAL, steer)
    assert set(statuses(out).values()) == {"skipped"}
    assert out["final_answer"] == local["final_answer"] and "the user cancelled the run" in out["final_answer"]


def test_a_command_while_a_question_waits_is_answered_and_the_question_asked_again(temporal_address):
    queue = new_queue()
    local, local_pauses, _ = in_process(asking(), queue, [goal(), goal("/status"), Command(resume="2024")])
    seen = {}

    async def steer(handle):
        from replangraph.temporal import Refused, answer, send

        first = await waits(handle)
        await send(handle, "/status")
        again = await waits(handle)
        with pytest.raises(Refused, match="no interrupt waits with id"):
            await answer(handle, {first[0]["id"]: "2024"})  # the question was asked again, with a new id
        seen["first"], seen["again"] = first, again
        await answer(handle, {again[0]["id"]: "2024"})

    with worker_process(temporal_address, queue, "temporal_graphs:asking"):
        out, _, _ = on_temporal(temporal_address, queue, GOAL, steer)
    assert values(seen["again"]) == values(seen["first"]) == values(local_pauses[1])
    assert seen["again"][0]["id"] != seen["first"][0]["id"]
    assert texts(out) == texts(local)
    assert any("Waiting for an answer to 1" in text for kind, text in texts(out) if kind == "ai")


def held_run(address: str, command: str) -> tuple[dict, dict, dict]:
    """`chain` on Temporal, held in its first tool call while ``command`` is sent, then let go; what it gave, the
    activities, and what the test saw while it was held."""
    queue = new_queue()
    seen = {}
    with tempfile.TemporaryDirectory() as folder:

        async def steer(handle):
            from replangraph.temporal import Refused, answer, send

            await appears(Path(folder, "started"))  # the run works: in the first tool call
            with pytest.raises(Refused, match="nothing waits for an answer") as refused:
                await answer(handle, "2024")
            seen["refused"] = str(refused.value)
            await send(handle, command)
            Path(folder, "go").write_text("")

        with worker_process(address, queue, "temporal_graphs:chain", folder):
            out, activities, pairs = on_temporal(address, queue, "paint", steer)
    seen["queue"], seen["pairs"] = queue, pairs
    return out, activities, seen


def test_cancel_sent_mid_run_ends_the_run_as_in_process(temporal_address):
    out, activities, seen = held_run(temporal_address, "/cancel")
    # in-process: the run stopped after the step in flight (here, after the tools step), then /cancel as input
    graph = chain()
    config = {"configurable": {"thread_id": seen["queue"]}}
    graph.invoke(goal("paint"), config, interrupt_after=["tools"])
    local = graph.invoke(goal("/cancel"), config)
    assert "the run is working, or has ended" in seen["refused"]
    assert statuses(out) == statuses(local) == {"1": "skipped", "2": "skipped", "3": "skipped"}
    assert out["final_answer"] == local["final_answer"] and "the user cancelled the run" in out["final_answer"]
    assert texts(out) == texts(local)
    assert activities[CALL] == 1  # the call in flight finished; nothing after it ran


def test_a_command_sent_mid_run_is_answered_and_the_run_goes_on(temporal_address):
    out, activities, seen = held_run(temporal_address, "/status")
    # in-process: stopped after the step in flight, /status as input, then /resume (what `replangraph resume` sends)
    graph = chain()
    config = {"configurable": {"thread_id": seen["queue"]}}
    graph.invoke(goal("paint"), config, interrupt_after=["tools"])
    graph.invoke(goal("/status"), config)
    local = graph.invoke(goal("/resume"), config)
    assert statuses(out) == statuses(local) == {"1": "completed", "2": "completed", "3": "completed"}
    assert texts(out) == texts(local) and out["final_answer"] == local["final_answer"]
    assert ("human", "/status") in texts(out) and ("human", "/resume") in texts(out)
    assert activities[CALL] == 3  # each call once: none ran again after the stop
    assert "command_answered" in events(seen["pairs"])
    # the stop between steps comes at the same place on replay: the input arrived at the same point in history
    assert replay(temporal_address, seen["queue"], "temporal_graphs:chain").startswith("replayed ")


def test_the_stream_gives_the_in_process_events_in_order(temporal_address):
    queue = new_queue()
    _, _, local_pairs = in_process(chain(), queue, [goal("paint")])
    with worker_process(temporal_address, queue, "temporal_graphs:chain"):
        _, _, pairs = on_temporal(temporal_address, queue, "paint")
    assert events(pairs) == events(local_pairs)
    assert events(pairs).count("step_completed") == 3 and events(pairs)[-1] == "plan_completed"
    assert nodes(pairs) == nodes(local_pairs)
    planned = next(chunk for mode, chunk in pairs if mode == "custom" and chunk["event"] == "plan_created")
    assert planned == next(c for m, c in local_pairs if m == "custom" and c["event"] == "plan_created")
