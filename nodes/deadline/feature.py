"""The deadline as one `Feature`: a run-start hook fixes when a new goal's time runs out (``deadline_s`` from
then, by the run's clock); a rule at the ``stop`` stage sends the run to the finalizer once it has passed, and
the stop names it. Like the budget, it is checked before each step the router dispatches: a step under way (a
model call, a tool call) finishes, and its subtask ends as stopped with what it found."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replangraph.clock import run_time
from replangraph.config import AgentConfig
from replangraph.events import event
from replangraph.features import Build, Feature, RunStart, Stop
from replangraph.names import FINALIZE
from replangraph.nodes.deadline.names import DEADLINE_PASSED
from replangraph.nodes.deadline.state import DeadlineState
from replangraph.routing import Route, Rule

UNFINISHED = ("pending", "in_progress")


def feature(build: Build) -> Feature:
    return Feature(
        "deadline",
        rules=[Rule("deadline_passed", "deadline", passed_rule, "stop")],
        state=DeadlineState,
        output=DeadlineState,
        on_run_start=deadline_for,
        stop=deadline_stop,
    )


def deadline_for(start: RunStart) -> dict[str, Any] | None:
    """A new goal's deadline: ``deadline_s`` from now, or none. An answer or a command keeps the goal's deadline
    (one set only now, by a run's context, starts now)."""
    limit = start.settings.deadline_s
    if start.new_goal:
        return {"deadline_at": None if limit is None else start.now + limit}
    if limit is not None and start.state.get("deadline_at") is None:
        return {"deadline_at": start.now + limit}
    return None


def overrun(state: Mapping[str, Any], now: float) -> float | None:
    """Seconds past the deadline (0 or more), or None before it or without one."""
    deadline = state.get("deadline_at")
    return None if deadline is None or now < deadline else now - deadline


def passed_rule(route: Route) -> str | None:
    """Past the deadline, with work left: the run ends with what it has."""
    return FINALIZE if overrun(route.state, route.now) is not None and unfinished(route.state) else None


def unfinished(state: Mapping[str, Any]) -> bool:
    return any(task["status"] in UNFINISHED for task in (state.get("tasks") or {}).values())


def deadline_stop(state: Mapping[str, Any], settings: AgentConfig) -> Stop | None:
    """The run's stop once the deadline has passed with work left: its reason and the ``deadline_passed`` event.
    A run that finished its work before the finalizer runs has not been stopped by it."""
    late = overrun(state, run_time())
    if late is None or not unfinished(state):
        return None
    limit = settings.deadline_s
    named = f"the deadline deadline_s={limit:g}" if limit is not None else "the goal's deadline"
    reason = f"{named} passed ({late:.1f} s ago)"
    return Stop(reason, events=[event(DEADLINE_PASSED, deadline_s=limit, overrun_s=round(late, 3), message=reason)])
