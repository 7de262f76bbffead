"""What puts each model and tool call of a run in its place in a trace (LangSmith, OpenTelemetry, any LangChain
callback handler): the node that made it and the subtask it was for, as run metadata and tags
(docs/observability.md).

`traced` builds the config a call is made with: the run's tags and metadata (as LangGraph hands them to the
node) with these added; the call's ``invoke`` takes the rest of the run's config (its callbacks) from the
context, as it would without one, so the call's run stays a child of the node's run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from replangraph.queue.tasks import plan_id_of

NODE_KEY = "replangraph_node"
"""Metadata key: the graph node that made the call (``planner``, ``executor``, ``tools``, ``verifier`` ...)."""
TASK_ID_KEY = "replangraph_task_id"
"""Metadata key: the id of the subtask the call was for (calls about one subtask only)."""
PLAN_ID_KEY = "replangraph_plan_id"
"""Metadata key: the plan that queued that subtask (``1``: the planner's, ``2``...: each replan's)."""
DEPTH_KEY = "replangraph_depth"
"""Metadata key: that subtask's split depth (0 for planned subtasks)."""
NODE_TAG = "replangraph:{node}"
"""Tag of every call a node makes."""
TASK_TAG = "task:{task_id}"
"""Tag of every call made for one subtask."""


def trace_fields(node: str, task: Mapping[str, Any] | None = None) -> RunnableConfig:
    """The metadata and tags of a call ``node`` makes (for ``task``, when it is about one subtask)."""
    metadata: dict[str, Any] = {NODE_KEY: node}
    tags = [NODE_TAG.format(node=node)]
    if task is not None and task.get("id"):
        metadata[TASK_ID_KEY] = task["id"]
        metadata[PLAN_ID_KEY] = plan_id_of(task)
        metadata[DEPTH_KEY] = task.get("depth") or 0
        tags.append(TASK_TAG.format(task_id=task["id"]))
    return RunnableConfig(metadata=metadata, tags=tags)


def traced(node: str, task: Mapping[str, Any] | None = None) -> RunnableConfig:
    """The config for a model or tool call that ``node`` makes (for ``task``): the run's metadata and tags with
    the call's (`trace_fields`) added. ``invoke`` merges it over the run's config, callbacks kept."""
    run = var_child_runnable_config.get() or {}  # what ensure_config reads; the call's invoke merges it back in
    fields = trace_fields(node, task)
    tags = list(run.get("tags") or ())
    return RunnableConfig(
        metadata={**(run.get("metadata") or {}), **fields["metadata"]},
        tags=tags + [tag for tag in fields["tags"] if tag not in tags],
    )


def task_label(task: Mapping[str, Any] | None) -> str:
    """``task t1 (plan 1)``, how log lines name a subtask; ``''`` without one."""
    if not task or not task.get("id"):
        return ""
    return f"task {task['id']} (plan {task.get('plan_id') or '1'})"


def call_label(trace: RunnableConfig | None) -> str:
    """How log lines name a call made with ``trace`` (see `traced`): ``executor call for task t1 (plan 1)``,
    ``planner call``, or ``model call`` without one."""
    metadata = (trace or {}).get("metadata") or {}
    node = metadata.get(NODE_KEY)
    if node is None:
        return "model call"
    if metadata.get(TASK_ID_KEY) is None:
        return f"{node} call"
    return f"{node} call for task {metadata[TASK_ID_KEY]} (plan {metadata.get(PLAN_ID_KEY) or '1'})"
