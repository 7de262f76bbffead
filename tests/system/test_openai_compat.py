"""`replangraph run` against an OpenAI-compatible server on loopback.

The fake server speaks the Chat Completions wire format, rejects requests that
break the provider's tool-message rules (as OpenAI does, with 400) and answers
with the demo's scripted responder. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cli_helpers import record_waits
from langchain_core.messages import AIMessage
from langchain_openai.chat_models.base import _convert_dict_to_message, _convert_message_to_dict
from openai_loopback import request_usage, tool_rule_violation

from replangraph.app import cli
from replangraph.app.demo import DEMO_GOAL, demo_responder, expected_products
from replangraph.testing import ScriptedRequest, as_message


class FakeOpenAI(BaseHTTPRequestHandler):
    requests: list[dict] = []
    tokens: list[int] = []
    """The ``total_tokens`` of each answer, as its ``usage`` reported them."""
    failures: list[tuple[int, dict]] = []
    """(status, headers) answered to the next requests, before normal answers resume."""
    responder = staticmethod(demo_responder)
    context_chars: int | None = None
    """Requests whose messages hold more characters are refused as OpenAI refuses an over-long prompt."""

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeOpenAI.requests.append(body)
        if FakeOpenAI.failures:
            status, headers = FakeOpenAI.failures.pop(0)
            self.reply(status, {"error": {"message": f"fake {status}", "type": "server_error"}}, headers)
            return
        size = sum(len(json.dumps(m)) for m in body["messages"])
        if FakeOpenAI.context_chars is not None and size > FakeOpenAI.context_chars:
            error = {
                "message": f"This model's maximum context length is {FakeOpenAI.context_chars // 4} tokens. "
                f"However, your messages resulted in {size // 4} tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
            self.reply(400, {"error": error})
            return
        problem = tool_rule_violation(body["messages"])
        if problem:
            self.reply(400, {"error": {"message": problem, "type": "invalid_request_error"}})
            return
        messages = [_convert_dict_to_message(m) for m in body["messages"]]
        names = tuple(t["function"]["name"] for t in body.get("tools", []))
        answer: AIMessage = as_message(FakeOpenAI.responder(ScriptedRequest(messages=messages, tool_names=names)))
        message = _convert_message_to_dict(answer)
        message.setdefault("content", None)
        finish = "tool_calls" if answer.tool_calls else "stop"
        usage = request_usage(messages, body.get("tools"), answer)
        FakeOpenAI.tokens.append(usage["total_tokens"])
        self.reply(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            },
        )

    def reply(self, status: int, payload: dict, headers: dict | None = None):
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def fake_openai(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeOpenAI.requests = []
    FakeOpenAI.tokens = []
    FakeOpenAI.failures = []
    FakeOpenAI.context_chars = None
    FakeOpenAI.responder = staticmethod(demo_responder)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_port}/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("REPLANGRAPH_MODEL", "fake-model")
    yield FakeOpenAI.requests
    server.shutdown()


def test_rule_checker_catches_unanswered_calls():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assert tool_rule_violation([{"role": "assistant", "tool_calls": [call]}, {"role": "user", "content": "x"}])
    assert tool_rule_violation([{"role": "tool", "tool_call_id": "zz", "content": "x"}])


@pytest.mark.system
def test_run_command_through_an_openai_compatible_server(fake_openai):
    out = io.StringIO()
    assert cli.main(["run", DEMO_GOAL, "--tools", "replangraph.app.demo:read_ranking"], out=out) == 0
    text = out.getvalue()
    answer = text.split("Final answer:", 1)[1]
    assert all(name in answer for name in expected_products(19))
    assert "1 handed off work: added 1_dyn_0, 1_dyn_1, 1_dyn_2" in text
    assert {r["model"] for r in fake_openai} == {"fake-model"}
    plan_requests = [r for r in fake_openai if any(t["function"]["name"] == "Plan" for t in r.get("tools", []))]
    assert len(plan_requests) == 1
    assert len(fake_openai) > 8  # planner, several executor turns, final answer


@pytest.mark.system
def test_run_rejects_a_bad_tools_spec(fake_openai, capsys):
    assert cli.main(["run", "goal", "--tools", "replangraph.app.demo"]) == 2
    err = capsys.readouterr().err
    assert "'replangraph.app.demo'" in err and "MODULE:ATTR" in err.upper()
    assert cli.main(["run", "goal", "--tools", "replangraph.app.demo:nope"]) == 2
    err = capsys.readouterr().err
    assert "'replangraph.app.demo:nope'" in err and "nope" in err.split("demo:nope", 1)[1]
    assert fake_openai == []  # nothing was sent


@pytest.mark.system
def test_a_rate_limit_window_is_waited_out_with_one_retry_policy(fake_openai, monkeypatch):
    """The client does not retry on its own: each 429 costs one request, and Retry-After is honoured."""
    FakeOpenAI.failures = [(429, {"retry-after": "0.3"}), (429, {"retry-after": "0.3"})]
    out = io.StringIO()
    waits = record_waits(monkeypatch)
    assert cli.main(["run", DEMO_GOAL, "--tools", "replangraph.app.demo:read_ranking"], out=out) == 0
    assert waits == [0.3, 0.3]  # the server's 0.3 s twice, not the 1 s + 2 s backoff
    plan_requests = [r for r in fake_openai if any(t["function"]["name"] == "Plan" for t in r.get("tools", []))]
    assert len(plan_requests) == 3  # two refused, one answered: no stacked client retries
    assert all(name in out.getvalue().split("Final answer:", 1)[1] for name in expected_products(19))


@pytest.mark.system
def test_a_server_that_stays_down_costs_three_requests_per_call_not_nine(fake_openai):
    FakeOpenAI.failures = [(503, {"retry-after": "0"})] * 100
    out = io.StringIO()
    cli.main(["run", "anything at all"], out=out)
    # planner: 3 requests, executor: 3, replanner: 3 (then it gives up); no single-agent fallback (the
    # model did not answer the replanner either), and the final report needs no model
    assert len(fake_openai) == 9
    assert "The run for this goal stopped" in out.getvalue()


@pytest.mark.system
def test_run_with_the_completion_check(fake_openai):
    out = io.StringIO()
    assert cli.main(["run", DEMO_GOAL, "--tools", "replangraph.app.demo:read_ranking", "--verify"], out=out) == 0
    assert out.getvalue().count("checked: complete (every rank is there)") == 3
    assert out.getvalue().count("goal checked against every result: covered") == 1
    verdicts = [r for r in fake_openai if any(t["function"]["name"] == "Verdict" for t in r.get("tools", []))]
    assert len(verdicts) == 4  # the three follow-ups end with answers (the first subtask handed off); the goal


@pytest.mark.system
def test_a_prompt_the_server_finds_too_long_is_compressed_and_sent_again(fake_openai):
    """OpenAI's 400 context_length_exceeded (its code in the body, not in the message) is recognised,
    the window is compressed, and the step goes on with nothing lost."""
    from langchain_openai import ChatOpenAI
    from test_lossless_runs import catalog, codes, faithful

    from replangraph import AgentConfig, build_graph

    FakeOpenAI.responder = staticmethod(faithful("read all 30 products and list every code"))
    FakeOpenAI.context_chars = 24_000
    model = ChatOpenAI(model="fake-model", api_key="none", max_retries=0)
    config = AgentConfig(max_step_iterations=40)  # the window we assume (200k) is far larger than the server's
    state = build_graph(model, tools=[catalog(30, filler=1_000)], config=config).invoke(
        {"messages": [("user", "read all products")]}
    )
    sizes = [sum(len(json.dumps(m)) for m in r["messages"]) for r in fake_openai]
    assert any(size > 24_000 for size in sizes)  # refused at least once
    assert state["tasks"]["1"]["status"] == "completed"
    assert codes(state["final_answer"]) == [f"P-{n}" for n in range(1, 31)]
