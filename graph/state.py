"""The graph's state and what its nodes read and write besides it.

- the state schema (`ReplanState`, its input and output) and the channels' reducers;
- the run's settings: the graph's `AgentConfig` overlaid by the run's context, read through LangGraph's
  public runtime API (`Configured`, `run_settings`);
- the plan message: the queue as Markdown in ``messages``, one message updated in place (`with_plan_message`);
- the events of the custom stream (``stream_mode="custom"``): update builders return them under an
  update's ``events`` key (`event`); the node's `collect_writes` wrapper emits them when it returns normally.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import importlib
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.channels import DeltaChannel
from langgraph.config import get_config, get_stream_writer
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps
from langgraph.runtime import get_runtime
from pydantic import BaseModel, ValidationError
from typing_extensions import NotRequired, TypedDict

import replangraph.nodes as nodes
from replangraph.config import AgentConfig
from replangraph.hosting import RUN_CAN_PAUSE
from replangraph.langgraph_private import CONFIG_KEY_CHECKPOINTER
from replangraph.llm.reading import as_text, waiting_questions
from replangraph.queue.tasks import RESET, Task, apply_writes, plan_markdown

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
"""Results and kept text of a run without a store, by step (see `replangraph.context.kept`)."""


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


# --------------------------------------------------------------------------- the run's settings

SETTING_NAMES = frozenset(AgentConfig.model_fields)


def run_context() -> Any:
    """The ``context`` of the run in progress (LangGraph's public ``get_runtime()``), or None."""
    try:
        return getattr(get_runtime(), "context", None)
    except (RuntimeError, KeyError):  # no run, or a runnable's config outside a graph (a tool invoked alone)
        return None


def context_settings(context: Any) -> dict[str, Any]:
    """The settings a run's context sets: the fields set on an `AgentConfig`, or the keys (attributes of a
    dataclass) named like its fields, so a parent graph's own context schema may carry them too."""
    if context is None:
        return {}
    if isinstance(context, AgentConfig):
        return {name: getattr(context, name) for name in context.model_fields_set}
    if isinstance(context, Mapping):
        return {name: context[name] for name in SETTING_NAMES.intersection(context)}
    if dataclasses.is_dataclass(context):
        return {f.name: getattr(context, f.name) for f in dataclasses.fields(context) if f.name in SETTING_NAMES}
    if isinstance(context, BaseModel):
        return {name: getattr(context, name) for name in SETTING_NAMES.intersection(context.model_fields_set)}
    return {}


_RESOLVED: contextvars.ContextVar[dict[int, tuple[AgentConfig, Any, AgentConfig]] | None] = contextvars.ContextVar(
    "replangraph_resolved_settings", default=None
)
"""The settings `run_settings` resolved in the node call in progress, by ``id(base)``: ``(base, the run config's
configurable it was resolved under, the settings)`` (`settings_resolved_once`)."""


@contextmanager
def settings_resolved_once() -> Iterator[None]:
    """Within it, `run_settings` resolves each base once per run config. A node's call runs under one run
    config and one context, and its helpers read the settings dozens of times per model turn; `collect_writes`
    and the routers enter this around every node call and decision (a fresh scope each time). A run started
    inside the call (a graph used as a tool) has a run config of its own, so it resolves its own settings."""
    token = _RESOLVED.set({})
    try:
        yield
    finally:
        _RESOLVED.reset(token)


def run_settings(base: AgentConfig) -> AgentConfig:
    """The settings of the run in progress: ``base`` (the graph's), overlaid with the run config's
    ``configurable`` keys that name `AgentConfig` fields, then with the fields its ``context`` sets.
    ``base`` outside a run. Invalid values raise ValueError naming them."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a run
        return base
    resolved = _RESOLVED.get()
    if resolved is None:
        return _resolve_settings(base, configurable)
    known = resolved.get(id(base))
    if known is None or known[0] is not base or known[1] is not configurable:
        known = resolved[id(base)] = (base, configurable, _resolve_settings(base, configurable))
    return known[2]


def _resolve_settings(base: AgentConfig, configurable: Mapping[str, Any]) -> AgentConfig:
    overrides = {name: configurable[name] for name in SETTING_NAMES.intersection(configurable)}
    overrides.update(context_settings(run_context()))
    if not overrides:
        return base
    items = tuple(sorted(overrides.items()))
    try:
        return _overlaid(base, items)
    except TypeError:  # an unhashable value: validate it without the cache
        return _overlaid.__wrapped__(base, items)


@functools.lru_cache(maxsize=128)
def _overlaid(base: AgentConfig, overrides: tuple[tuple[str, Any], ...]) -> AgentConfig:
    if all(getattr(base, name) == value for name, value in overrides):
        return base
    try:
        return AgentConfig(**{**base.model_dump(), **dict(overrides)})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"invalid run settings (context or configurable): {problems}") from None


def has_checkpointer() -> bool:
    """Whether the run in progress can pause: it has a checkpointer (its own, its parent graph's, or the
    one ``langgraph dev`` gives it at run time), or the host that runs the node says it keeps paused runs
    itself (`replangraph.hosting.RUN_CAN_PAUSE` in the run's metadata).

    LangGraph 1.2 has no public way to ask: ``Runtime`` holds no checkpointer (``execution_info.thread_id``
    is only the config's), and ``interrupt()`` without one raises nothing; the run just ends with
    ``__interrupt__``. So this reads the private config key, here only; a ``Runtime.checkpointer`` (or
    an error from ``interrupt()``) would replace it. Outside a run (a wrapper called alone) nothing says it
    cannot: True.
    """
    try:
        config = get_config()
    except RuntimeError:
        return True
    if (config.get("metadata") or {}).get(RUN_CAN_PAUSE):
        return True
    return (config.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER) is not None


class Configured:
    """A node or helper built with the graph's `AgentConfig` (``base_config``) whose ``config`` is the
    settings of the run in progress (`run_settings`), so a run's context reaches every limit it reads."""

    base_config: AgentConfig

    @property
    def config(self) -> AgentConfig:
        return run_settings(self.base_config)


# --------------------------------------------------------------------------- the plan message

PLAN_MESSAGE_ID = "replangraph-plan-"
"""How the ids of plan messages start (one per goal: the rest of the id is new with each plan)."""


def plan_message(state: Mapping[str, Any], update: Any, new_plan: bool = False) -> AIMessage | None:
    """The plan message after ``update`` (a node's update of ``state``): the queue as `plan_markdown`, with
    the question each subtask waits on. It keeps the id of the thread's latest plan message, so LangGraph's
    ``add_messages`` replaces that message where it stands; ``new_plan``: a new message for a new plan.
    None when the update changes neither tasks nor windows, there is no plan message to update, or its
    text would not change."""
    if not isinstance(update, Mapping) or not {"tasks", "windows"} & update.keys():
        return None
    messages = state.get("messages") or []
    current = next((m for m in reversed(messages) if str(m.id or "").startswith(PLAN_MESSAGE_ID)), None)
    if current is None and not new_plan:
        return None
    tasks = apply_writes(state.get("tasks") or {}, [update.get("tasks")])
    windows = replace_by_key(state.get("windows"), update.get("windows"))
    text = plan_markdown(tasks, WaitingQuestions(windows))
    if current is not None and not new_plan and current.content == text:
        return None
    message_id = PLAN_MESSAGE_ID + uuid.uuid4().hex if new_plan or current is None else current.id
    return AIMessage(text, id=message_id, name="replangraph")


class WaitingQuestions(Mapping[str, str]):
    """The question each subtask waits on (its window's unanswered ``ask_user`` call), by task id, read from a
    window only when asked for: the plan message looks up the few tasks it lists, not every window."""

    def __init__(self, windows: Mapping[str, Sequence[AnyMessage]]):
        self.windows = windows

    def __getitem__(self, task_id: str) -> str:
        calls = waiting_questions(self.windows[task_id])
        if not calls:
            raise KeyError(task_id)
        args = calls[0].get("args")
        return as_text(args.get("question") if isinstance(args, Mapping) else args)

    def __iter__(self) -> Iterator[str]:
        return (task_id for task_id in self.windows if waiting_questions(self.windows[task_id]))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def with_plan_message(node: Any, new_plan: bool = False) -> Any:
    """``node`` (one that reads the whole state) whose update also writes the plan message (`plan_message`),
    after the messages it writes itself: chat clients show the plan and its progress while the run works."""

    @functools.wraps(node)
    def run(state: Mapping[str, Any], *args: Any, **kwargs: Any) -> Any:
        update = node(state, *args, **kwargs)
        message = plan_message(state, update, new_plan)
        if message is None:
            return update
        return {**update, "messages": [*(update.get("messages") or []), message]}

    return run


# --------------------------------------------------------------------------- events

PLAN_CREATED = "plan_created"
STEP_STARTED = "step_started"
STEP_COMPLETED = "step_completed"
STEP_FAILED = "step_failed"
DYNAMIC_TASKS_ADDED = "dynamic_tasks_added"
REPLANNING = "replanning"
CONTEXT_COMPRESSED = "context_compressed"
PLAN_COMPLETED = "plan_completed"
ANSWER_CUT = "answer_cut"
ANSWER_COMPLETED = "answer_completed"

ENGINE_EVENTS = (
    PLAN_CREATED,
    STEP_STARTED,
    STEP_COMPLETED,
    STEP_FAILED,
    DYNAMIC_TASKS_ADDED,
    REPLANNING,
    CONTEXT_COMPRESSED,
    PLAN_COMPLETED,
    ANSWER_CUT,
    ANSWER_COMPLETED,
)


def feature_events() -> tuple[str, ...]:
    """The events of each registered feature that declares them (``EVENTS`` in its ``names.py``), in order."""
    folder = Path(nodes.__file__).parent
    found = [name for name in nodes.FEATURES if (folder / name / "names.py").is_file()]
    return tuple(
        e for name in found for e in getattr(importlib.import_module(f"{nodes.__name__}.{name}.names"), "EVENTS", ())
    )


EVENT_NAMES = (*ENGINE_EVENTS, *feature_events())
"""Every event a run may emit: the engine's and those of the registered features."""


EVENTS = "events"
"""The update key of the events to emit with it (not a state channel: `collect_writes` takes it out)."""


def event(name: str, **payload: Any) -> dict[str, Any]:
    """One event, as an update carries it: ``{"event": name, **payload}``."""
    return {"event": name, **payload}


_held: contextvars.ContextVar[list[dict] | None] = contextvars.ContextVar("replangraph_held_events", default=None)


@contextmanager
def held_events() -> Iterator[None]:
    """Hold the events emitted inside the block (threads started with its context included) and
    send them, in order, only when the block ends without an exception: a node whose update
    is lost to a crash never announces it."""
    held: list[dict] = []
    token = _held.set(held)
    try:
        yield
    finally:
        _held.reset(token)
    for event in held:
        emit(**event)


@contextmanager
def caught_events() -> Iterator[list[dict]]:
    """The events emitted inside the block, in a list that nobody sends: the caller passes them on (a tool call's
    task hands them to the tools node with its result, which emits them inside the subtask's held events)."""
    caught: list[dict] = []
    token = _held.set(caught)
    try:
        yield caught
    finally:
        _held.reset(token)


def emit(event: str, **payload: Any) -> None:
    """Write one event to the custom stream; does nothing outside a graph run."""
    held = _held.get()
    if held is not None:
        held.append({"event": event, **payload})
        return
    try:
        writer = get_stream_writer()
    except (RuntimeError, KeyError):  # no run, or a runnable's config outside a graph (a tool invoked alone)
        return
    writer({"event": event, **payload})
