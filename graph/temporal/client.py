"""The client side: a connection that carries the plugin and the data converter, and starting a run."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.langgraph import LangGraphPlugin

from replangraph.temporal.converter import data_converter
from replangraph.temporal.registry import GRAPH
from replangraph.temporal.workflow import ReplanWorkflow, RunRequest


async def connect(address: str, plugin: LangGraphPlugin, **options: Any) -> Client:
    """A client of the server at ``address`` (``host:port``) with ``plugin`` and replangraph's data converter:
    the client that starts runs and the one each worker is made from both need them."""
    return await Client.connect(address, plugins=[plugin], data_converter=data_converter, **options)


async def start(
    client: Client,
    input: Any,
    *,
    task_queue: str,
    id: str,
    config: dict[str, Any] | None = None,
    context: Any = None,
    graph: str = GRAPH,
    **options: Any,
) -> WorkflowHandle[ReplanWorkflow, dict[str, Any]]:
    """Start one run of the graph registered as ``graph`` on ``task_queue``; ``id`` is the workflow id and the
    run's thread id. ``config``: start from `run_defaults` of the compiled graph (the builder loses them).
    ``options`` go to ``Client.start_workflow`` (``execution_timeout``...)."""
    request = RunRequest(input=input, config=dict(config or {}), context=context, graph=graph)
    return await client.start_workflow(ReplanWorkflow.run, request, id=id, task_queue=task_queue, **options)
