"""A run's pauses on Temporal, as plain data: what waits for the user, and how an answer or new input is read.

The workflow (`replangraph.temporal.workflow`) runs the graph until it ends or pauses; these functions decide, with
no Temporal in them, what it shows (`waiting_of`), which answers it takes (`resume_for`), what input means
(`as_input`) and whether a run that new input stopped between steps must be continued (`stopped_between_steps`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from replangraph.resume import unfinished

INTERRUPT_ID = re.compile(r"[0-9a-f]{32}")
"""How LangGraph writes an interrupt's id (a 128-bit hash in hex)."""


class Refused(ValueError):
    """The run cannot take this answer or input now; the message says why and what it waits for."""


def waiting_of(interrupts: Sequence[Any]) -> list[dict[str, Any]]:
    """The interrupts a paused run waits on, as ``{"id", "value"}`` (the value as the node asked: a question or
    the plan, with LangChain's HITL request), in the order LangGraph lists them."""
    return [{"id": item.id, "value": item.value} for item in interrupts]


def resume_for(answer: Any, waiting: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The resume mapping (interrupt id -> answer) for ``answer``, as ``Command(resume=...)`` takes it
    in-process: a mapping of the waiting interrupts' ids to their answers (some of them: the others wait on), or
    one answer when one interrupt waits. `Refused` when nothing waits, when one answer is given for several
    interrupts, or when it names interrupts that do not wait (a slash command asks again, with new ids)."""
    if not waiting:
        raise Refused("nothing waits for an answer: the run is working, or has ended")
    ids = [w["id"] for w in waiting]
    if isinstance(answer, Mapping):
        named = [k for k in answer if k in ids]
        stale = [k for k in answer if k not in ids and isinstance(k, str) and INTERRUPT_ID.fullmatch(k)]
        if stale:
            raise Refused(f"no interrupt waits with id {', '.join(stale)}; waiting: {', '.join(ids)}")
        if named and len(named) < len(answer):
            others = [str(k) for k in answer if k not in ids]
            raise Refused(f"answers by interrupt id must name only waiting ones; not one: {', '.join(others)}")
        if named:
            return dict(answer)
    if len(ids) > 1:
        raise Refused(
            f"{len(ids)} interrupts wait: answer with a mapping of interrupt id to answer (ids: {', '.join(ids)})"
        )
    return {ids[0]: answer}


def as_input(given: Any) -> dict[str, Any]:
    """New input for the graph: text (a slash command, a message) as a user message; a mapping (the graph's input,
    ``{"messages": [...]}``) as it is. `Refused` for anything else, or for empty text."""
    if isinstance(given, str):
        if not given.strip():
            raise Refused("the input is empty")
        return {"messages": [HumanMessage(given)]}
    if isinstance(given, BaseMessage):
        return {"messages": [given]}
    if isinstance(given, Mapping):
        return dict(given)
    raise Refused(f"input must be text or the graph's input (a mapping), not {type(given).__name__}")


def with_ids(given: dict[str, Any], new_id: Callable[[], str]) -> dict[str, Any]:
    """``given`` with an id from ``new_id`` on each of its messages that has none (LangGraph would give them a
    random one, which a workflow must not: its replay would differ)."""
    messages = given.get("messages")
    if not isinstance(messages, list):
        return given
    stamped = [
        m.model_copy(update={"id": new_id()}) if isinstance(m, BaseMessage) and not m.id else m for m in messages
    ]
    return {**given, "messages": stamped}


def stopped_between_steps(snapshot: Any) -> bool:
    """Whether the run stopped between steps with work left that nothing will run: no interrupt, no step waiting
    in the checkpoint (new input drops them), and the run unfinished. The graph's ``/resume`` (`RESUME`) picks it
    up, as ``replangraph resume`` sends it."""
    if snapshot.interrupts or snapshot.next or snapshot.tasks:
        return False
    return unfinished(snapshot.values)
