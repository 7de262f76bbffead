"""The worker side: the plugin made from a worker's own graph, and a worker serving a task queue.

Every worker builds the same graph (`build_graph` with its own models and tools) and registers it: activities
find their nodes in this process's registry. The plugin changes the graph it is given in place (and, with
``calls_as_activities``, replangraph's ``tool_call`` task): a worker process must not run graphs in-process too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio.client import Client
from temporalio.converter import PayloadCodec
from temporalio.langgraph import LangGraphPlugin
from temporalio.worker import Replayer, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from replangraph.temporal.client import connect
from replangraph.temporal.converter import converter
from replangraph.temporal.events import TOPIC
from replangraph.temporal.ids import install as install_ids
from replangraph.temporal.registry import GRAPH, calls_as_activities, effect_nodes, pausing, temporal_builder
from replangraph.temporal.storage import payload_storage
from replangraph.temporal.workflow import TASK_QUEUE, ReplanWorkflow


def plugin_for(compiled: Any, *, name: str = GRAPH, call_activities: bool = False) -> LangGraphPlugin:
    """The plugin that runs ``compiled`` (what `build_graph` returns) under ``name``. ``call_activities``: the
    tools node runs in the workflow and each tool call is an activity of its own, which crosses to any worker as
    a `CallSpec` and is rebuilt there from that worker's own graph. Events nodes write go to the run's stream
    topic (`replangraph.temporal.events`). LangGraph's ids become deterministic in this process's workflows
    (`replangraph.temporal.ids`)."""
    install_ids()
    if not call_activities:
        builder = temporal_builder(compiled, name)
        plugin = LangGraphPlugin(graphs={name: builder}, streaming_topic=TOPIC)
    else:
        tasks, options = calls_as_activities()
        builder = temporal_builder(compiled, name, in_workflow=effect_nodes(compiled))
        plugin = LangGraphPlugin(graphs={name: builder}, tasks=tasks, activity_options=options, streaming_topic=TOPIC)
    pausing(builder)  # on the nodes as the plugin left them
    return plugin


def replayer(compiled: Any, *, name: str = GRAPH, payloads: Any = None, codec: PayloadCodec | None = None) -> Replayer:
    """A replayer of runs of ``compiled`` (registered as ``name``, as `serve` does): ``await
    replayer(graph).replay_workflow(await handle.fetch_history())`` replays a run as a worker does after a
    restart, and raises if the run would take another path (a nondeterminism error). ``payloads`` and ``codec``
    as the run's workers had them (`replangraph.temporal.connect`). It builds the plugin, so the graph cannot run
    in-process in this process afterwards."""
    plugin = plugin_for(compiled, name=name, call_activities=True)
    storage = None if payloads is False else payload_storage(None if payloads is True else payloads)
    return Replayer(
        workflows=[ReplanWorkflow],
        plugins=[plugin],
        data_converter=converter(storage, codec),
        workflow_runner=sandbox_runner(),
    )


def sandbox_runner() -> SandboxedWorkflowRunner:
    """The workflow sandbox, with replangraph passed through (the plugin passes LangChain and LangGraph)."""
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("replangraph"))


def worker(client: Client, task_queue: str, **options: Any) -> Worker:
    """A worker for ``task_queue`` on a client from `replangraph.temporal.connect` (which carries the plugin):
    the workflow and, through the plugin, every node's activity. ``async with`` it, or ``await .run()``."""
    return Worker(
        client, task_queue=task_queue, workflows=[ReplanWorkflow], workflow_runner=sandbox_runner(), **options
    )


async def serve(
    address: str,
    graph: Any,
    *,
    task_queue: str = TASK_QUEUE,
    name: str = GRAPH,
    ready: Callable[[], None] | None = None,
    payloads: Any = None,
    codec: PayloadCodec | None = None,
    **options: Any,
) -> None:
    """Serve ``task_queue`` on the server at ``address`` with ``graph`` (what `build_graph` returns, built with
    this worker's models and tools) until cancelled: its workflow runs and its nodes' and tool calls' activities.
    Start any number, on any machines, each with the same graph. ``ready`` is called once the worker polls.
    ``payloads`` and ``codec``: where large payloads are kept and how payloads are encoded, the same for every
    worker and client of a run (`replangraph.temporal.connect`). ``options`` go to ``temporalio.worker.Worker``.
    This process must not also run graphs in-process.

    A graph built with a ``store`` is refused (ValueError): no store reaches a node in an activity. A checkpointer
    it was built with is not used: the workflow's history keeps the run."""
    if getattr(graph, "store", None) is not None:
        raise ValueError(
            "a graph built with a store cannot run on Temporal: the plugin gives nodes in activities no store "
            "(build it without store=; outputs a run keeps stay in its state)"
        )
    plugin = plugin_for(graph, name=name, call_activities=True)
    client = await connect(address, plugin, payloads=payloads, codec=codec)
    async with worker(client, task_queue, **options):
        if ready is not None:
            ready()
        await asyncio.Event().wait()
