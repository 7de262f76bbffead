"""Human in the loop's routing: its rules (a cancelled run, a slash command, a plan waiting for approval,
questions), where a run starts, and what follows a command."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langgraph.graph import END
from langgraph.types import Send

from replangraph.config import AgentConfig, run_settings
from replangraph.llm.messages import waiting_questions
from replangraph.names import ASK, COMMANDS, FINALIZE, PLAN_REVIEW, PLANNER
from replangraph.nodes.human.slash import RESUME, last_command, paused, pending_command, unfinished
from replangraph.routing import Decision, Route, Rule, subtask_input


def cancelled(route: Route) -> Decision | None:
    """The user cancelled the run: the finalizer reports what was done."""
    return FINALIZE if route.state.get("cancelled") else None


def slash_command(route: Route) -> Decision | None:
    """A slash command (or the cancel word) sent as input, or as the answer to a question."""
    return COMMANDS if pending_command(route.state, route.settings.cancel_word) else None


def plan_review(route: Route) -> Decision | None:
    """The plan waits for the user's approval."""
    return PLAN_REVIEW if route.state.get("plan_review") == "waiting" else None


def questions(route: Route) -> Decision | None:
    """Questions pause the run alone: a sibling's finished step in the same superstep would be dropped
    if the thread then got new input (a slash command) instead of an answer."""
    asks = [
        Send(ASK, subtask_input(route.state, t))
        for t in route.active
        if waiting_questions(route.windows.get(t["id"], []))
    ]
    return asks or None


def human_rules() -> list[Rule]:
    """The rules, in order, with their stages."""
    return [
        Rule("cancelled", "human", cancelled, "stop"),
        Rule("slash_command", "human", slash_command, "user"),
        Rule("plan_review", "human", plan_review, "user"),
        Rule("questions", "human", questions, "pause"),
    ]


def make_entry_router(config: AgentConfig) -> Callable[[Mapping[str, Any]], str]:
    """Where a run starts: the commands node for a slash command (or the cancel word), else the planner."""

    def entry(state: Mapping[str, Any]) -> str:
        return COMMANDS if pending_command(state, run_settings(config).cancel_word) else PLANNER

    return entry


def make_command_router(route: Callable[[Mapping[str, Any]], list[Send | str] | str]) -> Callable[..., Any]:
    """What follows a command: a run paused for the user pauses again (``route`` asks its question or
    shows its plan anew; a cancelled one is finalized), ``/resume`` continues a run that stopped
    between steps, and otherwise the run ends: a command never starts work by itself."""

    def after_command(state: Mapping[str, Any]) -> list[Send | str] | str:
        resumed = last_command(state) == RESUME and unfinished(state)
        return route(state) if paused(state) or resumed else END

    return after_command
