"""Custom stream events: dicts with an ``event`` key, read with ``stream_mode="custom"``.

Update builders return their events under an update's ``events`` key (`event`); the
node's `collect_writes` wrapper emits them when the node returns normally.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.config import get_stream_writer

PLAN_CREATED = "plan_created"
STEP_STARTED = "step_started"
STEP_COMPLETED = "step_completed"
STEP_FAILED = "step_failed"
STEP_VERIFIED = "step_verified"
DYNAMIC_TASKS_ADDED = "dynamic_tasks_added"
REPLANNING = "replanning"
CONTEXT_COMPRESSED = "context_compressed"
PLAN_COMPLETED = "plan_completed"
PLAN_REVIEWED = "plan_reviewed"
QUESTION_ANSWERED = "question_answered"
COMMAND_ANSWERED = "command_answered"
TEAM_MERGED = "team_merged"

EVENT_NAMES = (
    PLAN_CREATED,
    STEP_STARTED,
    STEP_COMPLETED,
    STEP_FAILED,
    STEP_VERIFIED,
    DYNAMIC_TASKS_ADDED,
    REPLANNING,
    CONTEXT_COMPRESSED,
    PLAN_COMPLETED,
    PLAN_REVIEWED,
    QUESTION_ANSWERED,
    COMMAND_ANSWERED,
    TEAM_MERGED,
)


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
