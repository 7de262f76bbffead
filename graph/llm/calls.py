"""The one call path every node asks a model through: `call_model` (or `attempt`) retries transient errors
(`replangraph.llm.retries`), keeps time limits (`replangraph.llm.time_limits`), bounds the answer
(`replangraph.llm.bounds`) and never raises for model trouble but returns it classified in a `Called`; `guarded`
is the one place an ordinary exception is caught while LangGraph's own (``GraphBubbleUp``) pass through. Work
written as steps (`run_steps`; `replangraph.llm.aio.arun_steps` awaits them) serves both paths: a request the
provider refused as too long is asked again by `replangraph.llm.overflow.refit_steps`, a model bound to a schema
answers through `replangraph.llm.answers` and `replangraph.llm.structured`.

The executor's model calls go through its middleware chain (``nodes/execution/middleware.py``), whose retry
wrapper is `replangraph.llm.retries.retrying` under the step's deadline; its failures are caught by `guarded`,
like the tools node's. Nodes still get LangGraph's ``error_handler`` as the safety net for anything unexpected
(see ``builder.py``). The async path (``ainvoke``) lives in `replangraph.llm.aio`; a sync run runs none of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp

from replangraph import clock
from replangraph.llm.answers import raw_reply
from replangraph.llm.bounds import output_limit, with_output_bound
from replangraph.llm.errors import (
    is_context_overflow,
    is_transient,
)
from replangraph.llm.replies import note_reply
from replangraph.llm.retries import client_timeout, paused_if_down, replangraph_retries, retrying
from replangraph.llm.time_limits import call_with_timeout
from replangraph.tracing import call_label

logger = logging.getLogger(__name__)


T = TypeVar("T")


R = TypeVar("R")


BUBBLE_UP = (GraphBubbleUp,)
"""LangGraph's control flow (interrupts, commands to a parent graph, a paused run): never a failure, always
re-raised."""


@dataclass
class Called(Generic[T]):
    """The outcome of one model call through `call_model`: a reply, or the error that ended the tries."""

    reply: T | None
    attempts: int
    """Tries spent, transient retries and a try refused for want of time included."""
    error: Exception | None = None
    overflow: bool = False
    """Whether the provider refused the request as longer than its context window."""
    unanswered: bool = False
    """Whether a transient error (down, timing out, rate limited) outlived the retries."""

    @classmethod
    def failed(cls, exc: Exception) -> Called:
        """The classified outcome of a call that ended in ``exc`` (``exc.attempts``: tries spent)."""
        attempts = getattr(exc, "attempts", 1)
        return cls(None, attempts, exc, overflow=is_context_overflow(exc), unanswered=is_transient(exc))

    def result(self) -> T:
        """The reply, or the error raised again (for callers whose failure handling is an exception)."""
        if self.error is not None:
            raise self.error
        return self.reply  # type: ignore[return-value]


def guarded(work: Callable[[], T], fallback: Callable[[Exception], T]) -> T:
    """``work()``, or ``fallback(exc)`` when it raises an ordinary exception. LangGraph's bubble-up
    (``GraphBubbleUp``) and ``KeyboardInterrupt``/``SystemExit`` always pass through."""
    try:
        return work()
    except BUBBLE_UP:
        raise
    except Exception as exc:
        return fallback(exc)


def attempt(
    call: Callable[[], T], config: Any, *, deadline: float | None = None, label: str = "model call"
) -> Called[T]:
    """``call()`` with the run's retry settings, never raising for its failure: a `Called`.

    With a ``deadline`` (epoch seconds) each try gets only the time left, waits included, and
    once it has passed no further try starts (`StepTimeout`). ``label`` names the call in the log."""
    timed = call if deadline is None else (lambda: call_with_timeout(call, deadline - clock.now()))

    def tried() -> Called[T]:
        reply, attempts = retrying(timed, config, deadline, label)
        return Called(reply, attempts)

    return guarded(tried, Called.failed)


def call_model(
    model: Any,
    request: Any,
    config: Any,
    *,
    deadline: float | None = None,
    observe: Callable[[Any, Any], None] | None = None,
    monitor: Any = None,
    trace: RunnableConfig | None = None,
) -> Called:
    """``model.invoke(request, trace)`` through `attempt`: retried, timed, classified; never raises but bubble-up
    (and `ModelServerDown` when the run pauses for a server that stopped answering). ``trace``: the call's
    config, which names its node and subtask in traces and logs (`replangraph.tracing.traced`).

    The answer is bounded (`output_limit` of ``config`` and ``monitor``, the model's context monitor; sent as
    `with_output_bound` says), the client's own retries are off while replangraph retries (`replangraph_retries`),
    and the call's time is bounded too: without a ``deadline``, ``step_timeout_s`` from now (an OpenAI client's
    own ``timeout`` at most that, `client_timeout`).
    ``observe(request, reply)`` sees each reply (to calibrate token counts from its usage)."""
    bounded_model = with_output_bound(
        model, output_limit(config, monitor), replangraph_retries(config) == 0, client_timeout(config)
    )
    if deadline is None and getattr(config, "step_timeout_s", None):
        deadline = clock.now() + config.step_timeout_s
    called = attempt(lambda: bounded_model.invoke(request, trace), config, deadline=deadline, label=call_label(trace))
    if called.error is not None:
        paused_if_down(called.error, config)
        return called
    note_reply(request, raw_reply(called.reply))
    if observe is not None:
        observe(request, raw_reply(called.reply))
    return called


def run_steps(steps: Generator[Any, Any, T]) -> T:
    """What ``steps`` returns on the sync path. Work written once for both paths is a generator that yields
    each call's result as it makes the call (sync path) or the call's awaitable (async path), and is sent
    the result (or thrown the call's exception) back: here each yielded value is already the result."""
    try:
        value = next(steps)
        while True:
            value = steps.send(value)
    except StopIteration as stop:
        return stop.value


def guarded_steps(steps: Generator[Any, Any, T], fallback: Callable[[Exception], T]) -> Generator[Any, Any, T]:
    """`guarded` for work written as steps (a generator whose calls a node's sync or async driver makes):
    what ``steps`` returns, or ``fallback(exc)`` when it raises an ordinary exception."""
    try:
        return (yield from steps)
    except BUBBLE_UP:
        raise
    except Exception as exc:
        return fallback(exc)
