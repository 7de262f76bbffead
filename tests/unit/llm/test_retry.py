"""Retry classification (with the real langchain-openai error classes), Retry-After, backoff and the step timeout."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import httpx
import openai
import pytest
from clocks import GUARD_S
from langchain_core.exceptions import ContextOverflowError, ModelError
from langchain_openai.chat_models.base import (
    OpenAIAPIError,
    OpenAIAuthenticationError,
    OpenAIConnectionError,
    OpenAIContextOverflowError,
    OpenAIInvalidRequestError,
    OpenAIRateLimitError,
    OpenAITimeoutError,
)

import replangraph.clock as process_clock
from replangraph.llm import time_limits as retry
from replangraph.llm.aio import acall_with_timeout, in_pool
from replangraph.llm.errors import StepTimeout, is_context_overflow, is_transient, retry_after
from replangraph.llm.retries import backoff_delays, call_with_retries, retry_delay
from replangraph.llm.time_limits import call_with_timeout

REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


def response(status: int, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=REQUEST)


def status_error(cls, status: int, **headers: str):
    return cls(f"status {status}", response=response(status, **headers), body=None)


class ApiError(Exception):
    def __init__(self, status_code):
        super().__init__(f"status {status_code}")
        self.status_code = status_code


@pytest.mark.parametrize(
    "exc, transient",
    [
        # langchain-openai's own classes: subclasses of both openai's and langchain-core's errors
        (OpenAITimeoutError(request=REQUEST), True),
        (OpenAIConnectionError(request=REQUEST), True),
        (status_error(OpenAIRateLimitError, 429), True),
        (status_error(OpenAIAPIError, 503), True),
        (status_error(OpenAIAuthenticationError, 401), False),
        (status_error(OpenAIInvalidRequestError, 400), False),
        (status_error(OpenAIContextOverflowError, 400), False),
        # the openai SDK and httpx without langchain's classification
        (openai.APITimeoutError(request=REQUEST), True),
        (status_error(openai.InternalServerError, 500), True),
        (httpx.ReadTimeout("slow"), True),
        # langchain-core's classes as other providers raise them
        (ContextOverflowError("too long"), False),
        (ModelError("unclassified"), False),
        # plain Python and status-carrying errors of other SDKs
        (TimeoutError("t"), True),
        (ConnectionError("c"), True),
        (ApiError(429), True),
        (ApiError(503), True),
        (ApiError(400), False),
        (ValueError("v"), False),
        (StepTimeout("s"), False),
    ],
)
def test_transient_classification(exc, transient):
    assert is_transient(exc) is transient


def test_retry_after_in_seconds_milliseconds_dates_and_attributes():
    assert retry_after(status_error(OpenAIRateLimitError, 429, **{"retry-after": "2"})) == 2.0
    assert retry_after(status_error(OpenAIRateLimitError, 429, **{"retry-after-ms": "1500"})) == 1.5
    date = "Wed, 21 Oct 2026 07:28:05 GMT"
    now = time.mktime(time.strptime("2026-10-21 07:28:00", "%Y-%m-%d %H:%M:%S")) - time.timezone
    assert retry_after(status_error(OpenAIRateLimitError, 429, **{"retry-after": date}), now=now) == pytest.approx(5)
    assert retry_after(status_error(OpenAIRateLimitError, 429, **{"retry-after": "soon"})) is None
    assert retry_after(status_error(OpenAIRateLimitError, 429)) is None
    error = ValueError("x")
    error.retry_after = 3  # some SDKs carry it as an attribute
    assert retry_after(error) == 3.0


def test_retry_delay_follows_retry_after_and_caps_it():
    asked = status_error(OpenAIRateLimitError, 429, **{"retry-after": "7"})
    assert retry_delay(asked, backoff_s=1.0, max_s=60) == 7.0
    assert retry_delay(asked, backoff_s=10.0, max_s=60) == 7.0  # the server knows when it will answer
    assert retry_delay(asked, backoff_s=1.0, max_s=5) == 5.0
    assert retry_delay(TimeoutError(), backoff_s=2.0, max_s=60, jitter=0.25) == 2.5


def test_backoff_doubles_and_caps():
    assert backoff_delays(4, 1.0, 5.0) == [1.0, 2.0, 4.0, 5.0]


def replay(*outcomes):
    """A call that raises or returns ``outcomes`` one after the other."""
    left = list(outcomes)

    def call():
        outcome = left.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return call


def test_retries_transient_errors_with_backoff_then_succeeds(monkeypatch):
    monkeypatch.setattr(process_clock, "jitter", lambda: 0.0)
    waits, call = [], replay(ApiError(502), OpenAITimeoutError(request=REQUEST), "ok")
    assert call_with_retries(call, retries=2, backoff_s=0.5, sleep=waits.append) == ("ok", 3)
    assert waits == [0.5, 1.0]


def test_jitter_spreads_waits_by_at_most_a_quarter():
    waits = []

    def call():
        raise TimeoutError

    with pytest.raises(TimeoutError):
        call_with_retries(call, retries=20, backoff_s=1.0, max_backoff_s=1.0, sleep=waits.append)
    assert all(0.75 <= w <= 1.0 for w in waits) and len(set(waits)) > 1


def test_rate_limit_waits_as_long_as_the_provider_asks(monkeypatch):
    monkeypatch.setattr(process_clock, "jitter", lambda: 0.0)
    waits, call = [], replay(status_error(OpenAIRateLimitError, 429, **{"retry-after": "1.5"}), "ok")
    assert call_with_retries(call, retries=2, backoff_s=0.1, sleep=waits.append) == ("ok", 2)
    assert waits == [1.5]


def test_gives_up_after_retries_and_reports_attempts():
    def call():
        raise ApiError(500)

    with pytest.raises(ApiError) as caught:
        call_with_retries(call, retries=2, backoff_s=0, sleep=lambda s: None)
    assert caught.value.attempts == 3


def test_does_not_retry_permanent_errors():
    calls = []

    def call():
        calls.append(1)
        raise status_error(OpenAIAuthenticationError, 401)

    with pytest.raises(OpenAIAuthenticationError):
        call_with_retries(call, retries=5, backoff_s=0, sleep=lambda s: None)
    assert len(calls) == 1


def test_timeout_stops_waiting_for_a_slow_call():
    """The caller gets StepTimeout while the call is still running: it does not wait for the call to end."""
    release, ended = threading.Event(), threading.Event()

    def stuck() -> None:
        release.wait(GUARD_S)
        ended.set()

    try:
        with pytest.raises(StepTimeout, match="no answer within 0.1s"):
            call_with_timeout(stuck, 0.1)
        assert not ended.is_set()  # still running: only the release can end it
    finally:
        release.set()
    assert ended.wait(GUARD_S), "the abandoned call never ended once released"


def test_timeout_passes_results_and_the_call_s_own_timeout_error():
    assert call_with_timeout(lambda: 42, GUARD_S) == 42
    assert call_with_timeout(lambda: 42, None) == 42

    def raises():
        raise TimeoutError("the model's own timeout")

    with pytest.raises(TimeoutError, match="model's own") as caught:
        call_with_timeout(raises, GUARD_S)
    assert not isinstance(caught.value, StepTimeout)


class _ServerError(Exception):
    def __init__(self, message: str, status: int | None, body: dict | None = None):
        super().__init__(message)
        self.status_code, self.body = status, body


@pytest.mark.parametrize(
    ("message", "status", "body"),
    [
        ("Error code: 400 - This model's maximum context length is 8192 tokens.", 400, None),  # OpenAI, vLLM
        ("Error code: 400 - bad request", 400, {"error": {"code": "context_length_exceeded"}}),  # code only
        ("The decoder prompt (length 9000) is longer than the maximum model length of 8192.", 400, None),  # vLLM v1
        ("the request exceeds the available context size, try increasing it", 400, None),  # llama.cpp
        ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096", 422, None),  # TGI
        ("Trying to keep the first 9000 tokens when context length of only 4096 tokens", 400, None),  # LM Studio
        ("The input token count (1200000) exceeds the maximum number of tokens allowed", 400, None),  # Gemini
        ("input is too big compared to KV size", 500, None),  # older llama.cpp
        ("Requested tokens (9000) exceed context window of 4096", None, None),  # llama-cpp-python, in process
    ],
)
def test_context_overflow_is_recognised_in_each_providers_words(message, status, body):
    assert is_context_overflow(_ServerError(message, status, body))


def test_other_errors_are_not_context_overflows():
    assert not is_context_overflow(_ServerError("Error code: 400 - invalid tool schema", 400))
    assert not is_context_overflow(TimeoutError("context window timer"))
    assert is_context_overflow(ContextOverflowError("too long"))


def test_calls_stuck_past_their_timeout_never_starve_later_calls(monkeypatch):
    monkeypatch.setattr(retry, "CALL_WORKERS", 4)
    monkeypatch.setattr(retry, "_pools", {})
    release = threading.Event()
    try:
        for _ in range(6):  # more stuck calls than workers
            with pytest.raises(retry.StepTimeout):
                retry.call_with_timeout(release.wait, 0.05)
        assert retry.call_with_timeout(lambda: "ran", GUARD_S) == "ran"
    finally:
        release.set()


def test_timed_calls_run_in_reused_daemon_threads_with_the_callers_context(monkeypatch):
    """An abandoned call's thread must not keep the interpreter from exiting: a ThreadPoolExecutor's would be
    joined at exit, a `DaemonPool`'s are not waited for."""
    monkeypatch.setattr(retry, "_pools", {})
    seen = contextvars.ContextVar("seen", default="unset")
    seen.set("the caller's")
    threads = set()

    def where() -> str:
        threads.add(threading.current_thread())
        return seen.get()

    assert [retry.call_with_timeout(where, GUARD_S) for _ in range(5)] == ["the caller's"] * 5
    assert len(threads) == 1 and all(t.daemon and t.name.startswith("replangraph-calls") for t in threads)
    pool = retry.call_pool()
    assert isinstance(pool, retry.DaemonPool) and pool.threads == 1  # reused, not started per call
    assert not isinstance(retry.call_pool("subtasks"), retry.DaemonPool)  # waited for, never abandoned
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(GUARD_S)


def test_a_pool_half_stuck_in_abandoned_calls_is_replaced_and_its_stuck_count_falls_as_they_return(monkeypatch):
    monkeypatch.setattr(retry, "CALL_WORKERS", 4)
    monkeypatch.setattr(retry, "_pools", {})
    release = threading.Event()
    try:
        first = retry.call_pool()
        with pytest.raises(retry.StepTimeout):
            retry.call_with_timeout(release.wait, 0.05)
        assert first.stuck == 1 and retry.call_pool() is first
        with pytest.raises(retry.StepTimeout):
            retry.call_with_timeout(release.wait, 0.05)
        assert first.stuck == 2 and retry.call_pool() is not first and first.closed
    finally:
        release.set()
    deadline = time.monotonic() + GUARD_S
    while first.stuck and time.monotonic() < deadline:
        time.sleep(0.01)
    assert first.stuck == 0 and not first.abandoned


def test_an_awaited_call_cancelled_in_its_thread_is_counted_as_abandoned(monkeypatch):
    monkeypatch.setattr(retry, "_pools", {})
    release = threading.Event()

    async def cut() -> None:
        with pytest.raises(StepTimeout):
            await acall_with_timeout(lambda: in_pool(release.wait), 0.05)

    try:
        asyncio.run(cut())
        assert retry.call_pool().stuck == 1
    finally:
        release.set()
