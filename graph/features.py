"""How a feature plugs into the graph: the one mechanism teams, the completion check, human in the loop, the
single-agent fallback and the budget use.

A feature is a folder under ``nodes/``, registered by one line in `replangraph.nodes.FEATURES`. Its
``feature.py`` builds a `Feature` from what the graph is built with (`Build`): the state keys and task fields
it adds, the nodes, the routing rules it owns, the agent types it adds to planning, the models it brings, the
wrappers it adds to the executor's model and tool calls (`replangraph.nodes.execution.middleware`), and hooks
where the engine asks features: at the start of a run (before planning), after a replanning round, on each model
reply, at a new plan, at the stop, and before the final answer on every path to it (a section of its own in the
answer). Features run in their registered order, moved only where one says it runs ``after`` another
(`ordered_features`). Rules and hooks read time and randomness from the run (`replangraph.clock`), never from
the process: on Temporal they run inside the workflow and must decide the same when it is replayed.
Its ``settings.py``, when it has one, adds fields to `replangraph.AgentConfig` (`replangraph.config`). The
builder (`replangraph.builder`) merges them before compiling, as LangChain's ``create_agent`` merges its
middleware; nothing else in the engine imports a feature folder.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args, get_origin

from langgraph.types import Command
from typing_extensions import NotRequired, Required, TypedDict, get_type_hints

import replangraph.nodes as nodes
from replangraph.config import AgentConfig, AgentProfile
from replangraph.llm.replies import ReplyHook, metered
from replangraph.policy import DEFAULT_POLICY, TextPolicy
from replangraph.routing import Rule, TaskRule

AfterReplan = Callable[..., tuple[Any, list[str]]]
"""``(state, tasks, updates, records, unanswered, settings) -> (task to queue or None, notes for the round's
record)``: called by the replanner after each round with what the round writes, whether its model did not
answer, and the run's settings (see `Feature.after_replan`)."""


Router = Callable[[Mapping[str, Any]], Any]
"""A conditional edge's function: the state -> where the run goes."""


@dataclass(frozen=True)
class FeatureNode:
    """A node a feature adds. ``error_handler``: LangGraph's ``add_node(error_handler=...)``. ``joins_tools``:
    the node is followed by the tools node, where parallel branches join (like a model turn); otherwise it
    is followed by a routing decision: ``router`` (given the graph's router, it returns this node's) or
    the graph's router itself, to where the run may go after planning (``after_plan``) or anywhere the
    router sends it, plus ``leads_to``."""

    node: Callable[..., Any]
    error_handler: Callable[..., Any] | None = None
    joins_tools: bool = True
    routed: bool = True
    """The router may send the run to it."""
    after_plan: bool = False
    """The run may go there right after planning (a team's start, the plan review)."""
    router: Callable[[Router], Router] | None = None
    """Its own routing after it runs, built on the graph's router (``joins_tools`` False only)."""
    goes_like_planning: bool = False
    """Without ``joins_tools``: it leads where planning may (a plan review), not wherever the router may."""
    leads_to: tuple[str, ...] = ()
    """Where else it may lead (``END``, the tools node, another node of its feature)."""
    pauses: bool = False
    """It pauses the run (``interrupt()``): a host keeps it where the run's checkpoints are (Temporal: in the
    workflow, `replangraph.hosting.pauses_run`)."""


@dataclass(frozen=True)
class Feature:
    """What one feature adds to a graph. Rules are placed by their ``stage`` (see `replangraph.routing.STAGES`);
    task rules run ahead of the executor's in the dispatch step."""

    name: str
    nodes: Mapping[str, FeatureNode] = field(default_factory=dict)
    after: tuple[str, ...] = ()
    """Features whose rules and hooks run before this one's, when they are registered (`ordered_features`)."""
    rules: Sequence[Rule] = ()
    task_rules: Sequence[TaskRule] = ()
    planning_types: Mapping[str, AgentProfile] = field(default_factory=dict)
    """Agent types a plan may name besides the profiles (a team is one)."""
    models: Mapping[str, Any] = field(default_factory=dict)
    """The models it brings, by the name a warning about stacked retries uses."""
    after_replan: AfterReplan | None = None
    """What it adds after each replanning round (the single-agent fallback queues its task)."""
    agent_tools: Sequence[Any] = ()
    """Tools its wrappers offer every executing agent (ask_user): counted in each request's size, and no
    agent type may have a tool of the same name."""
    model_wrappers: Sequence[Callable[..., Any]] = ()
    """``wrap_model_call`` hooks for the executor's model calls (human in the loop offers ask_user)."""
    entry: Callable[[Any], Router] | None = None
    """Where a run may start instead of the planner: given the graph's settings, a function of the input
    state that names one of ``entry_nodes`` (or sends to them), or None for the planner (human in the loop: a
    slash command, or a message answering what the run waits for)."""
    entry_nodes: tuple[str, ...] = ()
    tool_wrappers: Sequence[Callable[..., Any]] = ()
    """``wrap_tool_call`` hooks for the executor's tool calls (human in the loop screens questions). A wrapper
    that answers calls of a tool of its own lists it in an ``answered_tools()`` method, so the tools node
    knows the name (an unknown tool's error lists it); such a wrapper may return None for a call the
    feature answers in a node of its own (the ask node)."""
    opening_note: Callable[[Mapping[str, Any], Any], str] | None = None
    """``(state, subtask) -> text``: what a starting subtask's opening message ends with, or "" (human in the
    loop: the user's answers so far in this run). Never cut to fit, so the feature keeps it short."""
    state: type | None = None
    """A TypedDict of the state keys it adds (merged into the graph's state schema; each key NotRequired)."""
    output: type | None = None
    """A TypedDict of those keys a run returns too (merged into the output schema)."""
    task_fields: type | None = None
    """A TypedDict of the fields it writes on tasks (merged into the task schema the tasks channel shows)."""
    on_reply: ReplyHook | None = None
    """``(request messages, reply) -> state writes or None``, for every model reply in any node
    (`replangraph.llm.replies`): the writes join that node's update (a budget counts tokens)."""
    on_new_plan: Callable[[AgentConfig], Mapping[str, Any]] | None = None
    """``settings -> state writes`` a new plan starts with (human in the loop: its plan review, not cancelled)."""
    stop: Callable[[Mapping[str, Any], AgentConfig], Stop | None] | None = None
    """``(state, settings) -> Stop or None``: asked by the finalizer and the tools node; a `Stop` ends the run
    with its reason (a routing rule of the feature sends the run to the finalizer)."""
    summary_note: Callable[[Mapping[str, Any]], str] | None = None
    """``subtask -> text``: what the compressor keeps with a summary's instructions, or "" (human in the loop:
    the user's answers to the subtask's questions)."""
    takes_answers: Callable[[AgentConfig], bool] | None = None
    """``settings -> bool``: its node, not the tools node, ends a subtask whose window ends with an answer
    (the completion check, while ``verify_results`` is on)."""
    on_run_start: Callable[[RunStart], Mapping[str, Any] | None] | None = None
    """`RunStart` -> state writes: each time the graph is given input, before it is planned or routed (a new
    goal, a slash command, a message answering a question; not a resume of a pause). The deadline starts here."""
    before_answer: Callable[[Answering], AnswerAddition | None] | None = None
    """`Answering` -> `AnswerAddition` or None: in the finalizer, once the final answer (or the report) is
    written and before it is returned, on every path to it (every subtask done, a stop, ``max_steps``, the
    recursion margin, a crash a handler turned into a failed subtask). The state it sees counts the answer's own
    model calls; its section follows the answer (the cost report)."""


@dataclass(frozen=True)
class Stop:
    """Why a feature stops the run: the final report's reason. ``skip_running``: subtasks still running are
    skipped and their requested tool calls never run (a cancelled run); otherwise their calls run and they
    end as stopped, their partial results kept. ``events``: what the finalizer emits with the report."""

    reason: str
    skip_running: bool = False
    events: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class RunStart:
    """What a run-start hook is given: the state as the input left it, the run's settings, whether the input
    starts a new goal (it goes to the planner) rather than answering or commanding a run under way, and the
    run's time (`replangraph.clock.run_time`)."""

    state: Mapping[str, Any]
    settings: AgentConfig
    new_goal: bool
    now: float


@dataclass(frozen=True)
class Answering:
    """What a before-answer hook is given: the state (with the answer's own model calls metered in), the run's
    settings, why the run ends unfinished ("" when every subtask is done and the final answer is the model's),
    and the run's time."""

    state: Mapping[str, Any]
    settings: AgentConfig
    stop_reason: str
    now: float


@dataclass(frozen=True)
class AnswerAddition:
    """What a before-answer hook adds: state writes (joined to the finalizer's update), a ``section`` that
    follows the final answer, the fallback report included (Markdown, headed by the feature), and events."""

    writes: Mapping[str, Any] = field(default_factory=dict)
    section: str = ""
    events: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class Build:
    """What a feature is built from: the graph's models, agent types and settings, and what the features
    registered before it add."""

    model: Any
    profiles: Mapping[str, AgentProfile]
    """The agent types (`replangraph.config.resolve_profiles`)."""
    planning: Mapping[str, AgentProfile]
    """The agent types a plan may name: ``profiles`` and those earlier features add (a team)."""
    config: AgentConfig
    monitor: Any
    """The model's `replangraph.context.window_monitor.ContextMonitor`."""
    planner_model: Any = None
    verifier_model: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)
    """`replangraph.build_graph`'s feature arguments by name (``teams``, ``commands``)."""
    check_model: Callable[[Any, str], None] = lambda model, role: None
    """Raises TypeError for a model argument that is no chat model (``role`` names it)."""
    policy: TextPolicy = DEFAULT_POLICY
    """The graph's text heuristics (`replangraph.policy`)."""


def nodes_where(features: Sequence[Feature], test: Callable[[FeatureNode], bool]) -> list[str]:
    """The names of the features' nodes that pass ``test``, in order."""
    return [name for feature in features for name, spec in feature.nodes.items() if test(spec)]


def planning_types(features: Sequence[Feature]) -> dict[str, AgentProfile]:
    """The agent types ``features`` add to planning, in order."""
    return {name: profile for feature in features for name, profile in feature.planning_types.items()}


def merged_schema(
    name: str, base: type, extras: Sequence[type | None], task_fields: Sequence[type | None] = ()
) -> type:
    """``base`` (a TypedDict) with the keys of ``extras``, and its ``tasks`` key's task schema with the fields of
    ``task_fields``; ``base`` itself when there is nothing to add. A key already in ``base`` keeps its type."""
    extras = [e for e in extras if e is not None]
    task_fields = [t for t in task_fields if t is not None]
    if not extras and not task_fields:
        return base
    hints = get_type_hints(base, include_extras=True)
    for extra in extras:
        for key, hint in get_type_hints(extra, include_extras=True).items():
            hints.setdefault(key, hint)
    if task_fields and "tasks" in hints:
        hints["tasks"] = with_task_fields(hints["tasks"], task_fields)
    return TypedDict(name, hints)  # as LangChain's create_agent merges its middleware's state schemas


def with_task_fields(hint: Any, task_fields: Sequence[type]) -> Any:
    """The tasks channel's type ``(NotRequired[])Annotated[dict[str, Task], channel]`` with its task schema's
    fields extended by ``task_fields`` (the same channel object)."""
    required = get_origin(hint) is not NotRequired
    annotated = hint if required else get_args(hint)[0]
    mapping, channel = get_args(annotated)[0], annotated.__metadata__
    key, task = get_args(mapping)
    fields = get_type_hints(task, include_extras=True)
    for extra in task_fields:
        for field_name, field_hint in get_type_hints(extra, include_extras=True).items():
            fields.setdefault(field_name, field_hint)
    merged = Annotated[(dict[key, TypedDict(task.__name__, fields)], *channel)]
    return merged if required else NotRequired[merged]


class Metering:
    """The features' reply hooks around a node (`replangraph.llm.replies`): the writes they return for the
    replies of one node call join its update, combined by the state's reducers."""

    def __init__(self, hooks: Sequence[ReplyHook], schema: type):
        self.hooks = list(hooks)
        hints = get_type_hints(schema, include_extras=True)
        self.reducers = {key: reducer for key, hint in hints.items() if (reducer := reducer_of(hint)) is not None}

    def combine(self, current: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
        """``current`` with ``new`` written over it, each key both write reduced by its channel's reducer."""
        merged = dict(current)
        for key, value in new.items():
            reducer = self.reducers.get(key)
            merged[key] = reducer(merged[key], value) if key in merged and reducer else value
        return merged

    def with_writes(self, update: Any, writes: Mapping[str, Any]) -> Any:
        if not writes:
            return update
        if isinstance(update, Command):
            return Command(update=self.with_writes(update.update or {}, writes), goto=update.goto)
        return self.combine(update or {}, writes)

    def wrap(self, node: Callable[..., Any]) -> Callable[..., Any]:
        """``node`` (sync) with its replies metered; ``node`` itself without hooks."""
        if not self.hooks:
            return node

        @functools.wraps(node)  # the node's attributes stay readable on it, as with_plan_message keeps them
        def run(state: Any) -> Any:
            with metered(self.hooks, self.combine) as meter:
                update = node(state)
            return self.with_writes(update, meter.writes)

        return run

    def awrap(self, node: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """`wrap` for an async node."""
        if not self.hooks:
            return node

        @functools.wraps(node)
        async def run(state: Any) -> Any:
            with metered(self.hooks, self.combine) as meter:
                update = await node(state)
            return self.with_writes(update, meter.writes)

        return run


def reducer_of(hint: Any) -> Callable[[Any, Any], Any] | None:
    """The reducer of a state key's type (``Annotated[T, reducer]``, possibly NotRequired), or None."""
    if get_origin(hint) in (NotRequired, Required):
        hint = get_args(hint)[0]
    metadata = getattr(hint, "__metadata__", ())
    return next((m for m in reversed(metadata) if callable(m) and not isinstance(m, type)), None)


def ordered_features(features: Sequence[Feature]) -> list[Feature]:
    """``features`` in their registered order, except that each comes after the features it names in ``after``
    (those not registered are ignored). ValueError for a cycle, naming it."""
    names = {feature.name for feature in features}
    placed: list[Feature] = []
    waiting = list(features)
    while waiting:
        done = {feature.name for feature in placed}
        ready = next((f for f in waiting if all(n in done or n not in names for n in f.after)), None)
        if ready is None:
            cycle = ", ".join(f"{f.name} after {', '.join(f.after)}" for f in waiting)
            raise ValueError(f"features cannot be ordered: {cycle}")
        placed.append(ready)
        waiting.remove(ready)
    return placed


def feature_factories() -> list[Callable[[Build], Feature | None]]:
    """Each registered feature's ``feature(build)`` (`replangraph.nodes.FEATURES`), in order."""
    return [importlib.import_module(f"{nodes.__name__}.{name}.feature").feature for name in nodes.FEATURES]
