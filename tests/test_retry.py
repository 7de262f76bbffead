"""Retry classification, backoff and the step timeout (pure helpers)."""

from __future__ import annotations

import time

import pytest

from replangraph.retry import StepTimeout, backoff_delays, call_with_retries, call_with_timeout, is_transient


class ApiError(Exception):
    def __init__(self, status_code):
        super().__init__(f"status {status_code}")
        self.status_code = status_code


class RateLimitError(Exception):
    pass


@pytest.mark.parametrize(
    "exc, transient",
    [
        (TimeoutError("t"), True),
        (ConnectionError("c"), True),
        (RateLimitError("429"), True),
        (ApiError(429), True),
        (ApiError(503), True),
        (ApiError(400), False),
        (ApiError(401), False),
        (ValueError("v"), False),
        (StepTimeout("s"), False),
    ],
)
def test_transient_classification(exc, transient):
    assert is_transient(exc) is transient


def test_backoff_doubles_and_caps():
    assert backoff_delays(4, 1.0, 5.0) == [1.0, 2.0, 4.0, 5.0]


def test_retries_transient_errors_with_backoff_then_succeeds():
    waits, outcomes = [], [ApiError(502), TimeoutError("slow"), "ok"]

    def call():
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert call_with_retries(call, retries=2, backoff_s=0.5, sleep=waits.append) == ("ok", 3)
    assert waits == [0.5, 1.0]


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
        raise ApiError(400)

    with pytest.raises(ApiError):
        call_with_retries(call, retries=5, backoff_s=0, sleep=lambda s: None)
    assert len(calls) == 1


def test_timeout_stops_waiting_for_a_slow_call():
    started = time.monotonic()
    with pytest.raises(StepTimeout):
        call_with_timeout(lambda: time.sleep(2), 0.1)
    assert time.monotonic() - started < 1


def test_timeout_passes_results_and_the_call_s_own_timeout_error():
    assert call_with_timeout(lambda: 42, 5) == 42
    assert call_with_timeout(lambda: 42, None) == 42

    def raises():
        raise TimeoutError("the model's own timeout")

    with pytest.raises(TimeoutError, match="model's own") as caught:
        call_with_timeout(raises, 5)
    assert not isinstance(caught.value, StepTimeout)
