"""The workflow: one run of the graph, the Pregel loop in the workflow and the nodes as activities."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow

from replangraph.llm.calls import step_time
from replangraph.temporal.registry import GRAPH, defaults_for

WORKFLOW = "replangraph"
"""The workflow type's name."""
TASK_QUEUE = "replangraph"
"""The task queue workers serve and runs start on, unless told another."""


@dataclass
class RunRequest:
    """What a run starts from: the graph's ``input`` (its messages cross as LangChain messages), the run
    ``config`` (over the defaults `build_graph` compiled in, which the worker's registry holds), the run's
    ``context`` (an `AgentConfig`, or a mapping of its fields) and the graph's registered name."""

    input: Any
    config: dict[str, Any] = field(default_factory=dict)
    context: Any = None
    graph: str = GRAPH


@workflow.defn(name=WORKFLOW)
class ReplanWorkflow:
    """One run of the graph: the Pregel loop here, the nodes as activities. Its id is the run's thread id."""

    @workflow.run
    async def run(self, request: RunRequest) -> dict[str, Any]:
        with workflow.unsafe.imports_passed_through():
            from langgraph.checkpoint.memory import InMemorySaver
            from temporalio.langgraph import graph

        step_time.set(workflow.time)  # steps timed in the workflow (the tools node) decide the same on replay
        app = graph(request.graph).compile(checkpointer=InMemorySaver(), name=request.graph)
        # what `build_graph` compiled in (the builder the plugin runs has lost it), then the caller's
        config = {**defaults_for(request.graph), **request.config}
        config["configurable"] = {"thread_id": workflow.info().workflow_id}
        return await app.ainvoke(request.input, config, context=request.context)
