"""The router: after the planner, the tools node and the replanner, decides what runs next.

It is an ordered list of small named rules (`default_rules`), each owned by a feature; the first rule
that decides wins. The last one, the dispatch step, gives each running subtask its next step and starts
ready ones through a list of task rules. Every rule is a pure function of the state, so the router gives
the same answer however many parallel branches joined before it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import END
from langgraph.types import Send

from replangraph.clock import run_time
from replangraph.config import FINALIZE_MARGIN, AgentConfig
from replangraph.context.results import full_result
from replangraph.context.window_monitor import ContextMonitor
from replangraph.context.workspace import WORKSPACE, open_workspace, step_key
from replangraph.llm.reading import calls_to_run
from replangraph.names import (
    COMPRESSOR,
    EXECUTOR,
    FINALIZE,
    PLANNER,
    REPLANNER,
    TOOLS,
)
from replangraph.queue.index import index_of
from replangraph.queue.tasks import (
    Task,
    active_tasks,
    dependency_results,
    plan_markdown,
    spent_model_calls,
    startable_tasks,
)
from replangraph.resume import resume_asked, unfinished
from replangraph.run_config import run_settings, settings_resolved_once
from replangraph.state import DependencyResult, SubtaskInput

OpeningNote = Callable[[Mapping[str, Any], Task], str]
"""A feature's note for a starting subtask's opening message: given the state and the subtask, its text, or ""
(`replangraph.features.Feature.opening_note`)."""


def subtask_input(state: Mapping[str, Any], task: Task, notes: Sequence[OpeningNote] = ()) -> SubtaskInput:
    """The Send payload for one subtask: the task, its window, and on its first turn its inputs.

    Dependency results are read whole from the workspace until the subtask's first
    model turn (later turns have them in the window), and so are the features' ``notes`` for it. Without a
    store, the payload names the keys the subtask already holds in the workspace (not their text), so new
    ones never clash.
    """
    tasks = state.get("tasks") or {}
    window = list((state.get("windows") or {}).get(task["id"], []))
    opening_only = not any(isinstance(m, AIMessage) for m in window)
    dependencies = [dependency_input(d) for d in subtask_inputs(tasks, task)] if opening_only else []
    payload = SubtaskInput(
        task_id=task["id"], goal=state.get("goal", ""), task=task, dependencies=dependencies, window=window
    )
    written = [text for note in notes if (text := note(state, task))] if opening_only else []
    if written:
        payload["notes"] = written
    held = (state.get(WORKSPACE) or {}).get(step_key(task))
    if held:
        payload[WORKSPACE] = {step_key(task): dict.fromkeys(held, {})}
    return payload


def subtask_inputs(tasks: Mapping[str, Task], task: Task) -> list[Task]:
    """The subtasks whose results ``task`` builds on: its completed dependencies and the work they handed off,
    with the subtask that handed ``task`` off (a split, a check's follow-up) replaced by that subtask's own
    inputs, and the stopped subtasks whose partial results it takes over (``builds_on``). A follow-up continues
    its parent's work from its own instructions; the parent's result reaches the steps that depend on the
    parent, and sending it to every follow-up would cost its tokens each time."""
    found: dict[str, Task] = {}
    for dependency in dependency_results(tasks, task):
        handed_off = dependency["id"] == task.get("parent_id")
        for source in subtask_inputs(tasks, dependency) if handed_off else [dependency]:
            found.setdefault(source["id"], source)
    for stopped in task.get("builds_on") or ():  # what stopped subtasks found: it goes on from there
        if stopped in tasks and tasks[stopped].get("result"):
            found.setdefault(stopped, tasks[stopped])
    return list(found.values())


def dependency_input(task: Task) -> DependencyResult:
    """What a subtask is told about one of its inputs: id, instructions and the whole result (a partial result
    of a subtask that stopped says so)."""
    stopped = task["status"] != "completed"
    content = f"{task['content']} (partial result: this subtask stopped; go on from what it found)" * stopped
    return DependencyResult(id=task["id"], content=content or task["content"], result=full_result(task) or "")


Decision = list[Send | str] | str
"""Where the run goes next: a node name, or the ``Send`` packets (and node names) of the next superstep."""
HOLD = "__hold__"
"""A task rule's answer for a running subtask it claims that takes no step in this superstep."""


@dataclass
class Route:
    """What the rules read: the state, the run's settings, what is derived from them once per decision, and the
    run's time (`replangraph.clock.run_time`: a rule reads no other clock, as it may run where code is replayed)."""

    state: Mapping[str, Any]
    settings: AgentConfig
    tasks: Mapping[str, Task]
    windows: Mapping[str, list]
    active: list[Task]
    now: float = 0.0


STAGES = ("stop", "user", "recover", "replan", "budget", "pause", "dispatch")
"""Where rules stand, in order: the run is stopped (cancelled); the user sent something (a command, a plan
decision); a crash left tool calls unanswered; a subtask asks for a replan; the step budget is spent;
subtasks pause for the user; each subtask takes its next step. In a stage, a feature's rules come before
the engine's (the engine's are the stage's default)."""


@dataclass(frozen=True)
class Rule:
    """A routing rule owned by one feature: where the run goes, or None to leave it to the next rule."""

    name: str
    owner: str
    decide: Callable[[Route], Decision | None]
    stage: str = "dispatch"


@dataclass(frozen=True)
class TaskRule:
    """A rule of the dispatch step for one subtask: for a running one, the step it takes next (``running``);
    for a ready one, how it starts (``ready``). None leaves the subtask to the next rule. ``holds_slot``:
    whether a running subtask it claims counts against ``max_concurrency`` (a team's task does not: its
    members do)."""

    name: str
    owner: str
    running: Callable[[Route, Task], Send | str | None] | None = None
    ready: Callable[[Route, Task, Dispatch], Send | None] | None = None
    holds_slot: bool = True


def window_rule(test: Callable[[list], bool], node: str) -> Callable[[Route, Task], str | None]:
    """A ``running`` rule in one line: a subtask whose window passes ``test`` goes to ``node``."""

    def running(route: Route, task: Task) -> str | None:
        return node if test(route.windows.get(task["id"], [])) else None

    return running


@dataclass
class Dispatch:
    """What the dispatch step has decided so far in one superstep."""

    sends: list[Send | str] = field(default_factory=list)
    running: int = 0
    queue_size: int = 0
    """The queue's size once what starts in this superstep has been queued (a team's members count)."""


def unanswered_tool_calls(route: Route) -> Decision | None:
    """A run resumed (``/resume``) after a crash between a model turn and its tool calls (or the end a limit
    asked for): run them first."""
    waiting = (calls_to_run(route.windows.get(t["id"], [])) or t.get("limit_reached") for t in route.active)
    return TOOLS if any(waiting) else None


def replan_pending(route: Route) -> Decision | None:
    """A subtask failed or asked for a new plan."""
    return REPLANNER if index_of(route.tasks).replan else None


def budget_spent(route: Route) -> Decision | None:
    """``max_steps`` model calls are spent: the run ends with what it has."""
    return FINALIZE if spent_model_calls(route.state) >= route.settings.max_steps else None


def next_turn(
    monitor: ContextMonitor, tool_schemas: Mapping[str, Sequence[Any]], notes: Sequence[OpeningNote] = ()
) -> Callable[[Route, Task], Send]:
    """A running subtask's next model turn, or the compressor first when its window is over the threshold
    (or the provider refused it as too long)."""

    def step(route: Route, task: Task) -> Send:
        window = route.windows.get(task["id"], [])
        overflow = task.get("context_overflow") or {}
        refused = bool(overflow) and not overflow.get("compressed")
        over = refused or monitor.over_threshold(window, tool_schemas.get(task["agent_type"], ()))
        payload = subtask_input(route.state, task, notes)
        if over:
            payload["plan"] = plan_markdown(route.tasks)  # bounded: its cost does not grow with the queue
        return Send(COMPRESSOR if over else EXECUTOR, payload)

    return step


def first_turn(notes: Sequence[OpeningNote] = ()) -> Callable[[Route, Task, Dispatch], Send]:
    """A ready subtask starts with its first model turn, told the features' ``notes``."""

    def start(route: Route, task: Task, dispatch: Dispatch) -> Send:
        return Send(EXECUTOR, subtask_input(route.state, task, notes))

    return start


def dispatch_rule(task_rules: Sequence[TaskRule]) -> Rule:
    """The dispatch step: each running subtask takes its next step and ready subtasks start, up to
    ``max_concurrency``, and no more model turns than ``max_steps`` has calls left for (parallel subtasks never
    overshoot it); each subtask goes to the first task rule that claims it. Nothing to do: finalize."""

    def dispatch(route: Route) -> Decision:
        done = Dispatch(queue_size=len(route.tasks))
        calls_left = route.settings.max_steps - spent_model_calls(route.state)
        for task in route.active:
            for rule in task_rules:
                decision = rule.running(route, task) if rule.running else None
                if decision is None:
                    continue
                done.running += rule.holds_slot
                if decision == HOLD:
                    break
                if isinstance(decision, Send) and decision.node == EXECUTOR:  # a model turn: one call of max_steps
                    if calls_left <= 0:
                        break  # it waits; with no call left the run ends, its reads in the report
                    calls_left -= 1
                if isinstance(decision, Send) or decision not in done.sends:
                    done.sends.append(decision)
                break
        room = max(min(route.settings.max_concurrency - done.running, calls_left), 0)
        for task in startable_tasks(route.tasks, room):
            started = next((s for r in task_rules if r.ready and (s := r.ready(route, task, done)) is not None), None)
            if started is not None:
                done.sends.append(started)
        return done.sends or FINALIZE

    return Rule("dispatch", "execution", dispatch)


def make_router(
    config: AgentConfig,
    rules: Sequence[Rule],
) -> Callable[[Mapping[str, Any]], Decision]:
    """The routing function: the first of ``rules`` (in order) that decides, for the run's settings.

    It is a pure function of the state, so it gives the same answer however many parallel branches
    joined before it. Near LangGraph's ``recursion_limit`` the run finalizes, with a report, instead of
    crashing.
    """

    def route(state: Mapping[str, Any]) -> Decision:
        with open_workspace(state.get(WORKSPACE)), settings_resolved_once():  # dependency results: read whole
            decision = decide(state)
        left = state.get("remaining_steps")
        if left is not None and left <= FINALIZE_MARGIN:
            return FINALIZE
        return decision

    def decide(state: Mapping[str, Any]) -> Decision:
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        view = Route(state, run_settings(config), tasks, state.get("windows") or {}, active_tasks(tasks), run_time())
        for rule in rules:
            decision = rule.decide(view)
            if decision is not None:
                return decision
        return FINALIZE

    return route


def default_rules(
    monitor: ContextMonitor,
    tool_schemas: Mapping[str, Sequence[Any]],
    *,
    rules: Sequence[Rule] = (),
    task_rules: Sequence[TaskRule] = (),
    opening_notes: Sequence[OpeningNote] = (),
) -> list[Rule]:
    """The router's rules in order: the engine's and the features' (``rules``), placed by stage (a feature's
    ahead of the engine's in the same stage), ending with the dispatch step, where the features'
    ``task_rules`` claim subtasks ahead of the executor's. ``opening_notes``: the features' notes for the
    executor's payloads (`subtask_input`)."""
    engine = [
        Rule("unanswered_tool_calls", "execution", unanswered_tool_calls, "recover"),
        Rule("replan_requested", "planning", replan_pending, "replan"),
        Rule("budget_spent", "engine", budget_spent, "budget"),
        dispatch_rule(
            [
                *task_rules,
                TaskRule(
                    "next_turn",
                    "execution",
                    running=next_turn(monitor, tool_schemas, opening_notes),
                    ready=first_turn(opening_notes),
                ),
            ]
        ),
    ]
    unknown = [rule.name for rule in rules if rule.stage not in STAGES]
    if unknown:
        raise ValueError(f"rules {', '.join(unknown)} name no stage of {', '.join(STAGES)}")
    return sorted([*rules, *engine], key=lambda rule: STAGES.index(rule.stage))


def start_router(
    entries: Sequence[Callable[[Mapping[str, Any]], Decision | None]],
    route: Callable[[Mapping[str, Any]], Decision] | None = None,
) -> Callable[[Mapping[str, Any]], Decision]:
    """Where a run starts: the first feature entry that decides (a slash command: the commands node; a message
    to a thread that waits for the user: the node that waits); else ``/resume`` (`replangraph.resume`) goes where
    ``route`` sends an unfinished run, and ends one that has nothing left; else the planner."""

    def start(state: Mapping[str, Any]) -> Decision:
        with settings_resolved_once():
            decided = next((node for entry in entries if (node := entry(state)) is not None), None)
            if decided is not None:
                return decided
            if route is not None and resume_asked(state):
                return route(state) if unfinished(state) else END
            return PLANNER

    return start
