"""What a real OpenAI-compatible server shows (ChatOpenAI against the loopback server): every request carries its
output bound as the server honours it, a cut answer is marked as cut, an overflow error that names the window is
used, and the server's own token counts calibrate the estimate. The completion check is off: its requests are
another subject."""

from __future__ import annotations

import asyncio
import io
import json
import re
import socket
import warnings

import httpx
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openai_loopback import OpenAILoopback, request_usage, scripted_request

import replangraph.clock as process_clock
from replangraph import AgentConfig, build_graph
from replangraph.testing import ScriptedRequest, as_message, tool_call

GOAL = "Find the colour of flag 1 and of flag 2."


def two_subtasks(request: ScriptedRequest, cut: str = "") -> AIMessage | dict | str:
    """Plans a subtask per flag; a subtask reports its colour; the final answer lists what they found. The part
    named by ``cut`` (a subtask id, or ``final``) stops at the output bound."""
    if "Plan" in request.tool_names:
        tasks = [{"id": n, "content": f"Find the colour of flag {n}", "depends_on": []} for n in ("1", "2")]
        return tool_call("Plan", {"tasks": tasks})
    found = re.search(r"Your subtask \((\w+)\)", request.prompt)
    part = found.group(1) if found else "final"
    text = f"COLOUR {part}: teal" if found else "FINAL: " + ", ".join(re.findall(r"COLOUR \d: \w+", request.prompt))
    return AIMessage(text, response_metadata={"finish_reason": "length" if part == cut else "stop"})


def settings(**fields) -> AgentConfig:
    """The run's settings, the completion check off."""
    return AgentConfig(verify_results=False, **fields)


def run(server: OpenAILoopback, config: AgentConfig, goal: str = GOAL) -> tuple[dict, list[dict]]:
    model = ChatOpenAI(model="local", base_url=server.base_url, api_key="none", max_retries=0)
    graph = build_graph(model, config=config)
    events: list[dict] = []
    state = None
    for mode, chunk in graph.stream({"messages": [("user", goal)]}, stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk)
        else:
            state = chunk
    return state, events


def test_every_request_carries_its_output_bound_as_max_tokens():
    with OpenAILoopback(two_subtasks) as server:
        state, _ = run(server, settings(max_output_tokens=300))
    assert state["final_answer"] == "FINAL: COLOUR 1: teal, COLOUR 2: teal"
    assert len(server.requests) == 4  # planner, two subtasks, final answer
    assert all(body.get("max_tokens") == 300 and "max_completion_tokens" not in body for body in server.requests)
    with OpenAILoopback(two_subtasks) as server:
        run(server, settings(context_window=4_000))  # no bound set: the reserved output, a quarter of the window
    assert {body.get("max_tokens") for body in server.requests} == {1_000}


def test_a_cut_result_is_marked_in_the_result_an_event_and_the_final_answer():
    with OpenAILoopback(lambda request: two_subtasks(request, cut="2")) as server:
        state, events = run(server, settings(max_output_tokens=300))
    task = state["tasks"]["2"]
    assert task["status"] == "completed" and task["answer_cut"] is True
    assert (
        task["result"].startswith("COLOUR 2: teal") and "stopped at the model's output limit of 300" in task["result"]
    )
    assert "answer_cut" not in state["tasks"]["1"]
    assert [e for e in events if e["event"] == "answer_cut"] == [
        {"event": "answer_cut", "task_id": "2", "part": "result", "limit": 300}
    ]
    assert "the result of subtask(s) 2 stopped at the model's output limit" in state["final_answer"]


def test_a_cut_final_answer_says_so():
    with OpenAILoopback(lambda request: two_subtasks(request, cut="final")) as server:
        state, events = run(server, settings(max_output_tokens=300))
    assert state["final_answer"].startswith("FINAL: COLOUR 1: teal, COLOUR 2: teal")
    assert "[cut: this answer stopped at the model's output limit of 300 tokens" in state["final_answer"]
    assert {"event": "answer_cut", "task_id": None, "part": "final answer", "limit": 300} in events
    assert state["stop_reason"] == ""  # the model wrote it, cut or not


def test_results_longer_than_the_output_bound_are_answered_in_parts_each_within_it():
    def long_results(request: ScriptedRequest) -> AIMessage | dict | str:
        answer = two_subtasks(request)
        if "Your subtask" in request.prompt:  # about 400 tokens: two of them are more than one answer may hold
            return AIMessage(answer.text + " " + "shade " * 300)
        return answer

    with OpenAILoopback(long_results) as server:
        state, _ = run(server, settings(max_output_tokens=300))
    final_requests = [body for body in server.requests if not body.get("tools")]
    assert len(final_requests) > 1  # not one answer of 300 tokens asked to hold 800 tokens of results
    assert {body["max_tokens"] for body in final_requests} == {300}
    assert "COLOUR 1: teal" in state["final_answer"] and "COLOUR 2: teal" in state["final_answer"]


WINDOW = 3_000


class SmallWindowServer(OpenAILoopback):
    """A server whose window is `WINDOW` tokens (by the approximate count): a longer request is refused with
    OpenAI's and vLLM's wording, which names the window and the refused size."""

    def __init__(self):
        super().__init__(two_subtasks)
        self.sizes: list[int] = []

    def handle(self, handler) -> None:
        data = handler.rfile.read(int(handler.headers["Content-Length"]))
        body = json.loads(data)
        size = request_usage(list(scripted_request(body).messages), body.get("tools"), as_message(""))["prompt_tokens"]
        self.sizes.append(size)
        if size > WINDOW:
            message = (
                f"This model's maximum context length is {WINDOW} tokens. However, you requested "
                f"{size + 300} tokens ({size} in the messages, 300 in the completion)."
            )
            self.refuse(handler, 400, message)
            return
        handler.rfile = io.BytesIO(data)  # read again by the server's own handling
        super().handle(handler)


def test_an_overflow_error_naming_the_window_is_used_for_the_retry_and_the_rest_of_the_run():
    appendix = " ".join(f"note{n} about the flags" for n in range(1_200))  # about 7,500 tokens: over the window
    with SmallWindowServer() as server:
        state, _ = run(server, settings(max_output_tokens=200), goal=f"{GOAL}\n\nBackground: {appendix}")
    assert state["final_answer"] == "FINAL: COLOUR 1: teal, COLOUR 2: teal"
    assert len(server.errors) == 1  # the planner's first request; then every request fits the window it named
    assert all(size <= WINDOW for size in server.sizes[1:])
    assert all(t["status"] == "completed" for t in state["tasks"].values())


class AnswerRoomServer(SmallWindowServer):
    """A server whose `WINDOW` must hold the request and the answer it asks room for (``max_tokens``), as
    llama.cpp's and vLLM's do."""

    def handle(self, handler) -> None:
        data = handler.rfile.read(int(handler.headers["Content-Length"]))
        body = json.loads(data)
        size = request_usage(list(scripted_request(body).messages), body.get("tools"), as_message(""))["prompt_tokens"]
        asked = size + int(body.get("max_tokens") or 0)
        self.sizes.append(asked)
        if asked > WINDOW:
            message = (
                f"This model's maximum context length is {WINDOW} tokens. However, you requested {asked} tokens "
                f"({size} in the messages, {body.get('max_tokens')} in the completion)."
            )
            self.refuse(handler, 400, message)
            return
        handler.rfile = io.BytesIO(data)
        super(SmallWindowServer, self).handle(handler)


def test_after_an_overflow_every_call_asks_for_answer_room_within_the_window_it_named():
    with AnswerRoomServer() as server:
        state, _ = run(server, AgentConfig(), goal=GOAL)  # the default 8,000 tokens of answer room at first
    assert state["final_answer"] == "FINAL: COLOUR 1: teal, COLOUR 2: teal"
    assert len(server.errors) == 1  # the planner's first request; its retry and every later call fit
    assert {body.get("max_tokens") for body in server.requests} == {WINDOW // 4}
    assert all(t["status"] == "completed" and t.get("verdict") for t in state["tasks"].values())


def test_the_servers_own_token_counts_let_requests_that_fit_through():
    # The server counts 55 % of the approximate estimate (a small llama model's tokenizer). With a 1,024-token
    # window nothing was sent: the planner kept room for a retry bigger than its budget, and a subtask's opening
    # (about 920 tokens by the estimate, tool schemas included) is over the budget of 691. Now the planner's
    # request goes out, its reply's usage calibrates the estimate, and the subtasks fit.
    config = settings(context_window=1_024)
    with OpenAILoopback(two_subtasks, usage_scale=0.55) as server:
        state, _ = run(server, config)
    assert state["final_answer"] == "FINAL: COLOUR 1: teal, COLOUR 2: teal"
    assert len(server.requests) == 4
    with OpenAILoopback(two_subtasks, usage_scale=1.0) as server:  # a server that counts as the estimate does
        state, _ = run(server, config)
    assert "context window too small for this subtask" in (state["tasks"]["2"]["error"] or "")


def test_without_pausing_a_dead_server_is_named_in_the_report_not_a_limit(monkeypatch):
    monkeypatch.setattr("replangraph.clock.wait", lambda seconds: None)  # no backoff between the tries
    with socket.socket() as probe:  # a port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    model = ChatOpenAI(model="local", base_url=url, api_key="none", max_retries=0)
    state = build_graph(model, config=settings(max_replans=3)).invoke({"messages": [("user", GOAL)]})
    first_line = state["final_answer"].splitlines()[0]
    assert first_line.startswith("The run for this goal stopped before it was finished: the model server stopped")
    assert f"(the model server at {url} did not answer)" in first_line
    assert "max_replans" not in state["final_answer"] and state["stop_reason"].startswith("the model server")


@tool
def lookup(flag: str) -> str:
    """Look a flag up: a long record."""
    return f"flag {flag}: " + " ".join(f"field{n}=value{n}" for n in range(700))  # about 2,400 tokens


def looks_up_first(request: ScriptedRequest):
    """Like `two_subtasks`, but a subtask reads its flag's record before it answers."""
    found = re.search(r"Your subtask \((\w+)\)", request.prompt)
    if found and request.last_result("lookup") is None:
        return tool_call("lookup", {"flag": found.group(1)})
    return two_subtasks(request)


def test_an_overflow_in_a_subtask_teaches_the_window_and_the_compressor_fits_it():
    with SmallWindowServer() as server:
        server.responder = looks_up_first
        model = ChatOpenAI(model="local", base_url=server.base_url, api_key="none", max_retries=0)
        # one subtask at a time: what subtask 1's overflow taught fits subtask 2 from its first request
        graph = build_graph(model, [lookup], config=settings(max_output_tokens=200, max_concurrency=1))
        events, state = [], None
        for mode, chunk in graph.stream({"messages": [("user", GOAL)]}, stream_mode=["custom", "values"]):
            if mode == "custom":
                events.append(chunk)
            else:
                state = chunk
    assert state["final_answer"] == "FINAL: COLOUR 1: teal, COLOUR 2: teal"
    assert len(server.errors) == 1  # subtask 1's turn after the lookup; subtask 2 is fitted to the window at once
    assert graph.builder.nodes["executor"].runnable.func.monitor.context_window == WINDOW
    assert any(e["event"] == "context_compressed" for e in events)


SHOP = "fetch the prices from the shop"


def shop_down(request: ScriptedRequest) -> tuple[int, dict[str, str]] | None:
    """The server fails every request of the shop subtask (a 500, then a 429 asking for a short wait)."""
    if SHOP not in request.prompt:
        return None
    return (429, {"retry-after": "0.01"}) if "Colour" in request.prompt else (500, {"retry-after-ms": "1"})


@pytest.mark.parametrize("goal", ["Colour: " + SHOP, SHOP], ids=["429", "500"])
def test_a_default_chatopenai_sends_model_retries_plus_one_requests_per_failed_step(goal, monkeypatch):
    """One retry policy without the user doing anything: ChatOpenAI's own client retries twice by default,
    which stacked under replangraph's tries (9 requests a failed call on 0.8.0, with a warning only)."""
    waits: list[float] = []
    monkeypatch.setattr(process_clock, "wait", waits.append)  # replangraph's waits, as the server asked

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return tool_call("Plan", {"tasks": [{"id": "1", "content": goal, "depends_on": []}]})
        return "the report"

    with OpenAILoopback(respond, refusal=shop_down) as server:
        model = ChatOpenAI(model="local", base_url=server.base_url, api_key="none")  # max_retries not given
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing to warn about: the one policy is replangraph's
            graph = build_graph(model, config=settings(model_retries=2, single_agent_fallback=False))
        state = graph.invoke({"messages": [("user", "do it")]})
    sent = [json.dumps(body["messages"]) for body in server.requests]
    step = [text for text in sent if SHOP in text and "Your subtask (1)" in text]
    replanner = [text for text in sent if SHOP in text and "replanner" in text and text not in step]
    assert state["tasks"]["1"]["status"] == "failed" and state["tasks"]["1"]["model_calls"] == 3
    assert (len(step), len(replanner)) == (3, 3)  # model_retries + 1 a failed call; the step's counted in max_steps
    assert waits == [0.01 if goal.startswith("Colour") else 0.001] * 4  # Retry-After honoured, 2 a failed call


@pytest.mark.parametrize("retries", [2, 0])  # the client's own retries turned off, and left on
@pytest.mark.parametrize("awaited", [False, True])
def test_every_request_waits_no_longer_than_step_timeout_s(retries, awaited):
    """The OpenAI client's own timeout (ChatOpenAI's default: none) is capped at ``step_timeout_s`` for every call
    replangraph makes (planner, subtasks, final answer), so an abandoned call's thread ends with its step; a
    shorter timeout the user set stays, and without a step limit the client's own stands."""
    seen: list[tuple[float | None, float | None]] = []

    def note(request: httpx.Request) -> None:
        limits = request.extensions["timeout"]
        seen.append((limits["read"], limits["connect"]))

    async def anote(request: httpx.Request) -> None:
        note(request)

    def requests_with(step_s: float | None, **fields) -> list[tuple[float | None, float | None]]:
        seen.clear()
        clients = {"http_async_client": httpx.AsyncClient(event_hooks={"request": [anote]})} if awaited else {}
        clients.setdefault("http_client", httpx.Client(event_hooks={"request": [note]}))
        with OpenAILoopback(two_subtasks) as server:
            model = ChatOpenAI(model="local", base_url=server.base_url, api_key="none", **clients, **fields)
            graph = build_graph(model, config=settings(step_timeout_s=step_s, model_retries=retries))
            request = {"messages": [("user", GOAL)]}
            state = asyncio.run(graph.ainvoke(request)) if awaited else graph.invoke(request)
        assert state["final_answer"] == "FINAL: COLOUR 1: teal, COLOUR 2: teal"
        assert len(seen) == 4  # planner, two subtasks, final answer
        return list(seen)

    assert set(requests_with(7.0)) == {(7.0, 7.0)}
    assert set(requests_with(7.0, timeout=3.0)) == {(3.0, 3.0)}  # the user's shorter timeout
    assert set(requests_with(7.0, timeout=httpx.Timeout(30.0, connect=2.0))) == {(7.0, 2.0)}
    assert set(requests_with(None)) == {(None, None)}  # no step limit: ChatOpenAI's own (none)
