"""The one model-call path (``replangraph.llm.calls``, with its retries, bounds and time limits): retries,
Retry-After, deadlines, classified failures, the overflow refit and LangGraph's bubble-up, and a grep that keeps
each part of the policy in its one module."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_openai.chat_models.base import OpenAIAuthenticationError, OpenAIRateLimitError
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from steps import returned

import replangraph.clock as process_clock
from replangraph.llm.calls import Called, attempt, call_model, guarded, run_steps
from replangraph.llm.errors import StepTimeout
from replangraph.llm.overflow import OVERFLOW_SHRINK, overflow_budget, refit_steps

ROOT = Path(__file__).resolve().parents[3]
REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
CONFIG = SimpleNamespace(model_retries=2, retry_backoff_s=0.5, max_retry_wait_s=60.0)


def refitted(fitted, **options):
    """`refit_steps` driven by `run_steps`, ``fitted(share)`` a plain function (one try's outcome)."""
    return run_steps(refit_steps(lambda share: returned(fitted(share)), **options))


def status_error(cls, status: int, **headers: str):
    return cls(f"status {status}", response=httpx.Response(status, headers=headers, request=REQUEST), body=None)


class Scripted:
    """A model whose ``invoke`` raises or returns the scripted outcomes in order, recording each request."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.requests: list = []

    def invoke(self, request, config=None):
        self.requests.append(request)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The delays the retry loop asks for, recorded instead of slept (no jitter)."""
    asked: list[float] = []
    monkeypatch.setattr(process_clock, "wait", asked.append)
    monkeypatch.setattr(process_clock, "jitter", lambda: 0.0)
    return asked


def test_a_transient_error_is_retried_then_answered(waits):
    model = Scripted(TimeoutError("slow"), ConnectionError("reset"), "the answer")
    called = call_model(model, "question", CONFIG)
    assert called == Called("the answer", 3)
    assert model.requests == ["question"] * 3
    assert waits == [0.5, 1.0]


def test_retry_after_is_honoured(waits):
    limited = status_error(OpenAIRateLimitError, 429, **{"retry-after": "7"})
    called = call_model(Scripted(limited, "ok"), "q", CONFIG)
    assert (called.reply, called.attempts, waits) == ("ok", 2, [7.0])


def test_retry_after_is_capped_by_the_longest_wait(waits):
    limited = status_error(OpenAIRateLimitError, 429, **{"retry-after": "7"})
    config = SimpleNamespace(**{**vars(CONFIG), "max_retry_wait_s": 2.0})
    assert call_model(Scripted(limited, "ok"), "q", config).reply == "ok"
    assert waits == [2.0]


def test_a_permanent_error_is_returned_classified_not_raised(waits):
    refused = status_error(OpenAIAuthenticationError, 401)
    model = Scripted(refused, "never asked")
    called = call_model(model, "q", CONFIG)
    assert (called.reply, called.error, called.attempts) == (None, refused, 1)
    assert not called.overflow and not called.unanswered
    assert waits == [] and len(model.requests) == 1
    with pytest.raises(OpenAIAuthenticationError):
        called.result()


def test_retries_that_run_out_are_returned_as_unanswered(waits):
    called = call_model(Scripted(*[TimeoutError("slow")] * 3), "q", CONFIG)
    assert (called.attempts, called.unanswered, called.overflow) == (3, True, False)
    assert isinstance(called.error, TimeoutError)


def test_a_context_overflow_is_classified_and_not_retried(waits):
    called = call_model(Scripted(ContextOverflowError("prompt is too long")), "q", CONFIG)
    assert (called.overflow, called.unanswered, called.attempts) == (True, False, 1)


@pytest.mark.parametrize("exc", [GraphInterrupt(()), GraphBubbleUp("to the parent")])
def test_langgraph_bubble_up_propagates(waits, exc):
    model = Scripted(exc, "never asked")
    with pytest.raises(type(exc)):
        call_model(model, "q", CONFIG)
    assert len(model.requests) == 1 and waits == []


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(1)])
def test_interrupts_of_the_process_are_never_swallowed(waits, exc):
    with pytest.raises(type(exc)):
        call_model(Scripted(exc), "q", CONFIG)


def test_attempts_are_counted_against_the_deadline(monkeypatch, waits):
    """A fake clock moved only by the waits: once the deadline has passed, no further try reaches the model."""
    clock = [1000.0]
    monkeypatch.setattr(process_clock, "now", lambda: clock[0])
    monkeypatch.setattr(process_clock, "wait", lambda s: (waits.append(s), clock.__setitem__(0, clock[0] + s)))
    config = SimpleNamespace(model_retries=5, retry_backoff_s=1.0, max_retry_wait_s=60.0)
    model = Scripted(*[TimeoutError("slow")] * 6)
    called = call_model(model, "q", config, deadline=1002.5)
    assert waits == [1.0, 1.5]  # the second wait is cut to what was left
    assert len(model.requests) == 2
    assert isinstance(called.error, StepTimeout) and called.attempts == 3  # the refused try counts
    assert not called.unanswered and not called.overflow


def test_attempt_runs_any_call_through_the_same_policy(waits):
    outcomes = iter([TimeoutError("slow"), 42])

    def call():
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert attempt(call, CONFIG) == Called(42, 2)


def test_an_overflow_is_refitted_at_half_budget_exactly_once():
    shares: list[float] = []

    def fitted(share: float) -> SimpleNamespace:
        shares.append(share)
        return SimpleNamespace(overflow=True, calls=1)

    outcomes = refitted(fitted)
    assert shares == [1.0, OVERFLOW_SHRINK] == [1.0, 0.5]
    assert len(outcomes) == 2


def test_no_refit_without_an_overflow():
    shares: list[float] = []
    assert refitted(lambda share: shares.append(share) or "fine", refused=lambda _: False) == ["fine"]
    assert shares == [1.0]


def test_an_overflow_raised_is_refitted_and_other_errors_propagate():
    shares: list[float] = []

    def fitted(share: float) -> str:
        shares.append(share)
        if share == 1.0:
            raise ContextOverflowError("maximum context length exceeded")
        return "smaller"

    assert refitted(fitted) == ["smaller"]
    assert shares == [1.0, 0.5]
    with pytest.raises(ValueError):
        refitted(lambda share: (_ for _ in ()).throw(ValueError("a bug")))
    with pytest.raises(GraphInterrupt):
        refitted(lambda share: (_ for _ in ()).throw(GraphInterrupt(())))


def test_the_overflow_budget_halves_what_can_shrink():
    assert overflow_budget(10_000, 9_000, fixed=1_000) == 5_000
    assert overflow_budget(3_000, 9_000, fixed=1_000) == 3_000
    assert overflow_budget(10_000, 500, fixed=1_000) == 1_000


def test_guarded_falls_back_on_ordinary_errors_only():
    assert guarded(lambda: 1 / 0, lambda exc: type(exc).__name__) == "ZeroDivisionError"
    with pytest.raises(GraphInterrupt):
        guarded(lambda: (_ for _ in ()).throw(GraphInterrupt(())), lambda exc: "swallowed")


# --------------------------------------------------------------------------- the policy lives in one module

POLICY_MODULE = "graph/llm/calls.py"
RETRY_MODULE = "graph/llm/retries.py"
OVERFLOW_MODULE = "graph/llm/overflow.py"
CLOCK_MODULE = "graph/clock.py"
ASYNC_POLICY_MODULE = "graph/llm/aio.py"
"""The call path's async twin (``ainvoke``): the same policy, awaited."""
KEEPS_BUBBLE_UP = {
    # A search provider is a user tool, not a model call: it catches a provider's errors but must let an
    # interrupt (a provider asking the user) through.
    "tools/search/internet_search.py",
}


def package_sources() -> dict[str, str]:
    files = [p for top in ("graph", "nodes", "tools") for p in (ROOT / top).rglob("*.py")]
    return {str(p.relative_to(ROOT)): p.read_text() for p in files}


def defining(pattern: str) -> set[str]:
    return {path for path, text in package_sources().items() if re.search(pattern, text, re.M)}


def test_the_overflow_share_is_defined_in_one_module():
    assert defining(r"^OVERFLOW_SHRINK\s*=") == {OVERFLOW_MODULE}
    assert defining(r"OVERFLOW_SHRINK") == {OVERFLOW_MODULE}  # every refit goes through its helpers
    assert defining(r"for share in \(") == set()


def test_the_retry_loop_is_defined_in_one_module():
    assert defining(r"^def (call_with_retries|retry_delay|backoff_delays)\b") == {RETRY_MODULE}
    assert defining(r"^def call_model\b") == {POLICY_MODULE}
    assert defining(r"^def refit_steps\b") == {OVERFLOW_MODULE}
    # graph/temporal/ sleeps between heartbeats: no model call waits there; the one sleep is the clock's
    sleeping = {path for path in defining(r"\bsleep\(|time\.sleep") if not path.startswith("graph/temporal/")}
    assert sleeping <= {CLOCK_MODULE, RETRY_MODULE, ASYNC_POLICY_MODULE}  # retries sleep through the clock's wait


def test_no_node_catches_graph_bubble_up_itself():
    assert defining(r"except \(?GraphBubbleUp") - KEEPS_BUBBLE_UP == set()
    assert defining(r"except BUBBLE_UP") == {POLICY_MODULE, ASYNC_POLICY_MODULE}
