"""An OpenAI-compatible Chat Completions server on 127.0.0.1 for tests; nothing leaves the machine.

Each reply is ``responder(ScriptedRequest)``: chosen from the request's content (its messages
and the names of its tools), never from the order of the calls, so runs stay deterministic.
It answers ``POST /v1/chat/completions`` as JSON, or as server-sent chunks when the request
says ``"stream": true`` (ChatOpenAI streams when a LangGraph run streams in ``messages`` mode).
A request that breaks the provider's tool-message rules is refused with 400, as OpenAI does;
so is one the responder cannot answer (its error is kept in ``errors``), which the client does
not retry, so a test fails at once instead of waiting through backoff.
Its ``usage`` is the approximate token count of the request, times ``usage_scale`` (a server whose
tokenizer counts fewer tokens than the client's estimate); a responder's reply may set
``response_metadata={"finish_reason": "length"}`` (an answer cut at its output bound).
``refusal(ScriptedRequest)`` may answer a request with an error status instead, as ``(status, headers)``
(a server that is down, or rate limits, for the requests it names); None lets the responder answer.
``GET /v1/models`` lists ``models`` (with ``models_status`` other than 200, it answers that
status instead, as a server that refuses the key answers 401).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from langchain_core.messages import AIMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_openai.chat_models.base import _convert_dict_to_message, _convert_message_to_dict

from replangraph.testing import Reply, ScriptedRequest, as_message

Responder = Callable[[ScriptedRequest], Reply]
Refusal = Callable[[ScriptedRequest], "tuple[int, dict[str, str]] | None"]
CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"


def request_usage(messages: list, tools: list | None, answer: AIMessage) -> dict:
    """``usage`` as a server reports it, from the approximate counts: a client's calibration from it leaves
    its counter as it is (`OpenAILoopback.usage_scale` makes the server count differently)."""
    prompt = count_tokens_approximately(messages, tools=tools or None)
    completion = count_tokens_approximately([answer])
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def tool_rule_violation(messages: list[dict]) -> str | None:
    """What OpenAI would reject: tool messages without a call, calls left unanswered."""
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            if message.get("tool_call_id") not in open_calls:
                return f"tool message {message.get('tool_call_id')} answers no open tool call"
            open_calls.discard(message["tool_call_id"])
            continue
        if open_calls:
            return f"tool calls {sorted(open_calls)} were not answered"
        if message["role"] == "assistant":
            open_calls = {c["id"] for c in message.get("tool_calls") or []}
    return None


def scripted_request(body: dict) -> ScriptedRequest:
    """The request as a responder sees it: LangChain messages and the names of the offered tools."""
    messages = [_convert_dict_to_message(m) for m in body["messages"]]
    names = tuple(t["function"]["name"] for t in body.get("tools") or [])
    return ScriptedRequest(messages=messages, tool_names=names)


def completion(body: dict, answer: AIMessage, usage: dict) -> dict:
    """A ``chat.completion`` object holding ``answer``."""
    message = _convert_message_to_dict(answer)
    message.setdefault("content", None)
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(answer)}],
        "usage": usage,
    }


def finish_reason(answer: AIMessage) -> str:
    """The answer's own ``finish_reason`` when the responder set one (``length``: cut), else as OpenAI says."""
    given = (answer.response_metadata or {}).get("finish_reason")
    return given or ("tool_calls" if answer.tool_calls else "stop")


def chunk(body: dict, choices: list[dict], **extra: object) -> dict:
    """One ``chat.completion.chunk`` object."""
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": body["model"],
        "choices": choices,
        **extra,
    }


def chunks(body: dict, answer: AIMessage, usage: dict, piece: int = 8) -> Iterator[dict]:
    """The chunks that stream ``answer``: the text in pieces of ``piece`` characters, then each tool
    call (id and name first, its arguments in pieces), then the finish reason, then the usage when
    ``stream_options.include_usage`` asks for it."""

    def delta(fields: dict, finish: str | None = None) -> dict:
        return chunk(body, [{"index": 0, "delta": fields, "finish_reason": finish}])

    yield delta({"role": "assistant", "content": ""})
    text = answer.content if isinstance(answer.content, str) else ""
    for start in range(0, len(text), piece):
        yield delta({"content": text[start : start + piece]})
    for index, call in enumerate(answer.tool_calls):
        head = {"name": call["name"], "arguments": ""}
        yield delta({"tool_calls": [{"index": index, "id": call["id"], "type": "function", "function": head}]})
        arguments = json.dumps(call["args"])
        for start in range(0, len(arguments), piece):
            part = {"index": index, "function": {"arguments": arguments[start : start + piece]}}
            yield delta({"tool_calls": [part]})
    yield delta({}, finish_reason(answer))
    if (body.get("stream_options") or {}).get("include_usage"):
        yield chunk(body, [], usage=usage)


class OpenAILoopback:
    """The server; use it as a context manager. ``base_url`` is what ``OPENAI_BASE_URL`` takes.

    ``requests`` holds every request body received, in arrival order (for assertions, never
    for choosing replies); ``errors`` what was refused and why; ``gets`` the paths asked with GET.
    """

    def __init__(
        self,
        responder: Responder,
        models: Sequence[str] = (),
        models_status: int = 200,
        usage_scale: float = 1.0,
        port: int = 0,
        refusal: Refusal | None = None,
    ):
        self.responder = responder
        self.refusal = refusal
        self.usage_scale = usage_scale
        self.models = list(models)
        self.models_status = models_status
        self.requests: list[dict] = []
        self.errors: list[str] = []
        self.gets: list[str] = []
        self._lock = threading.Lock()
        loopback = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                loopback.handle(self)

            def do_GET(self) -> None:
                loopback.handle_get(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)  # port 0: a free one
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="openai-loopback", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def __enter__(self) -> OpenAILoopback:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def refuse(self, handler: BaseHTTPRequestHandler, status: int, problem: str) -> None:
        with self._lock:
            self.errors.append(problem)
        payload = {"error": {"message": problem, "type": "invalid_request_error"}}
        self.send(handler, status, json.dumps(payload).encode(), "application/json")

    def handle_get(self, handler: BaseHTTPRequestHandler) -> None:
        """``GET /v1/models``: the model list, or ``models_status``; any other path is not found."""
        with self._lock:
            self.gets.append(handler.path)
        if urlsplit(handler.path).path.rstrip("/") != MODELS_PATH:  # a query string is the server's to read
            status, payload = 404, {"error": {"message": f"unknown path {handler.path}"}}
        elif self.models_status != 200:
            status, payload = self.models_status, {"error": {"message": f"HTTP {self.models_status}"}}
        else:
            status, payload = 200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]}
        self.send(handler, status, json.dumps(payload).encode(), "application/json")

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        if urlsplit(handler.path).path.rstrip("/") != CHAT_PATH:
            self.refuse(handler, 404, f"unknown path {handler.path}")
            return
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        with self._lock:
            self.requests.append(body)
        problem = tool_rule_violation(body["messages"])
        if problem:
            self.refuse(handler, 400, problem)
            return
        refused = self.refusal(scripted_request(body)) if self.refusal else None
        if refused is not None:
            status, headers = refused
            payload = json.dumps({"error": {"message": f"HTTP {status}", "type": "server_error"}}).encode()
            self.send(handler, status, payload, "application/json", headers)
            return
        try:
            answer = as_message(self.responder(scripted_request(body)))
        except Exception as exc:  # the script has no answer: fail the call, visibly
            self.refuse(handler, 400, f"the responder failed: {type(exc).__name__}: {exc}")
            return
        request = scripted_request(body)
        usage = request_usage(list(request.messages), body.get("tools"), answer)
        usage["prompt_tokens"] = round(usage["prompt_tokens"] * self.usage_scale)
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if body.get("stream"):
            events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks(body, answer, usage)) + "data: [DONE]\n\n"
            self.send(handler, 200, events.encode(), "text/event-stream")
        else:
            self.send(handler, 200, json.dumps(completion(body, answer, usage)).encode(), "application/json")

    @staticmethod
    def send(
        handler: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str, headers: dict | None = None
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
