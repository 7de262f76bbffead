"""planner node: turns the goal into a validated DAG of subtasks."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from replangraph.config import AgentConfig, AgentProfile, Configured
from replangraph.context.fitting import GOAL_ID, ContextMonitor, fit_request, schema_tools
from replangraph.context.workspace import collect_writes
from replangraph.events import PLAN_CREATED, emit
from replangraph.llm.calls import refit_on_overflow
from replangraph.llm.messages import resolve_goal
from replangraph.nodes.planning.asking import (
    PlanAnswer,
    check_required_tools,
    plan_schema,
    request_plan,
    retry_room,
    structured_planner,
    tools_prompt,
)
from replangraph.nodes.planning.prompts import PLANNER_PROMPT
from replangraph.nodes.planning.rule_plan import rule_based_plan
from replangraph.queue.plans import (
    coerce_agent_types,
    normalize_plan,
    offered_tool_names,
    plan_listing,
    tasks_from_plan,
    tool_names,
    validate_plan,
)
from replangraph.queue.tasks import DEFAULT_AGENT, RESET, QueueError, Task, next_plan_id, preview
from replangraph.state import StateUpdate

GOAL_PREVIEW_CHARS = 300


def rule_plan_or_whole_goal(goal: str, agent_types: list[str], max_tasks: int) -> list[dict]:
    """The rule-based plan from the goal's verbs if it is valid, else one task for the whole goal."""
    specs = rule_based_plan(goal, max_tasks=max_tasks)
    if specs:
        try:
            validate_plan(specs, agent_types=agent_types, max_tasks=max_tasks)
            return specs
        except QueueError:
            pass
    # The goal is in every subtask's prompt anyway; the task holds only a preview of it.
    return [{"id": "1", "content": preview(goal, GOAL_PREVIEW_CHARS), "agent_type": DEFAULT_AGENT, "depends_on": []}]


class Planner(Configured):
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
        teams: Collection[str] = (),
    ):
        self.monitor = (monitor or ContextMonitor(config)).for_model(model)
        self.teams = tuple(teams)
        """Which of ``profiles`` are teams."""
        self.tools_by_agent = tool_names(profiles)
        self.tool_names = offered_tool_names(self.tools_by_agent)
        self.structured = structured_planner(model, list(profiles), self.tool_names)
        self.tools = schema_tools(plan_schema(list(profiles), self.tool_names))
        self.profiles = profiles
        self.base_config = config

    def check(self, specs: list[dict]) -> tuple[list[dict], list[str]]:
        """Repair what is clear (dependency spellings, unknown agent types and tools), then validate;
        `UsablePlan` when only required tools do not fit their agent types."""
        specs, notes = normalize_plan(specs)
        specs, agent_notes = coerce_agent_types(specs, list(self.profiles), DEFAULT_AGENT)
        return check_required_tools(
            specs,
            notes + agent_notes,
            self.tools_by_agent,
            lambda fitted: validate_plan(fitted, agent_types=self.profiles, max_tasks=self.config.max_tasks),
            self.teams,
        )

    def plan(self, goal: str, plan_id: str = "1") -> tuple[dict[str, Task], int, str, list[str]]:
        """``(tasks, model calls, why the fallback was used or "", notes on repairs)``."""
        system = SystemMessage(tools_prompt(PLANNER_PROMPT, self.profiles, self.tools_by_agent))
        # A provider that refuses the request as too long: once more, smaller.
        answers = refit_on_overflow(lambda share: self.ask(goal, system, share))
        answer, calls = answers[-1], sum(a.calls for a in answers)
        specs = answer.specs or rule_plan_or_whole_goal(goal, list(self.profiles), self.config.max_tasks)
        return (
            tasks_from_plan(specs, plan_id=plan_id),
            calls,
            answer.error if answer.specs is None else "",
            answer.notes,
        )

    def ask(self, goal: str, system: SystemMessage, share: float) -> PlanAnswer:
        """The model's plan, from a request fitted to ``share`` of the budget."""
        # A retry adds its message to this request.
        budget = int(self.monitor.budget * share) - retry_room(self.monitor, self.config.planner_retries)
        fitted = fit_request(
            {GOAL_ID: goal},
            lambda shown: [system, HumanMessage(shown[GOAL_ID])],
            {GOAL_ID: GOAL_ID},
            self.monitor,
            tools=self.tools,
            budget=budget,
        )
        if fitted.fits:
            answer = request_plan(
                self.structured,
                fitted.request,
                retries=self.config.planner_retries,
                config=self.config,
                check=self.check,
            )
        else:
            needed = self.monitor.tokens(fitted.request, self.tools)
            answer = PlanAnswer(
                None,
                0,
                f"the planner's request does not fit the context window ({needed} tokens, "
                f"{budget} allowed with room for a retry)",
            )
        return answer

    @collect_writes
    def __call__(self, state: Mapping) -> StateUpdate:
        goal, from_goal_key = resolve_goal(state)
        tasks, calls, fallback_reason, notes = self.plan(goal, next_plan_id(state.get("tasks") or {}))
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
            "final_answer": "",
            "plan_review": "waiting" if self.config.approve_plan else "not_asked",
            "cancelled": False,
        }
        if from_goal_key:
            update["messages"] = [HumanMessage(goal)]
        return update
