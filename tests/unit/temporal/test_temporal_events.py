"""replangraph.temporal's stream, without a server: events are published keyed by activity and place, in the
order written (threads included); a reader drops what a retried activity writes again and gives the pairs
``astream(stream_mode=["updates", "custom"])`` gives in-process; odd values never fail the publisher; LangGraph's
ids change only inside a workflow. Skipped without the temporal extra."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path

import pytest

pytest.importorskip("temporalio.langgraph", reason='needs the temporal extra: pip install "replangraph[temporal]"')

from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.runnables.config import var_child_runnable_config  # noqa: E402
from langgraph.config import get_stream_writer  # noqa: E402
from langgraph.runtime import Runtime  # noqa: E402
from langgraph.types import Interrupt  # noqa: E402

from replangraph.events import emit  # noqa: E402
from replangraph.langgraph_private import CONFIG_KEY_RUNTIME  # noqa: E402
from replangraph.temporal import data_converter  # noqa: E402
from replangraph.temporal.converter import plain  # noqa: E402
from replangraph.temporal.events import (  # noqa: E402
    KeyedWriter,
    StreamReader,
    custom_item,
    keyed_events,
    state_view,
    updates_item,
    values_item,
)
from replangraph.temporal.ids import WorkflowUUID, workflow_uuid6  # noqa: E402
from replangraph.temporal.registry import handed_over  # noqa: E402


def test_events_are_keyed_by_activity_and_place_in_order():
    published = []
    writer = KeyedWriter(published.append, "act-7", None)
    writer({"event": "step_started", "task_id": "1"})
    writer({"event": "step_completed", "task_id": "1"})
    assert [p["key"] for p in published] == ["act-7/0", "act-7/1"]
    assert published[0] == {"mode": "custom", "key": "act-7/0", "chunk": {"event": "step_started", "task_id": "1"}}
    unkeyed = []
    KeyedWriter(unkeyed.append, None, None)({"event": "plan_created"})
    assert unkeyed == [{"mode": "custom", "key": None, "chunk": {"event": "plan_created"}}]


def test_events_written_from_threads_reach_the_loop_in_the_order_written():
    """emit() runs in replangraph's pool under ainvoke; the plugin's stream client lives on the event loop."""
    published = []

    async def node():
        loop = asyncio.get_running_loop()
        writer = KeyedWriter(lambda item: published.append((threading.get_ident(), item)), "act", loop)
        thread = threading.Thread(target=lambda: [writer({"n": n}) for n in range(50)])
        thread.start()
        await asyncio.to_thread(thread.join)
        await handed_over(loop)  # as run_node does before the activity ends
        return threading.get_ident()

    loop_thread = asyncio.run(node())
    assert [item["chunk"]["n"] for _, item in published] == list(range(50))
    assert {thread for thread, _ in published} == {loop_thread}


def test_emit_inside_keyed_events_goes_out_through_the_keyed_writer():
    published = []
    token = var_child_runnable_config.set(
        {"configurable": {CONFIG_KEY_RUNTIME: Runtime(stream_writer=published.append)}}
    )
    try:
        with keyed_events("act-1"):
            emit("plan_created", tasks=[])
        get_stream_writer()({"event": "after"})  # outside the block: the plugin's writer as it was
    finally:
        var_child_runnable_config.reset(token)
    assert published == [
        {"mode": "custom", "key": "act-1/0", "chunk": {"event": "plan_created", "tasks": []}},
        {"event": "after"},
    ]
    with keyed_events("act-2"):  # outside a run: nothing to wrap, nothing fails
        emit("plan_created", tasks=[])


def crossed(item):
    converter = data_converter.payload_converter
    return converter.from_payload(converter.to_payload(item))


def test_the_reader_drops_repeats_and_gives_the_in_process_pairs():
    reader = StreamReader()
    first = crossed({"mode": "custom", "key": "act-3/0", "chunk": {"event": "step_started"}})
    again = crossed({"mode": "custom", "key": "act-3/0", "chunk": {"event": "step_started"}})  # a retry's
    workflow_side = crossed(custom_item({"event": "question_answered"}))
    message = AIMessage("done", id="m1")
    update = crossed(updates_item({"executor": {"messages": [message]}}))
    pause = crossed(updates_item({"__interrupt__": (Interrupt(value={"kind": "plan"}, id="i" * 32),)}))
    pairs = [reader.read(item) for item in (first, again, workflow_side, workflow_side, update, pause)]
    assert pairs[0] == ("custom", {"event": "step_started"}) and pairs[1] is None
    assert pairs[2] == pairs[3] == ("custom", {"event": "question_answered"})  # no key: never a repeat
    assert pairs[4] == ("updates", {"executor": {"messages": [message]}})  # the message as itself
    assert pairs[5] == ("updates", {"__interrupt__": (Interrupt(value={"kind": "plan"}, id="i" * 32),)})
    assert reader.read("written by someone else") == ("custom", "written by someone else")


def test_a_stop_publishes_the_state_without_its_text_heavy_keys():
    values = {
        "goal": "g",
        "tasks": {"1": {"id": "1", "status": "completed"}},
        "final_answer": "done",
        "messages": [AIMessage("long")],
        "windows": {"1": [AIMessage("turn")]},
        "workspace": {"1": {"result": {"text": "x"}}},
    }
    shown = {"goal": "g", "tasks": {"1": {"id": "1", "status": "completed"}}, "final_answer": "done"}
    assert state_view(values) == shown
    assert StreamReader().read(crossed(values_item(values))) == ("values", shown)


class Opaque:
    def __str__(self) -> str:
        return "an opaque thing"


def test_values_json_cannot_hold_cross_as_text():
    assert plain({"path": Path("/tmp/x"), "thing": Opaque(), "ids": {1}}) == {
        "path": "/tmp/x",
        "thing": "an opaque thing",
        "ids": [1],  # Temporal's encoder writes a set as a list
    }
    assert plain({("a", "b"): 1}) == "{('a', 'b'): 1}"  # a key JSON cannot hold: the whole value as text


def test_langgraph_ids_are_its_own_outside_a_workflow():
    made = workflow_uuid6(clock_seq=3)
    assert made.version == 6 and made != workflow_uuid6(clock_seq=3)
    assert WorkflowUUID().uuid4().version == 4 and WorkflowUUID().NAMESPACE_DNS == uuid.NAMESPACE_DNS
