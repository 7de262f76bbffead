"""The client side: a connection with replangraph's data converter, starting a run, following it, answering it.

A client needs no graph: it starts the workflow by name on a task queue, and the workers run it with their own.
A run's handle (from `start`, or ``client.get_workflow_handle(id)``) is all the other calls need: `pending` (what
the run waits for), `answer` (resume it), `send` (a slash command or a message), `stream` (its updates and events),
`values` (its state, as a client shows it), `log_offset` (where its stream is now).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.converter import PayloadCodec
from temporalio.plugin import SimplePlugin
from temporalio.service import RPCError, RPCStatusCode

from replangraph.temporal.converter import converter, data_converter
from replangraph.temporal.events import TOPIC, StreamReader
from replangraph.temporal.pauses import Refused
from replangraph.temporal.registry import GRAPH
from replangraph.temporal.storage import payload_storage
from replangraph.temporal.workflow import TASK_QUEUE, ReplanWorkflow, RunRequest


def core_logs_to_python(level: str = "ERROR") -> None:
    """Temporal's core (its Rust client and worker) logs through Python's ``logging`` (logger ``temporalio.core``),
    from ``level`` up, instead of writing to the console: a command's stdout then holds only what it prints. Call
    it before the first client of the process."""
    from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

    forwarded = LoggingConfig(
        filter=TelemetryFilter(core_level=level, other_level=level),
        forwarding=LogForwardingConfig(logger=logging.getLogger("temporalio.core")),
    )
    Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=forwarded)), error_if_already_set=False)


async def connect(
    address: str,
    plugin: SimplePlugin | None = None,
    *,
    payloads: str | os.PathLike[str] | None | bool = None,
    codec: PayloadCodec | None = None,
    **options: Any,
) -> Client:
    """A client of the server at ``address`` (``host:port``) with replangraph's data converter, which the
    client and every worker need; a worker's client also carries its ``plugin`` (`plugin_for`).

    ``payloads``: where payloads of `PAYLOAD_THRESHOLD` bytes or more are kept, by reference (a folder, or a
    ``postgresql://`` URL; None: `DEFAULT_FOLDER`; False: nowhere, every payload in the history). ``codec``: a
    payload codec (``temporalio.converter.PayloadCodec``: encryption, compression). The client and every worker
    of a run must give the same two."""
    storage = None if payloads is False else payload_storage(None if payloads is True else payloads)
    return await Client.connect(
        address, plugins=[plugin] if plugin else [], data_converter=converter(storage, codec), **options
    )


async def start(
    client: Client,
    input: Any,
    *,
    id: str,
    task_queue: str = TASK_QUEUE,
    config: dict[str, Any] | None = None,
    context: Any = None,
    graph: str = GRAPH,
    history_limit: int | None = None,
    **options: Any,
) -> WorkflowHandle[ReplanWorkflow, dict[str, Any]]:
    """Start one run of the graph registered as ``graph`` on ``task_queue``; ``id`` is the workflow id and the
    run's thread id. ``config``: the run's, over what the workers' graph was compiled with (`run_defaults`).
    ``history_limit``: the history's length, in events, past which the run continues as new (None: once Temporal
    suggests it). ``options`` go to ``Client.start_workflow`` (``execution_timeout``...)."""
    request = RunRequest(
        input=input, config=dict(config or {}), context=context, graph=graph, history_limit=history_limit
    )
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


async def values(handle: WorkflowHandle) -> dict[str, Any]:
    """The running run's state after its last step, as a client shows it: without its messages, windows and
    workspace (`replangraph.temporal.events.state_view`). A query: a worker must be up."""
    return await handle.query(ReplanWorkflow.values)


FAILING_ATTEMPTS = 3
"""Failed attempts in a row after which a run's workflow task is failing (Temporal retries it without end)."""
TASK_FAILED = "Workflow Task in failed state"
"""What the server answers an update (a stream's poll, an answer, new input) sent while the workflow task fails."""


async def failing_task(handle: WorkflowHandle, attempts: int = FAILING_ATTEMPTS) -> str | None:
    """Why the run's workflow task fails, when it has failed ``attempts`` times in a row (the worker's code
    raised, or passed Temporal's 2 s limit on a workflow task): the run makes no progress, and Temporal retries it
    without end. None while it does not."""
    described = await handle.describe()
    if described.raw_description.pending_workflow_task.attempt < attempts:
        return None
    request = GetWorkflowExecutionHistoryReverseRequest(
        namespace=handle._client.namespace,
        execution=WorkflowExecution(workflow_id=handle.id, run_id=described.run_id),
        maximum_page_size=20,
    )
    found = await handle._client.workflow_service.get_workflow_execution_history_reverse(request)
    failed = [e for e in found.history.events if e.HasField("workflow_task_failed_event_attributes")]
    return failed[0].workflow_task_failed_event_attributes.failure.message if failed else "no failure recorded"


def stream_client(handle: WorkflowHandle) -> WorkflowStreamClient:
    """The run's stream client, following the run into its continuations (a run continues as new when its history
    is long). It needs the handle's client, which the handle keeps but does not show (as the SDK itself reads it)."""
    return WorkflowStreamClient(handle, client=handle._client)


async def log_offset(handle: WorkflowHandle) -> int:
    """The offset the run's stream log will give its next item: `stream` from there shows only what comes next."""
    return await stream_client(handle).get_offset()


async def stream(handle: WorkflowHandle, from_offset: int = 0) -> AsyncIterator[tuple[str, Any]]:
    """The run's ``(mode, chunk)`` pairs, as ``graph.astream(..., stream_mode=["updates", "custom", "values"])``
    yields them in-process: ``("updates", {node: update})`` for each node's writes, ``("custom", event)`` for each
    event (`replangraph.EVENT_NAMES`), and ``("values", view)`` each time the graph stops (it pauses, is stopped for
    new input, or ends: the state without its messages, windows and workspace). A pause is the chunk
    ``("updates", {"__interrupt__": (Interrupt, ...)})``, as in-process, then the ``values`` one; the stream goes
    on once the run is answered, and **ends when the run ends** (after the last chunk, which needs a worker up to
    be read). ``from_offset``: the position in the run's log to start from (0: all).

    Events from nodes in activities come at least once per activity attempt; repeats are dropped here (by the
    activity and the event's place in it), for as long as this iterator lives."""
    async for _offset, pair in read_stream(handle, from_offset, StreamReader()):
        yield pair


async def read_stream(
    handle: WorkflowHandle, from_offset: int, reader: StreamReader
) -> AsyncIterator[tuple[int, tuple[str, Any]]]:
    """`stream`, each pair with its offset in the run's log, read by ``reader`` (which drops repeats it has seen:
    one reader across several reads of a run drops them across all)."""
    converter = data_converter.payload_converter
    subscriber = stream_client(handle)
    async for item in subscriber.subscribe(TOPIC, from_offset, result_type=RawValue):
        pair = reader.read(converter.from_payload(item.data.payload))
        if pair is not None:
            yield item.offset, pair
