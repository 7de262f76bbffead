"""Serve a GGUF model with llama-cpp-python's OpenAI-compatible server, its tool-calling quirks worked around.

    python -m benchmarks.llama_server --model SmolLM2-135M-Instruct.Q4_1.gguf --model_alias smollm2-135m \\
        --host 127.0.0.1 --port 8000 --n_ctx 8192

Every option of ``python -m llama_cpp.server`` is accepted (``pip install "replangraph[local]"``). Two things
differ from that command, both at the server, none in replangraph:

- The chat format defaults to ``chatml-tools`` (``--chat_format gemma-tools`` for Gemma 3), made from
  `TOOLS_TEMPLATE`. The server's own formats show the model the request's tools only when ``tool_choice``
  names one; a model's own template (SmolLM2's) fails on list content and has no tool turns; the ``gemma``
  format drops system messages and tool results; a GGUF without a template (Gemma 3 270M from PyPI) falls
  back to llama-2's turns. These formats put the system text and the tools, with how to call one as
  ``{"name": ..., "arguments": {...}}`` (which replangraph reads as that call), before the first turn, and
  tool calls and results in the turns. A request whose ``tool_choice`` names a tool still gets the server's
  grammar, so structured output (the plan) stays JSON.
- A filter in front of the server (`request_filter`) passes an assistant message's ``"content": null``
  (how ChatOpenAI sends a tool-call turn, which the server refuses with HTTP 500) on as ``""``, a system
  message's list of text parts (how LangChain's ``TodoListMiddleware`` sends its prompt, refused too) as
  one string, and gives a
  request without ``max_tokens`` 512 (``--default_max_tokens``): the server's default is the whole window,
  and a small model that repeats itself would write until it is full.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

TOOLS_TEMPLATE = """{{ bos_token }}
{%- macro text(content) -%}
{%- if content is string -%}{{ content }}
{%- elif content -%}{% for part in content %}{% if part.text %}{{ part.text }}{% endif %}{% endfor %}
{%- endif -%}
{%- endmacro -%}
{%- set ns = namespace(preamble="") -%}
{%- for message in messages if message.role == "system" -%}
{%- set ns.preamble = ns.preamble + text(message.content) + "\\n\\n" -%}
{%- endfor -%}
{%- if tools -%}
{%- set ns.preamble = ns.preamble + "You can call these tools. To call one, answer with only a JSON object "
    + "{\\"name\\": TOOL, \\"arguments\\": {ARGUMENTS}} and nothing else.\\n" -%}
{%- for tool in tools -%}
{%- set ns.preamble = ns.preamble + "- " + tool.function.name + ": " + (tool.function.description or "") -%}
{%- set props = (tool.function.parameters or {}).get("properties") or {} -%}
{%- if props -%}
{%- set ns.preamble = ns.preamble + " Arguments:" -%}
{%- for name, spec in props.items() -%}
{%- set ns.preamble = ns.preamble + " " + name + " (" + (spec.type or "any") | string + ")" -%}
{%- endfor -%}
{%- endif -%}
{%- set ns.preamble = ns.preamble + "\\n" -%}
{%- endfor -%}
{%- set ns.preamble = ns.preamble + "\\n" -%}
{%- endif -%}
{%- if SYSTEM and ns.preamble -%}
SYSTEM{{ ns.preamble | trim }}END
{% set ns.preamble = "" -%}
{%- endif -%}
{%- for message in messages if message.role != "system" -%}
{%- if message.role == "assistant" -%}
MODEL{{ text(message.content) }}
{%- for call in message.tool_calls or [] -%}
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments }}}
{%- endfor -%}
END
{% elif message.role == "tool" -%}
USERTool result:
{{ text(message.content) }}END
{% else -%}
USER{{ ns.preamble }}{{ text(message.content) }}END
{% set ns.preamble = "" -%}
{%- endif -%}
{%- endfor -%}
{%- if ns.preamble -%}
USER{{ ns.preamble | trim }}END
{% endif -%}
MODEL{{ "" }}"""
"""A chat template that shows the model what the stock formats drop: system text, the request's tools (with how
to call one as JSON text), tool calls and tool results (as user turns). SYSTEM, USER, MODEL and END are each
format's turn markers (`FORMATS`); without a system turn, the system text opens the first user turn."""

FORMATS: dict[str, dict[str, str]] = {
    "chatml-tools": {  # SmolLM2, Qwen2.5 and other ChatML models
        "SYSTEM": "<|im_start|>system\n",
        "USER": "<|im_start|>user\n",
        "MODEL": "<|im_start|>assistant\n",
        "END": "<|im_end|>",
        "bos": "",
    },
    "gemma-tools": {  # Gemma 3: no system turn
        "SYSTEM": "",
        "USER": "<start_of_turn>user\n",
        "MODEL": "<start_of_turn>model\n",
        "END": "<end_of_turn>",
        "bos": "<bos>",
    },
}


DEFAULT_FORMAT = "chatml-tools"


def chat_template(name: str) -> str:
    """`TOOLS_TEMPLATE` with the turn markers of format ``name``."""
    markers = FORMATS[name]
    template = TOOLS_TEMPLATE.replace("SYSTEM and", "true and" if markers["SYSTEM"] else "false and")
    for marker in ("SYSTEM", "USER", "MODEL", "END"):
        template = template.replace(marker, markers[marker])
    return template


def register_formats() -> None:
    """Register each of `FORMATS` as a llama-cpp-python chat format of that name."""
    from llama_cpp import llama_chat_format

    registry = llama_chat_format.LlamaChatCompletionHandlerRegistry()
    for name, markers in FORMATS.items():
        formatter = llama_chat_format.Jinja2ChatFormatter(
            template=chat_template(name), eos_token=markers["END"], bos_token=markers["bos"]
        )
        registry.register_chat_completion_handler(name, formatter.to_chat_handler(), overwrite=True)


DEFAULT_MAX_TOKENS = 512
"""Tokens a reply may take when the request sets no ``max_tokens`` (the server's default is the whole window)."""


def fixed_request(body: dict[str, Any], max_tokens: int = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
    """``body`` with each assistant message's ``content: null`` sent as ``""`` and each system message's list
    of text parts as one string (the server refuses both with HTTP 500, though OpenAI's API allows them), and
    ``max_tokens`` when it has none."""
    messages = body.get("messages")
    if isinstance(messages, list):
        body = {**body, "messages": [fixed_message(m) for m in messages]}
    return body if body.get("max_tokens") else {**body, "max_tokens": max_tokens}


def fixed_message(message: Any) -> Any:
    """One message as the server takes it (`fixed_request`)."""
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    if message.get("role") == "assistant" and content is None:
        return {**message, "content": ""}
    if message.get("role") == "system" and isinstance(content, list):  # LangChain's TodoListMiddleware sends one
        return {**message, "content": "".join(p.get("text", "") for p in content if isinstance(p, dict))}
    return message


ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Any]


def request_filter(app: ASGIApp, max_tokens: int = DEFAULT_MAX_TOKENS) -> ASGIApp:
    """``app`` behind an ASGI filter that passes each chat request on as `fixed_request` makes it."""

    async def filtered(scope, receive, send):
        if scope.get("type") != "http" or not scope.get("path", "").endswith("/chat/completions"):
            return await app(scope, receive, send)
        chunks = []
        while True:
            event = await receive()
            chunks.append(event.get("body", b""))
            if not event.get("more_body"):
                break
        raw = b"".join(chunks)
        with contextlib.suppress(ValueError, TypeError, AttributeError):  # not a JSON object: left as it is
            raw = json.dumps(fixed_request(json.loads(raw), max_tokens)).encode()
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(raw)).encode()))
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        return await app({**scope, "headers": headers}, replay, send)

    return filtered


def main(argv: list[str] | None = None) -> None:
    """``python -m llama_cpp.server`` with ``--chat_format chatml-tools`` unless another is given, behind
    `request_filter` (``--default_max_tokens N``, 512 unless given)."""
    import argparse
    import os

    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    register_formats()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a.startswith("--chat_format") for a in argv):
        argv += ["--chat_format", DEFAULT_FORMAT]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.llama_server", description=__doc__.split("\n")[0])
    add_args_from_model(parser, Settings)
    parser.add_argument(
        "--default_max_tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        help="tokens a reply may take when the request sets no max_tokens",
    )
    args = parser.parse_args(argv)
    server = parse_model_from_args(ServerSettings, args)
    app = create_app(server_settings=server, model_settings=[parse_model_from_args(ModelSettings, args)])
    app = request_filter(app, args.default_max_tokens)
    uvicorn.run(app, host=server.host, port=int(os.getenv("PORT", server.port)))


if __name__ == "__main__":
    main()
