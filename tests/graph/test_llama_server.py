"""benchmarks/llama_server.py without llama-cpp-python: its chat formats, rendered as llama-cpp-python renders a
template (jinja2, sandboxed, trim_blocks and lstrip_blocks), and its request filter. The real server runs in
tests/system/test_real_model.py."""

from __future__ import annotations

import asyncio
import json

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from benchmarks.llama_server import FORMATS, chat_template, fixed_request, request_filter
from replangraph.llm.formats import read_text_calls

LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look up a city's population.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"city": "Lima"}'}}
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Population of Lima?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "Lima: 10,151,200"}]},
]


def render(name: str, messages: list[dict], tools: list[dict] | None = None) -> str:
    """The prompt llama-cpp-python's Jinja2ChatFormatter makes with format ``name``."""
    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    markers = FORMATS[name]
    return environment.from_string(chat_template(name)).render(
        messages=messages, tools=tools, bos_token=markers["bos"], eos_token=markers["END"], add_generation_prompt=True
    )


def test_chatml_keeps_the_system_text_tools_calls_and_results():
    assert render("chatml-tools", CONVERSATION, [LOOKUP]) == (
        "<|im_start|>system\nBe brief.\n\nYou can call these tools. To call one, answer with only a JSON object "
        '{"name": TOOL, "arguments": {ARGUMENTS}} and nothing else.\n'
        "- lookup: Look up a city's population. Arguments: city (string)<|im_end|>\n"
        "<|im_start|>user\nPopulation of Lima?<|im_end|>\n"
        '<|im_start|>assistant\n{"name": "lookup", "arguments": {"city": "Lima"}}<|im_end|>\n'
        "<|im_start|>user\nTool result:\nLima: 10,151,200<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_gemma_puts_the_system_text_in_the_first_user_turn():
    prompt = render("gemma-tools", CONVERSATION[:2])
    assert prompt == "<bos><start_of_turn>user\nBe brief.\n\nPopulation of Lima?<end_of_turn>\n<start_of_turn>model\n"
    assert render("gemma-tools", CONVERSATION[:1]).startswith("<bos><start_of_turn>user\nBe brief.<end_of_turn>\n")


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_call_written_as_the_prompt_asks_is_read_as_that_call(name):
    """The prompt's own example of a call, and the call as the template writes it back, are calls to replangraph."""
    prompt = render(name, CONVERSATION, [LOOKUP])
    written = prompt.split(FORMATS[name]["MODEL"])[1].split(FORMATS[name]["END"])[0]
    assert read_text_calls(written, ["lookup"]).calls[0]["args"] == {"city": "Lima"}
    assert "None" not in prompt  # content: null is no text


def test_fixed_request_sends_null_content_as_text_and_bounds_the_reply():
    body = {"model": "m", "messages": CONVERSATION}
    fixed = fixed_request(body, max_tokens=64)
    assert fixed["messages"][2] == {**CONVERSATION[2], "content": ""}
    assert fixed["messages"][:2] == CONVERSATION[:2] and fixed["max_tokens"] == 64
    assert fixed_request({**body, "max_tokens": 10})["max_tokens"] == 10
    assert body["messages"][2]["content"] is None  # the request itself is left as it was


def test_fixed_request_joins_a_system_message_s_text_parts():
    """LangChain's TodoListMiddleware sends the system prompt as a list of text parts; the server wants a string."""
    parts = [{"type": "text", "text": "You help. "}, {"type": "text", "text": "## `write_todos`"}]
    fixed = fixed_request({"messages": [{"role": "system", "content": parts}, *CONVERSATION[1:]]})
    assert fixed["messages"][0] == {"role": "system", "content": "You help. ## `write_todos`"}
    assert fixed["messages"][1:2] == CONVERSATION[1:2]  # a user's content blocks stay: the server takes those


def test_the_filter_passes_the_fixed_body_on():
    seen: dict = {}

    async def app(scope, receive, send):
        seen["headers"] = dict(scope["headers"])
        seen["body"] = (await receive())["body"]

    body = json.dumps({"messages": [{"role": "assistant", "content": None}]}).encode()
    parts = [
        {"type": "http.request", "body": body[:10], "more_body": True},
        {"type": "http.request", "body": body[10:]},
    ]

    async def receive():
        return parts.pop(0)

    scope = {"type": "http", "path": "/v1/chat/completions", "headers": [(b"content-length", b"999")]}
    asyncio.run(request_filter(app, max_tokens=32)(scope, receive, None))
    sent = json.loads(seen["body"])
    assert sent == {"messages": [{"role": "assistant", "content": ""}], "max_tokens": 32}
    assert seen["headers"][b"content-length"] == str(len(seen["body"])).encode()
