"""The events of the custom stream (``stream_mode="custom"``): their names (`EVENT_NAMES`: the engine's, then the
registered features'), how an update carries them (`event`, under its ``events`` key; the node's `collect_writes`
wrapper emits them when it returns normally), and how they are held while a node runs (`held_events`)."""

from __future__ import annotations

import contextvars
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.config import get_stream_writer

import replangraph.nodes as nodes

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
