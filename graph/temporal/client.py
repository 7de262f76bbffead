"""The client side: a connection with replangraph's data converter, starting a run, following it, answering it.

A client needs no graph: it starts the workflow by name on a task queue, and the workers run it with their own.
A run's handle (from `start`, or ``client.get_workflow_handle(id)``) is all the other calls need: `pending` (what
the run waits for), `answer` (resume it), `send` (a slash command or a message), `stream` (its updates and events).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.plugin import SimplePlugin
from temporalio.service import RPCError, RPCStatusCode

from replangraph.temporal.converter import data_converter
from replangraph.temporal.events import TOPIC, StreamReader
from replangraph.temporal.pauses import Refused
from replangraph.temporal.registry import GRAPH
from replangraph.temporal.workflow import TASK_QUEUE, ReplanWorkflow, RunRequest


async def connect(address: str, plugin: SimplePlugin | None = None, **options: Any) -> Client:
    """A client of the server at ``address`` (``host:port``) with replangraph's data converter, which the
    client and every worker need; a worker's client also carries its ``plugin`` (`plugin_for`)."""
    return await Client.connect(address, plugins=[plugin] if plugin else [], data_converter=data_converter, **options)


async def start(
    client: Client,
    input: Any,
    *,
    id: str,
    task_queue: str = TASK_QUEUE,
    config: dict[str, Any] | None = None,
    context: Any = None,
    graph: str = GRAPH,
    **options: Any,
) -> WorkflowHandle[ReplanWorkflow, dict[str, Any]]:
    """Start one run of the graph registered as ``graph`` on ``task_queue``; ``id`` is the workflow id and the
    run's thread id. ``config``: the run's, over what the workers' graph was compiled with (`run_defaults`).
    ``options`` go to ``Client.start_workflow`` (``execution_timeout``...)."""
    request = RunRequest(input=input, config=dict(config or {}), context=context, graph=graph)
    return await client.start_workflow(ReplanWorkflow.run, request, id=id, task_queue=task_queue, **options)


async def run(client: Client, input: Any, *, id: str, **options: Any) -> dict[str, Any]:
    """`start` a run and wait for its end: the graph's final state, as ``invoke`` returns it in-process."""
    handle = await start(client, input, id=id, **options)
    return await handle.result()


async def pending(handle: WorkflowHandle) -> list[dict[str, Any]]:
    """What the run waits on: ``[{"id", "value"}]``, one per interrupt, the value as the node asked (the same dict
    ``graph.get_state(config).interrupts`` holds in-process: ``kind`` ``question`` or ``plan``, with LangChain's
    HITL request); [] while the run works or after it ended."""
    return await handle.query(ReplanWorkflow.pending)


async def answer(handle: WorkflowHandle, resume: Any) -> None:
    """Resume the paused run, as ``Command(resume=resume)`` in-process: ``{interrupt id: answer, ...}`` (ids from
    `pending`), or one answer when one interrupt waits. Returns once the run took it. `Refused` (with the reason)
    when nothing waits, an answer is on its way already, the ids do not wait, or the run has ended."""
    await _update(handle, ReplanWorkflow.answer, resume)


async def send(handle: WorkflowHandle, input: Any) -> None:
    """New input for the run, as the chat path sends it: text (a slash command such as ``/status`` or ``/cancel``,
    or a message: it answers what waits, else it is a new goal) or the graph's input mapping. Input sent while the
    run works stops it between steps (the steps in flight finish); the input is answered, then the run goes on
    (``/cancel`` ends it). Returns once the run queued it; `Refused` for input of another type, or once the run
    has ended (a new goal starts a new run)."""
    await _update(handle, ReplanWorkflow.send, input)


async def _update(handle: WorkflowHandle, update: Any, arg: Any) -> None:
    """The update, with what the run refuses (and a run that has ended) raised as `Refused`."""
    try:
        await handle.execute_update(update, arg)
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        if getattr(cause, "type", None) == Refused.__name__:
            raise Refused(getattr(cause, "message", str(cause))) from None
        raise
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND and "completed" in error.message:
            raise Refused(f"the run has ended ({error.message})") from None
        raise


async def stream(handle: WorkflowHandle, from_offset: int = 0) -> AsyncIterator[tuple[str, Any]]:
    """The run's ``(mode, chunk)`` pairs, as ``graph.astream(..., stream_mode=["updates", "custom"])`` yields them
    in-process: ``("updates", {node: update})`` for each node's writes, ``("custom", event)`` for each event
    (`replangraph.EVENT_NAMES`). A pause is the chunk ``("updates", {"__interrupt__": (Interrupt, ...)})``, as
    in-process; the stream goes on once the run is answered, and **ends when the run ends** (after the last chunk,
    which needs a worker up to be read). ``from_offset``: the position in the run's log to start from (0: all).

    Events from nodes in activities come at least once per activity attempt; repeats are dropped here (by the
    activity and the event's place in it), for as long as this iterator lives."""
    reader = StreamReader()
    converter = data_converter.payload_converter
    subscriber = WorkflowStreamClient(handle)
    async for item in subscriber.subscribe(TOPIC, from_offset, result_type=RawValue):
        pair = reader.read(converter.from_payload(item.data.payload))
        if pair is not None:
            yield pair
