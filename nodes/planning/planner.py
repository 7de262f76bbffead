"""planner node: turns the goal into a validated plan of subtasks, and the asking both planners share.

The `Plan` schema lists the known agent types; the answer is read leniently (tool-call arguments, JSON in the
text, fences, numeric ids), repaired where the intent is clear, validated, and retried with the error fed
back through the one structured-output loop. A plan that works but is worth another ask (`UsablePlan`: a
task's agent type lacks a tool it needs) is retried too, and used as it is, with notes, when the retries run
out. The replanner (`replanner.py`) asks the same way."""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field, create_model

from replangraph.config import AgentConfig, AgentProfile
from replangraph.context.fitting import GOAL_ID, fit_request, schema_tools
from replangraph.context.window_monitor import ContextMonitor
from replangraph.events import PLAN_CREATED, emit
from replangraph.llm.answers import RETRY_ERROR_CHARS, Provisional, bind_schema, read_arguments
from replangraph.llm.calls import run_steps
from replangraph.llm.overflow import refit_steps
from replangraph.llm.reading import UnreadableInput, plan_specs, resolve_goal
from replangraph.llm.structured import structured_steps
from replangraph.names import BUILT_IN_TOOLS, PLANNER
from replangraph.nodes.planning.prompts import PLAN_RETRY, PLANNER_PROMPT, PLANNER_TOOLS_RULE
from replangraph.nodes.planning.rule_plan import rule_based_plan
from replangraph.policy import DEFAULT_POLICY, TextPolicy
from replangraph.queue.plans import (
    coerce_agent_types,
    fit_required_tools,
    normalize_plan,
    offered_tool_names,
    plan_listing,
    tasks_from_plan,
    tool_names,
    validate_plan,
)
from replangraph.queue.tasks import DEFAULT_AGENT, RESET, QueueError, Task, next_plan_id, preview
from replangraph.state import ANSWER_FORMS, StateUpdate
from replangraph.steps_node import StepsNode
from replangraph.tracing import traced

"""Room kept for the error text of a plan retry."""
RETRY_PREVIOUS_CHARS = 2_000
"""Room kept for the previous answer of a plan retry (``replangraph.llm.structured.quoted`` caps it at this)."""


RETRY_SHARE = 0.25
"""Most of a request's budget kept for a plan retry's message: in a small window the retry quotes less
(`retry_quotes`), rather than the first request never being sent."""
MIN_QUOTED_CHARS = 200


def retry_room(monitor: ContextMonitor, retries: int, budget: int | None = None) -> int:
    """Tokens a plan retry adds to the request (its error and the previous answer, at their longest), at most
    `RETRY_SHARE` of ``budget``; 0 without retries."""
    if retries <= 0:
        return 0
    text = PLAN_RETRY.format(error="x" * RETRY_ERROR_CHARS, previous="x" * RETRY_PREVIOUS_CHARS)
    full = monitor.tokens([HumanMessage(text)])
    return full if budget is None else min(full, int(budget * RETRY_SHARE))


def retry_quotes(monitor: ContextMonitor, room: int) -> tuple[int, int]:
    """``(error chars, previous answer chars)`` a plan retry quotes so that its message fits ``room`` tokens."""
    full = retry_room(monitor, 1)
    scale = min(room / full, 1.0) if full > 0 else 1.0
    return (
        max(int(RETRY_ERROR_CHARS * scale), MIN_QUOTED_CHARS),
        max(int(RETRY_PREVIOUS_CHARS * scale), MIN_QUOTED_CHARS),
    )


def agent_types_text(descriptions: Mapping[str, str], tools: Mapping[str, Sequence[str]] | None = None) -> str:
    """``- name: description`` lines for the planner; with ``tools``, each line ends with the
    type's tool names: `` (tools: a, b)`` or `` (no tools)``."""
    lines = []
    for name, text in descriptions.items():
        line = f"- {name}: {text or 'general-purpose agent'}"
        if tools is not None:
            names = ", ".join(tools.get(name) or ())
            line += f" (tools: {names})" if names else " (no tools)"
        lines.append(line)
    return "\n".join(lines)


PLAN_TOOL = "Plan"

Check = Callable[[list[dict]], tuple[list[dict], list[str]]]
"""Repairs and validates specs; returns them with notes, or raises QueueError / UnreadableInput
(`UsablePlan` for a plan to ask again about, but to use if no better one comes)."""


class UsablePlan(QueueError):
    """A plan that can run but has problems worth another ask: ``problems`` go back to the model;
    when the retries run out, ``specs`` are used and the problems join ``notes``."""

    def __init__(self, problems: Sequence[str], specs: list[dict], notes: Sequence[str] = ()):
        super().__init__("; ".join(problems))
        self.problems, self.specs, self.notes = list(problems), specs, list(notes)


ANSWER_FORM_DESCRIPTION = (
    "What the goal asks the final answer to be: 'items' when it asks for the items found (a list, a table, "
    "every record); 'short' when it asks only for an aggregate (a total, an average, a count), a yes or no, a "
    "comparison or a single fact. Leave it out when unsure."
)

REQUIRED_TOOLS_DESCRIPTION = (
    "Names of the tools this subtask needs, from the agent types' tool lists; its agent type must have them. "
    "Empty when it needs none."
)


def plan_schema(
    agent_types: Sequence[str], tool_names: Sequence[str] = (), answer_form: bool = False
) -> type[BaseModel]:
    """The `Plan` tool schema. ``agent_type`` is an enum of the known types, left out when only
    ``default`` exists; ``required_tools`` (items an enum of ``tool_names``) is there when there
    are several agent types and tools to choose them by; with ``answer_form``, the optional field of that
    name (`ANSWER_FORMS`). Validation is loose on purpose: the answer is read by `read_plan`."""
    fields: dict[str, Any] = {
        "id": (str, Field(description="Short unique id, e.g. '1', '2'.")),
        "content": (str, Field(description="Self-contained instruction for the agent.")),
    }
    if len(agent_types) > 1:
        fields["agent_type"] = (
            str,
            Field(
                DEFAULT_AGENT, description="Which agent type runs it.", json_schema_extra={"enum": list(agent_types)}
            ),
        )
        if tool_names:
            items = {"type": "string", "enum": sorted(set(tool_names))}
            fields["required_tools"] = (
                list[str],
                Field(default_factory=list, description=REQUIRED_TOOLS_DESCRIPTION, json_schema_extra={"items": items}),
            )
    fields["depends_on"] = (
        list[str],
        Field(default_factory=list, description="Ids of the subtasks whose results this one needs."),
    )
    task = create_model("PlannedTask", __doc__="One subtask of a plan.", **fields)
    plan: dict[str, Any] = {"tasks": (list[task], Field(description="The subtasks, in the order they should run."))}
    if answer_form:
        extra = {"enum": list(ANSWER_FORMS)}
        plan["answer_form"] = (str | None, Field(None, description=ANSWER_FORM_DESCRIPTION, json_schema_extra=extra))
    return create_model(PLAN_TOOL, __doc__="A plan: the subtasks that together reach the goal.", **plan)


def structured_planner(
    model: BaseChatModel, agent_types: Sequence[str], tool_names: Sequence[str] = (), answer_form: bool = False
) -> Any:
    """``model`` answering with a `Plan` (`plan_schema`) through tool calling, raw reply included."""
    return bind_schema(model, plan_schema(agent_types, tool_names, answer_form))


def read_plan(answer: Any) -> list[dict]:
    """Plan specs from a structured answer: its tool call, else JSON in its text (reasoning skipped)."""
    try:
        return plan_specs(read_arguments(answer, PLAN_TOOL))
    except UnreadableInput as exc:
        if "the answer is empty" in str(exc):
            raise UnreadableInput("the answer holds no plan: call the Plan tool with a list of tasks") from None
        raise


def read_answer_form(answer: Any) -> str | None:
    """The plan's ``answer_form`` when it is one of `ANSWER_FORMS`, else None (not said, or unreadable)."""
    try:
        args = read_arguments(answer, PLAN_TOOL)
    except UnreadableInput:
        return None
    form = args.get("answer_form") if isinstance(args, Mapping) else None
    form = form.strip().lower() if isinstance(form, str) else None
    return form if form in ANSWER_FORMS else None


def plan_reader(check: Check) -> Callable[[Any], tuple[list[dict], list[str]]]:
    """The `structured_steps` reader of a plan: ``check``ed specs and notes. A QueueError is unreadable
    (asked again with the error); a `UsablePlan` is `Provisional`, kept with its problems as notes."""

    def read(answer: Any) -> tuple[list[dict], list[str]]:
        try:
            return check(read_plan(answer))
        except UsablePlan as exc:
            raise Provisional(str(exc), kept_plan(exc)) from None
        except QueueError as exc:
            raise UnreadableInput(str(exc)) from None

    return read


@dataclass
class PlanAnswer:
    """The outcome of asking for a plan."""

    specs: list[dict] | None
    """Validated specs, or None when no usable plan came."""
    calls: int
    error: str = ""
    """Why the last answer was not usable."""
    notes: list[str] = field(default_factory=list)
    """Repairs made to the accepted plan (unknown agent types, dependency spellings)."""
    overflow: bool = False
    """Whether the provider refused the request as longer than its context window."""
    unanswered: bool = False
    """Whether the model did not answer: a transient error (down, timing out, rate limited) outlived the retries."""
    answer_form: str | None = None
    """What the accepted plan says the final answer should be (`read_answer_form`); None when it does not say."""


def request_plan_steps(
    structured: Any,
    messages: list[BaseMessage],
    *,
    retries: int,
    config: AgentConfig,
    check: Check,
    observe: Callable[[Any, Any], None] | None = None,
    quotes: tuple[int, int] = (RETRY_ERROR_CHARS, RETRY_PREVIOUS_CHARS),
    monitor: Any = None,
    awaited: bool = False,
    trace: RunnableConfig | None = None,
) -> Generator[Any, Any, PlanAnswer]:
    """Ask until ``check`` accepts a plan, at most ``retries + 1`` answers (`structured_steps`, the one
    structured-output loop written as steps: `replangraph.llm.calls.run_steps` makes them, or
    `arun_steps` awaits them when ``awaited``).

    Transient model errors are retried with backoff inside each ask; a model that
    still fails ends the asking at once (more answers would not come either). A
    `UsablePlan` is asked about again like an invalid one, but the latest one is
    used when no accepted plan comes (its problems become notes). ``observe(request, reply)`` sees each reply,
    ``monitor`` (the model's) bounds the answers;
    ``quotes``: the characters of the error and of the previous answer a retry quotes; ``trace``: the calls'
    config (`replangraph.tracing.traced`).
    """
    asked = yield from structured_steps(
        structured,
        messages,
        plan_reader(check),
        retries=retries,
        config=config,
        retry_prompt=PLAN_RETRY,
        error_chars=quotes[0],
        quoted_chars=quotes[1],
        observe=observe,
        monitor=monitor,
        awaited=awaited,
        trace=trace,
    )
    if asked.value is None:
        return PlanAnswer(None, asked.calls, asked.error, overflow=asked.overflow, unanswered=asked.unanswered)
    specs, notes = asked.value
    return PlanAnswer(specs, asked.calls, "", notes, answer_form=read_answer_form(asked.answer))


def kept_plan(usable: UsablePlan) -> tuple[list[dict], list[str]]:
    """The specs and notes of a `UsablePlan` kept when no better plan came."""
    kept = [f"{problem} (kept as planned: no better plan came)" for problem in usable.problems]
    return usable.specs, [*usable.notes, *kept]


# --------------------------------------------------------------------------- required tools


def check_required_tools(
    specs: list[dict],
    notes: list[str],
    tools_by_agent: Mapping[str, Sequence[str]],
    validate: Callable[[list], Any],
    feature_types: Collection[str] = (),
) -> tuple[list[dict], list[str]]:
    """Specs with their required tools fitted (`fit_required_tools`), then ``validate``d: ``(specs, notes)``.

    A QueueError names the tool problems too (the retry fixes everything at once); with only tool
    problems, `UsablePlan` (asked about again, used as it is when no better plan comes)."""
    specs, tool_notes, problems = fit_required_tools(
        specs, tools_by_agent, built_in=BUILT_IN_TOOLS, feature_types=feature_types
    )
    try:
        validate(specs)
    except QueueError as exc:
        raise QueueError("; ".join([str(exc), *problems])) from None
    if problems:
        raise UsablePlan(problems, specs, notes + tool_notes)
    return specs, notes + tool_notes


def grouped_items(specs: list[dict], config: AgentConfig, policy: TextPolicy) -> tuple[list[dict], list[str]]:
    """``specs`` with each long run of one-item tasks grouped by the text policy (`TextPolicy.grouped_plan`): a
    group keeps its members' instructions, at most ``batch_size`` members a group and at least
    ``max_concurrency`` groups, so the plan still runs at once. A task costs a subtask (a fresh window, a turn,
    an answer, a check) however small it is; grouping saves that, and nothing else changes."""
    return policy.grouped_plan(specs, batch_size=config.batch_size, max_concurrency=config.max_concurrency)


def tools_prompt(prompt: str, profiles: Mapping[str, Any], tools_by_agent: Mapping[str, Sequence[str]]) -> str:
    """``prompt`` with its agent types listed; with tools offered (several agent types), each type's
    tools and the rule to name the ones a subtask needs."""
    descriptions = {name: p.description for name, p in profiles.items()}
    tools = tools_by_agent if offered_tool_names(tools_by_agent) else None
    text = prompt.format(agent_types=agent_types_text(descriptions, tools))
    return text + "\n" + PLANNER_TOOLS_RULE if tools else text


GOAL_PREVIEW_CHARS = 300


def rule_plan_or_whole_goal(goal: str, agent_types: list[str], max_tasks: int, verbs: bool = True) -> list[dict]:
    """The rule-based plan from the goal's verbs if it is valid (only with ``verbs``: a reading of English, the
    text policy's), else one task for the whole goal."""
    specs = rule_based_plan(goal, max_tasks=max_tasks) if verbs else None
    if specs:
        try:
            validate_plan(specs, agent_types=agent_types, max_tasks=max_tasks)
            return specs
        except QueueError:
            pass
    # The goal is in every subtask's prompt anyway; the task holds only a preview of it.
    return [{"id": "1", "content": preview(goal, GOAL_PREVIEW_CHARS), "agent_type": DEFAULT_AGENT, "depends_on": []}]


class Planned(NamedTuple):
    """What the planner made of the goal."""

    tasks: dict[str, Task]
    calls: int
    """Model calls spent."""
    fallback_reason: str
    """Why the fallback plan was used, or ''."""
    notes: list[str]
    """Repairs made to the plan."""
    answer_form: str | None
    """What the plan says the final answer should be (`ANSWER_FORMS`), None when it does not say."""


class Planner(StepsNode):
    """Plans the goal. After ``planner_retries`` unusable answers it falls back to a rule-based
    plan from the goal's verbs, and failing that to one subtask for the whole goal.

    A goal too long for the request (a retry's message included) is shown as an
    excerpt; the system prompt is never cut.

    With several agent types and tools among them, the prompt lists each type's tools and
    the `Plan` schema asks for each task's ``required_tools`` (see `fit_required_tools`): a
    task on ``default`` that only one type can do runs as that type; another mismatch is
    asked about again, and kept with a note when the retries run out.
    """

    def __init__(
        self,
        model: BaseChatModel,
        profiles: Mapping[str, AgentProfile],
        config: AgentConfig,
        monitor: ContextMonitor | None = None,
        feature_types: Collection[str] = (),
        on_new_plan: Sequence[Callable[[AgentConfig], Mapping[str, Any]]] = (),
        policy: TextPolicy = DEFAULT_POLICY,
    ):
        self.monitor = (monitor or ContextMonitor(config)).for_model(model)
        self.policy = policy
        self.feature_types = tuple(feature_types)
        """Which of ``profiles`` features added (a team)."""
        self.on_new_plan = list(on_new_plan)
        """What features write with a new plan (`replangraph.features.Feature.on_new_plan`)."""
        self.tools_by_agent = tool_names(profiles)
        self.tool_names = offered_tool_names(self.tools_by_agent)
        self.structured = structured_planner(model, list(profiles), self.tool_names, answer_form=True)
        self.tools = schema_tools(plan_schema(list(profiles), self.tool_names, answer_form=True))
        self.profiles = profiles
        self.base_config = config

    def check(self, specs: list[dict]) -> tuple[list[dict], list[str]]:
        """Repair what is clear (dependency spellings, unknown agent types and tools, long runs of one-item tasks
        grouped: `grouped_items`), then validate; `UsablePlan` when only required tools do not fit
        their agent types."""
        specs, notes = normalize_plan(specs)
        specs, agent_notes = coerce_agent_types(specs, list(self.profiles), DEFAULT_AGENT)
        specs, batch_notes = grouped_items(specs, self.config, self.policy)
        agent_notes += batch_notes
        return check_required_tools(
            specs,
            notes + agent_notes,
            self.tools_by_agent,
            lambda fitted: validate_plan(fitted, agent_types=self.profiles, max_tasks=self.config.max_tasks),
            self.feature_types,
        )

    def plan(self, goal: str, plan_id: str = "1") -> tuple[dict[str, Task], int, str, list[str]]:
        """``(tasks, model calls, why the fallback was used or "", notes on repairs)``."""
        return tuple(run_steps(self.plan_steps(goal, plan_id)))[:4]

    def plan_steps(self, goal: str, plan_id: str = "1", awaited: bool = False) -> Generator[Any, Any, Planned]:
        """The `Planned` outcome as steps (`replangraph.llm.calls.run_steps`); the model awaited when ``awaited``."""
        system = SystemMessage(tools_prompt(PLANNER_PROMPT, self.profiles, self.tools_by_agent))
        # A provider that refuses the request as too long: once more, smaller.
        answers = yield from refit_steps(
            lambda share: self.ask_steps(goal, system, share, awaited),
            learn=self.monitor.learn_overflow,
            label="planner call",
        )
        answer, calls = answers[-1], sum(a.calls for a in answers)
        specs = answer.specs or rule_plan_or_whole_goal(
            goal, list(self.profiles), self.config.max_tasks, verbs=self.policy.enabled
        )
        return Planned(
            tasks_from_plan(specs, plan_id=plan_id),
            calls,
            answer.error if answer.specs is None else "",
            answer.notes,
            answer.answer_form if answer.specs is not None else None,
        )

    def ask_steps(
        self, goal: str, system: SystemMessage, share: float, awaited: bool = False
    ) -> Generator[Any, Any, PlanAnswer]:
        """The model's plan, from a request fitted to ``share`` of the budget (steps)."""
        # A retry adds its message to this request.
        whole = int(self.monitor.budget * share)
        room = retry_room(self.monitor, self.config.planner_retries, whole)
        budget = whole - room
        fitted = fit_request(
            {GOAL_ID: goal},
            lambda shown: [system, HumanMessage(shown[GOAL_ID])],
            {GOAL_ID: GOAL_ID},
            self.monitor,
            tools=self.tools,
            budget=budget,
        )
        if not fitted.fits:
            needed = self.monitor.tokens(fitted.request, self.tools)
            return PlanAnswer(
                None,
                0,
                f"the planner's request does not fit the context window ({needed} tokens, "
                f"{budget} allowed with room for a retry)",
            )
        return (
            yield from request_plan_steps(
                self.structured,
                fitted.request,
                retries=self.config.planner_retries,
                config=self.config,
                check=self.check,
                observe=lambda sent, reply: self.monitor.observe(sent, self.tools, reply),
                quotes=retry_quotes(self.monitor, room),
                monitor=self.monitor,
                awaited=awaited,
                trace=traced(PLANNER),
            )
        )

    def steps(self, state: Mapping, awaited: bool = False) -> Generator[Any, Any, StateUpdate]:
        """The node's update, its model calls made (or awaited) as steps."""
        goal, from_goal_key = resolve_goal(state)
        tasks, calls, fallback_reason, notes, answer_form = yield from self.plan_steps(
            goal, next_plan_id(state.get("tasks") or {}), awaited
        )
        emit(
            PLAN_CREATED,
            goal=goal,
            tasks=plan_listing(tasks),
            fallback_reason=fallback_reason or None,
            notes=notes,
        )
        update: dict[str, Any] = {
            "goal": goal,
            "tasks": {RESET: True, **tasks},
            "windows": {RESET: True},
            "replans": [],
            "planner_calls": calls,
            "node_calls": None,  # a new plan's count starts from nothing
            "final_answer": "",
            "answer_form": answer_form or "",
        }
        for fresh in self.on_new_plan:
            update.update(fresh(self.config))
        if from_goal_key:
            update["messages"] = [HumanMessage(goal)]
        return update
