"""Retries of a model call: which errors are tried again (``is_transient``; a lost server pauses the run when
it may), how long to wait (the provider's ``Retry-After``, else backoff with jitter, never past the step's
deadline) and how many tries a call gets (``model_retries``; the client's own retries are turned off). Waits go
through `replangraph.clock.wait`, which tests replace.

Hand-written rather than LangGraph's ``RetryPolicy`` because a policy retries a whole node: it cannot honour
a provider's ``Retry-After``, it would repeat the planner's earlier (successful) calls, and its attempts
could not be counted against ``max_steps``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from replangraph import clock
from replangraph.llm.errors import (
    ModelServerDown,
    is_server_down,
    is_transient,
    retry_after,
)

T = TypeVar("T")
logger = logging.getLogger(__name__)


def paused_if_down(exc: BaseException, config: Any) -> None:
    """Raise `ModelServerDown` for ``exc`` when the server did not answer and the run pauses for that."""
    if getattr(config, "pause_when_model_down", False) and is_server_down(exc):
        down = ModelServerDown(exc)
        logger.warning("%s", down)
        raise down from exc


def backoff_delays(retries: int, initial_s: float, max_s: float) -> list[float]:
    """Exponential waits before each retry: initial, 2x, 4x ... capped at ``max_s``."""
    return [min(initial_s * 2**i, max_s) for i in range(retries)]


def retry_delay(exc: BaseException, backoff_s: float, max_s: float, jitter: float = 0.0) -> float:
    """The wait before the next try: the provider's ``Retry-After`` when it sent one, else the
    backoff with jitter; capped at ``max_s``."""
    asked = retry_after(exc)
    return min(asked if asked is not None else backoff_s * (1 + jitter), max_s)


def next_wait(
    exc: Exception,
    attempt: int,
    delays: Sequence[float],
    max_backoff_s: float,
    transient: Callable[[BaseException], bool],
    deadline: float | None,
    label: str = "model call",
) -> float | None:
    """How long to wait before trying again after try ``attempt`` raised ``exc``; None when no try is left (then
    ``exc.attempts`` is set). The one retry policy of `call_with_retries` and `acall_with_retries`; logs the
    retry, or why there is none, naming the call by ``label``."""
    if not transient(exc):
        exc.attempts = attempt  # type: ignore[attr-defined]  # how many calls were spent
        logger.debug("%s failed, not retried (%s: %s)", label, type(exc).__name__, exc)
        return None
    if attempt > len(delays):
        exc.attempts = attempt  # type: ignore[attr-defined]
        logger.warning("%s failed, no retries left after try %d (%s: %s)", label, attempt, type(exc).__name__, exc)
        return None
    delay = retry_delay(exc, delays[attempt - 1], max_backoff_s, clock.jitter())
    delay = delay if deadline is None else min(delay, max(deadline - clock.now(), 0.0))
    logger.info(
        "%s failed (%s: %s); retry %d of %d in %.1fs", label, type(exc).__name__, exc, attempt, len(delays), delay
    )
    return delay


def call_with_retries(
    call: Callable[[], T],
    *,
    retries: int,
    backoff_s: float,
    max_backoff_s: float = 60.0,
    transient: Callable[[BaseException], bool] = is_transient,
    sleep: Callable[[float], None] | None = None,
    deadline: float | None = None,
    label: str = "model call",
) -> tuple[T, int]:
    """``(result, attempts)``; retries transient errors after the provider's ``Retry-After``
    or else an exponential backoff (±25 % jitter), capped at ``max_backoff_s``. Other
    errors, and the last one, are re-raised with ``exc.attempts`` set. No wait runs past
    ``deadline`` (epoch seconds). ``label`` names the call in the log."""
    sleep = sleep or clock.wait
    delays = backoff_delays(retries, backoff_s, max_backoff_s)
    attempt = 0
    while True:
        attempt += 1
        try:
            return call(), attempt
        except Exception as exc:
            delay = next_wait(exc, attempt, delays, max_backoff_s, transient, deadline, label)
            if delay is None:
                raise
            sleep(delay)


def replangraph_retries(config: Any) -> int:
    """How often replangraph retries a failed model call (``model_retries``); while it does, a model's client
    does not retry on its own (`bounded`), so one policy applies: (model_retries + 1) requests a call at most."""
    return int(getattr(config, "model_retries", 0) or 0)


def client_timeout(config: Any) -> float | None:
    """The longest a model's own client may wait for an answer to replangraph's calls: ``step_timeout_s``, the
    most time replangraph gives a call (its client gives up no later, so an abandoned call's thread ends soon
    after it); None when there is no limit (the client's own timeout stands)."""
    return getattr(config, "step_timeout_s", None) or None


def retrying(
    call: Callable[[], T], config: Any, deadline: float | None = None, label: str = "model call"
) -> tuple[T, int]:
    """``call()`` with the run's retry settings (an `AgentConfig`); ``(result, attempts)``. ``label`` names
    the call in the log."""
    return call_with_retries(
        call,
        retries=config.model_retries,
        backoff_s=config.retry_backoff_s,
        max_backoff_s=config.max_retry_wait_s,
        deadline=deadline,
        label=label,
    )
