"""The limits every model call keeps: its output bound (in the form the endpoint honours), cut answers, the window
an overflow error names, and a server that stopped answering."""

from __future__ import annotations

import threading

import httpx
import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel
from steps import returned

import replangraph.clock as process_clock
from replangraph import AgentConfig, ModelServerDown
from replangraph.context.window_monitor import CALIBRATION_WEIGHT, ContextMonitor, approximate_tokens
from replangraph.llm import calls
from replangraph.llm.answers import bind_schema, was_cut
from replangraph.llm.bounds import (
    bounded,
    capped_timeout,
    client_retries,
    output_bound,
    output_limit,
    stacked_retries,
    with_output_bound,
)
from replangraph.llm.calls import call_model, run_steps
from replangraph.llm.errors import StepTimeout, is_server_down, overflow_sizes
from replangraph.llm.overflow import OVERFLOW_SHRINK, refit_steps
from replangraph.testing import ScriptedChatModel

CONFIG = AgentConfig(retry_backoff_s=0)


def refitted(fitted, **options):
    """`refit_steps` driven by `run_steps`, ``fitted(share)`` a plain function (one try's outcome)."""
    return run_steps(refit_steps(lambda share: returned(fitted(share)), **options))


def openai_at(url: str | None, **fields) -> ChatOpenAI:
    return ChatOpenAI(model="m", api_key="k", base_url=url, max_retries=0, **fields)


def test_the_output_limit_is_max_output_tokens_else_the_reserved_output_within_a_quarter_of_the_window():
    assert output_limit(AgentConfig(), None) == 8_000
    assert output_limit(AgentConfig(context_window=1024), None) == 256
    assert output_limit(AgentConfig(context_window=1024, max_output_tokens=100), None) == 100
    assert output_limit(AgentConfig(reserved_output=0), None) is None


def test_the_output_limit_is_within_a_quarter_of_the_window_the_model_is_known_to_have():
    monitor = ContextMonitor(AgentConfig())
    assert output_limit(AgentConfig(), monitor) == 8_000
    monitor.learn_overflow("maximum context length is 8192 tokens")
    assert output_limit(AgentConfig(), monitor) == 2_048  # a prompt of 1,500 tokens and the answer fit 8,192
    assert output_limit(AgentConfig(max_output_tokens=300), monitor) == 300
    profiled = openai_at("http://h/v1")
    profiled.profile = {"max_input_tokens": 4_000}
    assert output_limit(AgentConfig(), monitor.for_model(profiled)) == 1_000


def test_chatopenai_against_another_server_gets_max_tokens_in_extra_body(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    local = openai_at("http://127.0.0.1:8080/v1", extra_body={"top_k": 20})
    assert output_bound(local, 256) == {"extra_body": {"top_k": 20, "max_tokens": 256}}
    payload = bounded(local, 256)._get_request_payload([HumanMessage("hi")])
    assert payload["extra_body"] == {"top_k": 20, "max_tokens": 256}
    assert "max_completion_tokens" not in payload  # what llama.cpp's server ignores
    # OpenAI itself: the field, which langchain-openai sends as max_completion_tokens.
    hosted = openai_at(None)
    assert output_bound(hosted, 256) == {"max_tokens": 256}
    assert bounded(hosted, 256)._get_request_payload([HumanMessage("hi")])["max_completion_tokens"] == 256


def test_a_smaller_bound_set_on_the_model_stays_and_the_profile_caps_it(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert output_bound(openai_at(None, max_tokens=100), 256) == {"max_tokens": 100}
    assert output_bound(openai_at("http://h/v1", extra_body={"max_tokens": 50}), 256)["extra_body"]["max_tokens"] == 50
    capped = openai_at(None)
    capped.profile = {"max_output_tokens": 64}
    assert output_bound(capped, 256) == {"max_tokens": 64}


def test_a_model_without_a_bound_field_is_left_as_it_is_and_copies_are_reused(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    scripted = ScriptedChatModel(respond=lambda request: "ok")
    assert bounded(scripted, 10) is scripted
    model = openai_at("http://h/v1")
    assert bounded(model, 10) is bounded(model, 10) is not model
    tooled = model.bind_tools([{"type": "function", "function": {"name": "f", "parameters": {}}}])
    assert with_output_bound(tooled, 10).bound is bounded(model, 10)
    assert with_output_bound(model, None) is model


def test_an_openai_client_that_retries_is_copied_quiet_keeping_its_settings(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = ChatOpenAI(model="m", api_key="k", base_url="http://h/v1", timeout=7, default_headers={"X-A": "1"})
    assert client_retries(model) == 2 and stacked_retries(model) == 0  # the client's default; it can be quieted
    quiet = bounded(model, None, client_retries=False)
    assert quiet is bounded(model, None, client_retries=False) is not model
    assert model.root_client.max_retries == model.root_async_client.max_retries == 2  # the user's model unchanged
    for client in (quiet.root_client, quiet.root_async_client):
        assert client.max_retries == 0 and str(client.base_url) == "http://h/v1/" and client.timeout == 7
        assert client.api_key == "k" and client.default_headers["X-A"] == "1"
    assert quiet.client._client is quiet.root_client and quiet.async_client._client is quiet.root_async_client
    assert quiet.root_client._client is model.root_client._client  # the same connection pool
    assert with_output_bound(model, 10, client_retries=False).root_client.max_retries == 0
    already = openai_at("http://h/v1")
    assert bounded(already, None, client_retries=False) is already  # a client that does not retry: itself
    scripted = ScriptedChatModel(respond=lambda request: "ok")
    assert bounded(scripted, None, client_retries=False) is scripted


class Answer(BaseModel):
    text: str


def test_a_schema_bound_model_is_asked_bounded(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = openai_at("http://h/v1")
    structured = bind_schema(model, Answer)
    assert with_output_bound(structured, 32).model is bounded(model, 32)
    assert with_output_bound(structured, 32) is with_output_bound(structured, 32)


def test_cut_answers_are_told_by_their_finish_or_stop_reason():
    assert was_cut(AIMessage("a", response_metadata={"finish_reason": "length"}))
    assert was_cut(AIMessage("a", response_metadata={"stop_reason": "max_tokens"}))  # Anthropic
    assert was_cut(AIMessage("a", response_metadata={"finish_reason": "MAX_TOKENS"}))  # Gemini
    assert was_cut({"raw": AIMessage("a", response_metadata={"finish_reason": "length"}), "parsed": None})
    assert not was_cut(AIMessage("a", response_metadata={"finish_reason": "stop"}))
    assert not was_cut(AIMessage("a"))


@pytest.mark.parametrize(
    ("message", "sizes"),
    [
        (
            "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
            "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages.",
            (4096, 4000),
        ),
        (
            "This model's maximum context length is 8,192 tokens. However, your messages resulted in 9,001 tokens.",
            (8192, 9001),
        ),
        ("the request exceeds the available context size (1024 tokens), try increasing it", (1024, None)),
        ("request (1500 tokens) exceeds the available context size (1024 tokens)", (1024, 1500)),
        ("Requested tokens (1500) exceed context window of 1024", (1024, 1500)),
        ("prompt is too long: 250000 tokens > 200000 maximum", (200000, 250000)),
        ("The prompt (length 5000) is longer than the maximum model length of 4096.", (4096, 5000)),
        ("context length exceeded", (None, None)),
    ],
)
def test_overflow_errors_name_the_window_and_the_refused_size(message, sizes):
    assert overflow_sizes(ContextOverflowError(message)) == sizes


def test_a_learned_window_refits_to_the_whole_budget_else_to_a_share():
    monitor = ContextMonitor(AgentConfig())
    shares: list[float] = []

    def fitted(share: float) -> str:
        shares.append(share)
        if len(shares) == 1:
            raise ContextOverflowError("maximum context length is 1024 tokens. However, you requested 2000 tokens")
        return "ok"

    assert refitted(fitted, learn=monitor.learn_overflow) == ["ok"]
    assert shares == [1.0, 1.0]  # the second fit is against the window the error named
    assert monitor.context_window == 1024 and monitor.budget == int((1024 - 256) * 0.9)
    shares.clear()
    assert refitted(fitted, learn=monitor.learn_overflow) == ["ok"]
    assert shares == [1.0, OVERFLOW_SHRINK]  # nothing new learned: half the budget, as before


def test_what_an_endpoint_tells_is_kept_for_its_model_only():
    executor = ContextMonitor(AgentConfig(), openai_at("http://small/v1"))
    planner = executor.for_model(openai_at("http://big/v1"))
    twin = executor.for_model(openai_at("http://small/v1"))  # another object for the same model and server
    scripted = executor.for_model(ScriptedChatModel(respond=lambda request: "ok"))
    request = [HumanMessage("word " * 400)]
    estimate = approximate_tokens(request)
    executor.learn_overflow("maximum context length is 8192 tokens")
    planner.observe(request, (), AIMessage("x", usage_metadata=usage(int(estimate * 0.55))))
    assert executor.context_window == twin.context_window == 8192 and executor.tokens(request) == estimate
    assert planner.context_window == scripted.context_window == 200_000
    assert planner.tokens(request) == pytest.approx(estimate * 0.55, abs=2) and scripted.tokens(request) == estimate
    assert executor.for_model(None) is executor.for_model(executor.model) is executor


def test_calibration_is_a_running_ratio_that_a_close_count_nudges_and_a_users_counter_is_never_scaled():
    monitor = ContextMonitor(AgentConfig())
    request = [HumanMessage("word " * 400)]
    estimate = approximate_tokens(request)
    monitor.observe(request, (), AIMessage("x", usage_metadata=usage(int(estimate * 0.55))))
    assert monitor.learned.ratio == pytest.approx(0.55, abs=0.01)
    assert monitor.tokens(request) == pytest.approx(estimate * 0.55, abs=2)
    # A parallel reply that agrees within 10 % moves the ratio a quarter of the way, not back to nothing.
    monitor.observe(request, (), AIMessage("x", usage_metadata=usage(int(estimate * 1.05))))
    assert monitor.learned.ratio == pytest.approx(0.55 + 0.5 * CALIBRATION_WEIGHT, abs=0.01)
    for _ in range(20):  # an endpoint that keeps agreeing: the estimate is left as it is
        monitor.observe(request, (), AIMessage("x", usage_metadata=usage(estimate)))
    assert monitor.learned.scale is None and monitor.tokens(request) == estimate
    exact = ContextMonitor(AgentConfig(), counter=lambda messages, tools: 7)
    exact.observe(request, (), AIMessage("x", usage_metadata=usage(1)))
    assert exact.tokens(request) == 7


def test_parallel_overflows_keep_the_smallest_window():
    monitor = ContextMonitor(AgentConfig())
    windows = [8192, 4096, 16384, 2048, 32768] * 4
    threads = [
        threading.Thread(target=monitor.learn_overflow, args=(f"maximum context length is {w} tokens",))
        for w in windows
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert monitor.context_window == 2048


def usage(input_tokens: int) -> dict:
    return {"input_tokens": input_tokens, "output_tokens": 1, "total_tokens": input_tokens + 1}


class Down:
    """A model whose server never answers."""

    def __init__(self, exc: Exception):
        self.exc = exc
        self.calls = 0

    def invoke(self, request, config=None):
        self.calls += 1
        raise self.exc


def test_a_server_that_stops_answering_pauses_the_run_only_when_asked():
    down = Down(ConnectionError("connection refused"))
    called = call_model(down, "q", CONFIG)
    assert called.unanswered and down.calls == 3  # recorded, as before
    with pytest.raises(ModelServerDown, match="stopped answering"):
        call_model(down, "q", CONFIG.model_copy(update={"pause_when_model_down": True}))
    assert down.calls == 6  # after every retry


def test_only_an_unanswered_request_counts_as_the_server_down():
    assert is_server_down(ConnectionError("refused"))
    assert not is_server_down(StepTimeout("slow"))  # the step's own limit: the model answered too slowly
    assert not is_server_down(ValueError("rate limited"))


def test_calls_outside_a_subtask_are_timed_by_step_timeout(monkeypatch):
    seen: list[float | None] = []
    monkeypatch.setattr(process_clock, "now", lambda: 1_000.0)
    monkeypatch.setattr(
        calls, "attempt", lambda call, config, deadline=None, **_: seen.append(deadline) or calls.Called("ok", 1)
    )
    call_model(Down(ValueError()), "q", AgentConfig(step_timeout_s=30))
    call_model(Down(ValueError()), "q", AgentConfig(step_timeout_s=None))
    assert seen == [1_030.0, None]


def test_an_openai_clients_timeout_is_capped_at_the_calls_time_a_shorter_one_kept(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = openai_at("http://h/v1")  # ChatOpenAI's default: no timeout at all
    assert model.root_client.timeout is None
    timed = bounded(model, None, timeout_s=2.0)
    assert timed is bounded(model, None, timeout_s=2.0) is not bounded(model, None, timeout_s=3.0)  # keyed by it
    assert timed.root_client.timeout == timed.root_async_client.timeout == 2.0
    assert timed.client._client is timed.root_client and timed.async_client._client is timed.root_async_client
    assert timed.root_client._client is model.root_client._client and timed.root_client.max_retries == 0
    assert model.root_client.timeout is None  # the user's model unchanged
    assert bounded(model, None, timeout_s=None) is model
    shorter = openai_at("http://h/v1", timeout=1.5)
    assert bounded(shorter, None, timeout_s=2.0) is shorter  # nothing to change
    parts = openai_at("http://h/v1", timeout=httpx.Timeout(30.0, connect=1.0))
    assert bounded(parts, None, timeout_s=2.0).root_client.timeout == httpx.Timeout(2.0, connect=1.0)
    both = bounded(ChatOpenAI(model="m", api_key="k", base_url="http://h/v1"), 10, False, 2.0)
    assert both.root_client.max_retries == 0 and both.root_client.timeout == 2.0 and both.max_retries == 0
    structured = bind_schema(model, Answer)
    assert with_output_bound(structured, None, timeout_s=2.0).model is timed
    tooled = model.bind_tools([{"type": "function", "function": {"name": "f", "parameters": {}}}])
    assert with_output_bound(tooled, None, timeout_s=2.0).bound is timed
    assert capped_timeout(None, 2.0) == capped_timeout(600, 2.0) == 2.0 and capped_timeout(0.5, 2.0) == 0.5
    assert capped_timeout((1, 2), 2.0) == 2.0  # a form it does not know: the limit


def test_call_model_asks_a_copy_whose_client_waits_at_most_step_timeout_s(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    asked = []
    model = openai_at("http://h/v1")
    monkeypatch.setattr(type(model), "invoke", lambda self, *args, **kwargs: asked.append(self) or AIMessage("ok"))
    assert call_model(model, [HumanMessage("hi")], AgentConfig(step_timeout_s=3)).reply.content == "ok"
    assert call_model(model, [HumanMessage("hi")], AgentConfig(step_timeout_s=None)).reply.content == "ok"
    assert [m.root_client.timeout for m in asked] == [3, None]


def test_a_step_clock_reads_the_clock_its_host_sets():
    import contextvars

    from replangraph.hosting import step_clock
    from replangraph.llm.time_limits import StepClock

    now = [100.0]

    def timed() -> tuple[float, float | None]:
        step_clock.set(lambda: now[0])  # what a host that replays code sets (Temporal: the workflow's time)
        clock = StepClock(spent_s=2.0, limit_s=10.0)
        now[0] += 3.0
        return clock.elapsed(), clock.left()

    assert contextvars.copy_context().run(timed) == (5.0, 5.0)
    assert step_clock.get() is None  # set in that context only: other code keeps time.monotonic
