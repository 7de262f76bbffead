"""The client side: a connection with replangraph's data converter, starting a run and waiting for its end.

A client needs no graph: it starts the workflow by name on a task queue, and the workers run it with their own.
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.plugin import SimplePlugin

from replangraph.temporal.converter import data_converter
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
