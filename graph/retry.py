"""Retries of transient model errors, and the per-step time limit. No LangGraph here."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from langchain_core.runnables.config import ContextThreadPoolExecutor

T = TypeVar("T")

TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
TRANSIENT_NAMES = frozenset(
    {
        "APITimeoutError",
        "APIConnectionError",
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "ConnectTimeout",
        "ReadTimeout",
        "RemoteProtocolError",
    }
)


class StepTimeout(TimeoutError):
    """A subtask ran past ``step_timeout_s``."""


def status_code(exc: BaseException) -> int | None:
    """The HTTP status an API error carries, if any."""
    for source in (exc, getattr(exc, "response", None)):
        code = getattr(source, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def is_transient(exc: BaseException) -> bool:
    """Timeouts, connection errors, 429 and 5xx: worth another try. StepTimeout is not."""
    if isinstance(exc, StepTimeout):
        return False
    if isinstance(exc, TimeoutError | ConnectionError) or type(exc).__name__ in TRANSIENT_NAMES:
        return True
    code = status_code(exc)
    return code is not None and (code in TRANSIENT_STATUS or code >= 500)


def backoff_delays(retries: int, initial_s: float, max_s: float) -> list[float]:
    """Exponential waits before each retry: initial, 2x, 4x ... capped at ``max_s``."""
    return [min(initial_s * 2**i, max_s) for i in range(retries)]


def call_with_retries(
    call: Callable[[], T],
    *,
    retries: int,
    backoff_s: float,
    max_backoff_s: float = 30.0,
    transient: Callable[[BaseException], bool] = is_transient,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[T, int]:
    """``(result, attempts)``; retries transient errors with backoff, re-raises the rest and the last one."""
    delays = backoff_delays(retries, backoff_s, max_backoff_s)
    attempt = 0
    while True:
        attempt += 1
        try:
            return call(), attempt
        except Exception as exc:
            if attempt > len(delays) or not transient(exc):
                exc.attempts = attempt  # type: ignore[attr-defined]  # how many calls were spent
                raise
            sleep(delays[attempt - 1])


def seconds_left(started: float, limit: float | None) -> float | None:
    """Seconds the subtask may still run, or None without a limit."""
    return None if limit is None else limit - (time.time() - started)


def call_with_timeout(call: Callable[[], T], timeout_s: float | None) -> T:
    """``call()``, or StepTimeout once ``timeout_s`` has passed (None: no limit).

    The call runs in a worker thread that is abandoned on timeout; Python cannot
    kill it, but its result is ignored.
    """
    if timeout_s is None:
        return call()
    if timeout_s <= 0:
        raise StepTimeout("no time left")
    pool = ContextThreadPoolExecutor(max_workers=1)
    future = pool.submit(call)
    try:
        return future.result(timeout=timeout_s)
    except FutureTimeout:
        if future.done():  # the call itself raised a TimeoutError (the same class since 3.11)
            raise
        raise StepTimeout(f"no answer within {timeout_s:.1f}s") from None
    finally:
        pool.shutdown(wait=False)
