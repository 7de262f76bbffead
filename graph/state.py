"""The graph's state: the schema (`ReplanState`, its input and output, what a node's update and a subtask's
payload hold) and the channels' reducers. The run's settings are `replangraph.run_config`'s, the plan message
`replangraph.plan_message`'s, the events `replangraph.events`'."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage
from langgraph.channels import DeltaChannel
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps
from typing_extensions import NotRequired, TypedDict

from replangraph.queue.tasks import RESET, Task, apply_writes

# --------------------------------------------------------------------------- the state

TASKS_SNAPSHOT_EVERY = 1_000_000
"""The queue is checkpointed as its writes (each write once); a full copy is stored only every
this many writes, or at LangGraph's own bound (``LANGGRAPH_DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT``,
5,000 supersteps), so checkpoint bytes grow with the work done, not with the queue's size."""


def merge_workspace(current: Mapping | None, writes: Sequence[Mapping | None]) -> dict:
    """Reducer of the ``workspace`` channel: adds entries per step; a key written again takes the new entry."""
    merged = dict(current or {})
    for update in writes:
        for step, entries in (update or {}).items():
            merged[step] = {**merged.get(step, {}), **entries}
    return merged


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


class RunKey(str):
    """A run's own key: LangGraph makes a channel's first value by calling its type, so each run (and each
    restore of a run from a checkpoint that lacks it) gets a fresh random one; a run without a thread id is
    told apart by it."""

    def __new__(cls, value: str | None = None) -> RunKey:
        return super().__new__(cls, value or uuid.uuid4().hex)


def add_node_calls(current: Mapping[str, int] | None, new: Mapping[str, int] | None) -> dict[str, int]:
    """Reducer of ``node_calls``: adds each node's calls; None (a new plan) starts again from nothing."""
    if new is None:
        return {}
    merged = dict(current or {})
    for node, calls in new.items():
        merged[node] = merged.get(node, 0) + calls
    return merged


def first_value(current: Any, new: Any) -> Any:
    """Reducer keeping the value the channel has."""
    return current or new


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


ANSWER_ITEMS = "items"
ANSWER_SHORT = "short"
ANSWER_FORMS = (ANSWER_ITEMS, ANSWER_SHORT)
"""What a plan may say the final answer should be (state key ``answer_form``): the items found, or a short
answer (an aggregate, a yes or no, a comparison, a single fact) that names the output holding the data."""


class InputState(TypedDict):
    """What a run takes: MessagesState-compatible, with an optional explicit goal.

    The goal is the last message when that is a human message, else ``goal``,
    else the latest human message.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    goal: NotRequired[str]


class OutputState(TypedDict):
    """What a run returns: the engine's keys and those features add (`replangraph.features.Feature.output`)."""

    messages: Annotated[list[AnyMessage], add_messages]
    goal: str
    tasks: TaskQueueChannel
    replans: list[ReplanRecord]
    final_answer: str
    stop_reason: NotRequired[str]
    """Why the final answer is the fallback report (the run stopped unfinished, or the final answer could not
    be written); '' when the model wrote it."""
    workspace: NotRequired[WorkspaceChannel]
    """Whole results and kept text, by step, when the graph has no store (with one, they are in the store)."""


class ReplanState(TypedDict):
    """Full graph state: the engine's keys; the builder adds each feature's (`replangraph.features.Feature.state`).

    ``tasks`` is the subtask queue (merged by id, so parallel writers never clash);
    ``windows`` holds the private message window of each subtask in progress and
    is dropped when the subtask ends, keeping checkpoints small.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    goal: NotRequired[str]
    tasks: NotRequired[TaskQueueChannel]
    windows: NotRequired[Annotated[dict[str, list[AnyMessage]], replace_by_key]]
    workspace: NotRequired[WorkspaceChannel]
    run_key: NotRequired[Annotated[RunKey, first_value]]
    replans: NotRequired[list[ReplanRecord]]
    planner_calls: NotRequired[int]
    node_calls: NotRequired[Annotated[dict[str, int], add_node_calls]]
    """Model calls of nodes that work on no one subtask (a feature's, such as the goal check), by node: they count
    against ``max_steps`` like the planner's and the replanner's."""
    final_answer: NotRequired[str]
    answer_form: NotRequired[str]
    """What the plan says the final answer should be: ``items`` (the items found), ``short`` (an aggregate, a yes
    or no, a comparison, a single fact), or '' (not said: the items)."""
    stop_reason: NotRequired[str]
    """Why the final answer is the fallback report; '' when the model wrote it."""
    remaining_steps: NotRequired[RemainingSteps]
    """Supersteps LangGraph's ``recursion_limit`` still allows this run (managed by LangGraph, not stored)."""


class StateUpdate(TypedDict, total=False):
    """What a node returns: the keys of `ReplanState` it writes (a feature's node, its own keys too). ``tasks``
    holds changes by task id (fields to merge, a whole new task, or None to remove one), ``windows`` whole
    windows (None drops one), ``workspace`` new entries by step.

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
    node_calls: dict[str, int] | None
    final_answer: str
    answer_form: str
    stop_reason: str
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
    notes: NotRequired[list[str]]
    """What features tell the subtask at its start (`replangraph.features.Feature.opening_note`): on its first
    turn only, like ``dependencies``."""
    plan: NotRequired[str]
    """The current plan, sent to the compressor so it can re-inject it."""
    workspace: NotRequired[dict[str, dict[str, dict]]]
    """Without a store: the keys this subtask holds in the workspace (no text), so new keys never clash."""
    reply: NotRequired[str]
    """A message the user sent to the thread while the subtask's question waited: its answer (the ask node
    then does not pause)."""
