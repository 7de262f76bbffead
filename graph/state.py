"""The graph's state schema: what flows between planner, executor, tools, replanner and compressor."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage
from langgraph.channels import DeltaChannel, EphemeralValue
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps
from typing_extensions import NotRequired, TypedDict

from replangraph.context.workspace import merge_workspace
from replangraph.queue.tasks import RESET, Task, apply_writes

TASKS_SNAPSHOT_EVERY = 1_000_000
"""The queue is checkpointed as its writes (each write once); a full copy is stored only every
this many writes, or at LangGraph's own bound (``LANGGRAPH_DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT``,
5,000 supersteps), so checkpoint bytes grow with the work done, not with the queue's size."""

WorkspaceChannel = Annotated[
    dict[str, dict[str, dict[str, Any]]], DeltaChannel(merge_workspace, snapshot_frequency=TASKS_SNAPSHOT_EVERY)
]
"""Results and kept text of a run without a store, by step (see `replangraph.context.workspace`)."""


def replace_by_key(current: Mapping | None, update: Mapping | None) -> dict:
    """Reducer of ``windows``: each subtask's window is replaced whole; None removes it, RESET empties all."""
    merged = {} if update and update.get(RESET) else dict(current or {})
    for key, value in (update or {}).items():
        if value is None:
            merged.pop(key, None)
        elif key != RESET:
            merged[key] = value
    return merged


PlanReviewStatus = Literal["not_asked", "waiting", "approved", "edited", "cancelled"]


def latest(current: Any, new: Any) -> Any:
    """Reducer keeping the newest value: parallel branches may each write it in one step (two questions
    both answered with the cancel word), which a plain key refuses."""
    return new


TaskQueueChannel = Annotated[dict[str, Task], DeltaChannel(apply_writes, snapshot_frequency=TASKS_SNAPSHOT_EVERY)]


class ReplanRecord(TypedDict):
    """One replanning round: which subtasks asked, what came of it."""

    task_ids: list[str]
    trigger: str
    reason: str
    outcome: Literal["replanned", "gave_up", "limit"]
    """replanned: new tasks replaced the pending ones; gave_up: no way on; limit: max_replans or max_steps."""
    new_task_ids: list[str]
    replaced_task_ids: list[str]
    skipped_task_ids: list[str]
    model_calls: int
    notes: NotRequired[list[str]]
    """Repairs made to the new plan (unknown agent types, dependency spellings)."""


class InputState(TypedDict):
    """What a run takes: MessagesState-compatible, with an optional explicit goal.

    The goal is the last message when that is a human message, else ``goal``,
    else the latest human message.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    goal: NotRequired[str]


class OutputState(TypedDict):
    """What a run returns."""

    messages: Annotated[list[AnyMessage], add_messages]
    goal: str
    tasks: TaskQueueChannel
    replans: list[ReplanRecord]
    final_answer: str
    plan_review: NotRequired[PlanReviewStatus]
    cancelled: NotRequired[Annotated[bool, latest]]
    workspace: NotRequired[WorkspaceChannel]
    """Whole results and kept text, by step, when the graph has no store (with one, they are in the store)."""


class ReplanState(TypedDict):
    """Full graph state.

    ``tasks`` is the subtask queue (merged by id, so parallel writers never clash);
    ``windows`` holds the private message window of each subtask in progress and
    is dropped when the subtask ends, keeping checkpoints small.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    goal: NotRequired[str]
    tasks: NotRequired[TaskQueueChannel]
    windows: NotRequired[Annotated[dict[str, list[AnyMessage]], replace_by_key]]
    workspace: NotRequired[WorkspaceChannel]
    replans: NotRequired[list[ReplanRecord]]
    planner_calls: NotRequired[int]
    final_answer: NotRequired[str]
    plan_review: NotRequired[PlanReviewStatus]
    """``waiting`` while the plan waits for the user's approval (``approve_plan``), then what they
    decided (``approved``, ``edited``, ``cancelled``); ``not_asked`` without ``approve_plan``."""
    cancelled: NotRequired[Annotated[bool, latest]]
    """The user cancelled the run (the cancel word or ``/cancel``); the finalizer then reports what was done."""
    remaining_steps: NotRequired[RemainingSteps]
    """Supersteps LangGraph's ``recursion_limit`` still allows this run (managed by LangGraph, not stored)."""
    ended_alone: NotRequired[Annotated[bool, EphemeralValue(bool, guard=False)]]
    """Set for one superstep when the only branch running ended its subtask: the router decides at once
    instead of after an empty tools superstep (see `make_turn_router`)."""


class StateUpdate(TypedDict, total=False):
    """What a node returns: the keys of `ReplanState` it writes. ``tasks`` holds changes by task id
    (fields to merge, a whole new task, or None to remove one), ``windows`` whole windows (None
    drops one), ``workspace`` new entries by step.

    Its effects travel in it: ``workspace`` entries go to the store when the graph has one, and
    ``events`` (not a state key) are emitted; `collect_writes` applies both when the node returns.
    """

    messages: list[AnyMessage]
    goal: str
    tasks: dict[str, dict[str, Any] | None]
    windows: dict[str, list[AnyMessage] | None]
    workspace: dict[str, dict[str, dict[str, Any]]]
    replans: list[ReplanRecord]
    planner_calls: int
    final_answer: str
    plan_review: PlanReviewStatus
    cancelled: bool
    ended_alone: bool
    events: list[dict[str, Any]]


class DependencyResult(TypedDict):
    """A finished dependency as a subtask's prompt shows it."""

    id: str
    content: str
    result: str
    """The whole result (read from the workspace)."""


class SubtaskInput(TypedDict):
    """What the router sends to the executor or compressor for one subtask (a ``Send`` payload)."""

    task_id: str
    goal: str
    task: Task
    dependencies: list[DependencyResult]
    """Filled on the subtask's first turn only; later turns have them in the window."""
    window: list[AnyMessage]
    plan: NotRequired[str]
    """The current plan, sent to the compressor so it can re-inject it."""
    workspace: NotRequired[dict[str, dict[str, dict]]]
    """Without a store: the keys this subtask holds in the workspace (no text), so new keys never clash."""
    alone: NotRequired[bool]
    """The only branch of its superstep: a turn that ends the subtask sets ``ended_alone``."""
