"""What features see of each model reply (`replangraph.features.Feature.on_reply`).

The builder opens a `ReplyMeter` around each node call (`metered`); every model call that answers, in any
node, hands its request and reply to `note_reply`, which asks the features' reply hooks for state writes
(a budget counts the reply's tokens). The node's update carries the writes, so they are checkpointed with the
step that spent them, and a crashed step writes none. A context variable carries the meter, as LangGraph's own
``get_stream_writer`` does, to the calls deep in a node (threads started with the caller's context see it).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

ReplyHook = Callable[[Sequence[Any], Any], Mapping[str, Any] | None]
"""``(request messages, reply) -> state writes or None``."""

Combine = Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
"""Merges two updates the way the state's channels would (their reducers)."""


@dataclass
class ReplyMeter:
    """The reply hooks of one node call and the writes they returned so far."""

    hooks: Sequence[ReplyHook]
    combine: Combine
    writes: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)  # a node's parallel calls share it


class Metered(Protocol):
    """What meters a node's replies: its features' reply hooks and how their writes combine
    (`replangraph.features.Metering`)."""

    hooks: Sequence[ReplyHook]

    def combine(self, current: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]: ...


_meter: contextvars.ContextVar[ReplyMeter | None] = contextvars.ContextVar("replangraph_reply_meter", default=None)


@contextmanager
def metered(hooks: Sequence[ReplyHook], combine: Combine) -> Iterator[ReplyMeter]:
    """A meter for the block: the replies noted inside it reach ``hooks``."""
    meter = ReplyMeter(hooks, combine)
    token = _meter.set(meter)
    try:
        yield meter
    finally:
        _meter.reset(token)


def meter_open() -> bool:
    """Whether a meter is open here (the caller is inside a metered node call)."""
    return _meter.get() is not None


def note_reply(request: Sequence[Any], reply: Any) -> None:
    """Hand one answered call to the open meter's hooks; nothing without a meter or hooks."""
    meter = _meter.get()
    if meter is None or not meter.hooks:
        return
    for hook in meter.hooks:
        note_writes(hook(request, reply))


def note_writes(written: Mapping[str, Any] | None) -> None:
    """Add ``written`` (what reply hooks wrote for replies metered elsewhere, such as a node call's task in
    another process) to the open meter's writes; nothing without a meter."""
    meter = _meter.get()
    if meter is None or not written:
        return
    with meter.lock:
        meter.writes = meter.combine(meter.writes, written)


@dataclass(frozen=True)
class Usage:
    """What one answered call spent: input and output tokens, whether they were counted approximately (the
    provider sent no usage), and the model the reply names ("" when it names none)."""

    input_tokens: int
    output_tokens: int
    estimated: bool
    model: str


def reply_usage(request: Sequence[Any], reply: Any) -> Usage:
    """The tokens of one answered call: the reply's ``usage_metadata``, else LangChain's approximate count of what
    was sent and received (a scripted model, some local servers send no usage)."""
    from langchain_core.messages.utils import count_tokens_approximately

    usage = getattr(reply, "usage_metadata", None) or {}
    metadata = getattr(reply, "response_metadata", None) or {}
    model = str(metadata.get("model_name") or metadata.get("model") or "")
    if usage.get("input_tokens") or usage.get("output_tokens"):
        return Usage(usage.get("input_tokens", 0), usage.get("output_tokens", 0), False, model)
    return Usage(count_tokens_approximately(list(request)), count_tokens_approximately([reply]), True, model)


def with_metered_writes(state: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` with what the open meter's hooks wrote so far in this node call (its replies' spend), combined
    by the state's reducers: the state as this node's update would leave it. ``state`` itself without a meter."""
    meter = _meter.get()
    if meter is None or not meter.writes:
        return dict(state)
    with meter.lock:
        return meter.combine(state, meter.writes)
