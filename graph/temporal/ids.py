"""The ids LangGraph makes at random, made the same on every replay of a workflow.

Temporal replays a workflow from its history (a worker restarted, a run no longer in a worker's cache, a query
on a run that ended), and the replay must take the same path. LangGraph runs in the workflow as passed-through
code, so its ids come from the real clock and ``random``: a checkpoint's id (``uuid6``), hence every task's id and
every interrupt's id (a hash of the task's namespace), and the ids ``add_messages`` gives messages that have none
(``uuid4``). On replay an answer given by interrupt id would name an interrupt that no longer exists, and the
graph would pause again where history says it went on.

`install` (done by `replangraph.temporal.plugin_for`, once per worker process) makes both deterministic inside a
workflow: a checkpoint's id is a UUIDv6 from the workflow's clock (``workflow.time_ns()``, kept increasing per run, as
checkpoint ids must be: a saver's latest is the greatest) and its seeded random numbers; a message's id is
``workflow.uuid4()``. Outside a workflow (activities, in-process runs) LangGraph's own functions run unchanged.
"""

from __future__ import annotations

import uuid
from types import ModuleType
from typing import Any

from langgraph.checkpoint.base import id as checkpoint_ids
from langgraph.graph import message as messages_module
from temporalio import workflow

from replangraph.langgraph_private import pregel_checkpoint

UUID_EPOCH = 0x01B21DD213814000
"""100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch, as ``uuid6`` counts them."""
LAST = "_replangraph_last_uuid6"
"""The attribute of the workflow instance that keeps its last checkpoint timestamp (ids only increase)."""


def workflow_uuid6(node: int | None = None, clock_seq: int | None = None) -> uuid.UUID:
    """LangGraph's ``uuid6``; in a workflow, from its clock and seeded random numbers, increasing per run."""
    if not workflow.in_workflow():
        return checkpoint_ids.uuid6(node=node, clock_seq=clock_seq)
    owner = workflow.instance()
    now = workflow.time_ns() // 100 + UUID_EPOCH
    timestamp = max(now, getattr(owner, LAST, 0) + 1)
    setattr(owner, LAST, timestamp)
    rng = workflow.random()
    clock_seq = rng.getrandbits(14) if clock_seq is None else clock_seq
    node = rng.getrandbits(48) if node is None else node
    value = ((timestamp >> 12) & 0xFFFFFFFFFFFF) << 80
    value |= (timestamp & 0x0FFF) << 64
    value |= (clock_seq & 0x3FFF) << 48
    value |= node & 0xFFFFFFFFFFFF
    return checkpoint_ids.UUID(int=value, version=6)


class WorkflowUUID(ModuleType):
    """The ``uuid`` module as ``add_messages`` sees it: ``uuid4`` is ``workflow.uuid4()`` inside a workflow."""

    def __init__(self) -> None:
        super().__init__("uuid")

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)

    @staticmethod
    def uuid4() -> uuid.UUID:
        return workflow.uuid4() if workflow.in_workflow() else uuid.uuid4()


def install() -> None:
    """Make LangGraph's checkpoint and message ids deterministic inside workflows, in this process (again: no-op)."""
    pregel_checkpoint.uuid6 = workflow_uuid6
    if not isinstance(messages_module.uuid, WorkflowUUID):
        messages_module.uuid = WorkflowUUID()
