"""planner node: turns the goal into a validated DAG of subtasks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, Field

from replangraph.config import AgentConfig, AgentProfile
from replangraph.events import PLAN_CREATED, emit
from replangraph.messages import message_text, resolve_goal
from replangraph.plans import tasks_from_plan, validate_plan
from replangraph.prompts import PLAN_RETRY, PLANNER_PROMPT, agent_types_text
from replangraph.queue import DEFAULT_AGENT, RESET, QueueError, Task, ordered
from replangraph.rule_plan import rule_based_plan


class PlannedTask(BaseModel):
    """One subtask of a plan."""

    id: str = Field(description="Short unique id, e.g. '1', '2'.")
    content: str = Field(description="Self-contained instruction for the agent.")
    agent_type: str = Field(DEFAULT_AGENT, description="Which agent type runs it.")
    depends_on: list[str] = Field(default_factory=list, description="Ids whose results this subtask needs.")


class Plan(BaseModel):
    """A plan: the subtasks that together reach the goal."""

    tasks: list[PlannedTask] = Field(description="The subtasks, in the order they should run.")


def structured_planner(model: BaseChatModel):
    """``model`` answering with a `Plan` through tool calling, raw reply included."""
    return model.with_structured_output(Plan, method="function_calling", include_raw=True)


def raw_answer(raw: Any) -> str:
    """What the model actually said, for the retry prompt."""
    if isinstance(raw, AIMessage) and raw.tool_calls:
        return json.dumps(raw.tool_calls[0].get("args"), default=str)[:2_000]
    if isinstance(raw, BaseMessage):
        return message_text(raw)[:2_000] or "(empty)"
    return "(none)"


def request_plan(
    structured: Any,
    messages: list[BaseMessage],
    *,
    retries: int,
    validate,
) -> tuple[list[dict] | None, int, str]:
    """Ask for a plan until ``validate`` accepts one; ``(specs or None, model calls, last error)``."""
    error = ""
    prompt = list(messages)
    for attempt in range(retries + 1):
        previous = "(none)"
        try:
            answer = structured.invoke(prompt)
        except GraphBubbleUp:
            raise
        except Exception as exc:  # the model is down or refused: try again, then fall back
            error = f"model call failed: {type(exc).__name__}: {exc}"
        else:
            parsed = answer.get("parsed") if isinstance(answer, Mapping) else answer
            previous = raw_answer(answer.get("raw") if isinstance(answer, Mapping) else None)
            if isinstance(parsed, Plan):
                specs = [t.model_dump() for t in parsed.tasks]
                try:
                    validate(specs)
                    return specs, attempt + 1, ""
                except QueueError as exc:
                    error = str(exc)
            else:
                parsing_error = answer.get("parsing_error") if isinstance(answer, Mapping) else None
                error = f"the answer was not a valid Plan tool call ({parsing_error or 'no Plan tool call'})"
        prompt = [*messages, HumanMessage(PLAN_RETRY.format(error=error, previous=previous))]
    return None, retries + 1, error


class Planner:
    """Plans the goal. After ``planner_retries`` invalid answers it falls back to a rule-based
    plan from the goal's verbs, and failing that to one subtask holding the whole goal."""

    def __init__(self, model: BaseChatModel, profiles: Mapping[str, AgentProfile], config: AgentConfig):
        self.structured = structured_planner(model)
        self.profiles = profiles
        self.config = config

    def plan(self, goal: str) -> tuple[dict[str, Task], int, str]:
        """``(tasks, model calls, why the fallback was used or "")``."""
        descriptions = {name: p.description for name, p in self.profiles.items()}
        messages = [
            SystemMessage(PLANNER_PROMPT.format(agent_types=agent_types_text(descriptions))),
            HumanMessage(goal),
        ]

        def validate(specs: list[dict]) -> None:
            validate_plan(specs, agent_types=self.profiles, max_tasks=self.config.max_tasks)

        specs, calls, error = request_plan(
            self.structured, messages, retries=self.config.planner_retries, validate=validate
        )
        if specs is None:
            specs = rule_based_plan(goal) or [
                {"id": "1", "content": goal, "agent_type": DEFAULT_AGENT, "depends_on": []}
            ]
        return tasks_from_plan(specs), calls, error

    def __call__(self, state: Mapping) -> dict:
        goal, from_goal_key = resolve_goal(state)
        tasks, calls, fallback_reason = self.plan(goal)
        emit(
            PLAN_CREATED,
            goal=goal,
            tasks=[{k: t[k] for k in ("id", "content", "agent_type", "depends_on")} for t in ordered(tasks)],
            fallback_reason=fallback_reason or None,
        )
        update: dict[str, Any] = {
            "goal": goal,
            "tasks": {RESET: True, **tasks},
            "windows": {RESET: True},
            "replans": [],
            "planner_calls": calls,
            "final_answer": "",
        }
        if from_goal_key:
            update["messages"] = [HumanMessage(goal)]
        return update
