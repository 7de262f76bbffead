"""The one loop every judgement uses: ask for a schema, read the answer leniently, ask again with what was wrong.

A model bound to a schema (`bind_schema`: function calling, raw reply included) is asked
through `call_model` (transient errors are retried there, failures come back classified). ``read(answer)`` turns
the answer into a value or raises `UnreadableInput` with a reason; the next ask repeats the
request with a message naming the reason and quoting the previous answer. A `Provisional`
answer is asked about again too, but used when no better one comes. No LangGraph here
(`call_model` lets its bubble-up exceptions through).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from replangraph.llm.calls import Called, call_model
from replangraph.llm.lenient import UnreadableInput, load_json, without_thinking
from replangraph.llm.messages import message_text

T = TypeVar("T")
RETRY_ERROR_CHARS = 2_000
"""Longest reason quoted in a retry message (the retry request must fit the window too)."""
RETRY_PROMPT = """\
Your previous answer could not be used: {error}
Previous answer: {previous}
Answer again through the tool you were given."""
"""The default retry message: ``{error}`` is why, ``{previous}`` the answer quoted."""
QUOTED_CHARS = 2_000
"""Longest previous answer quoted in a retry message."""


class Provisional(Exception):  # noqa: N818  # not an error: an answer to keep if no better one comes
    """Raised by a reader for an answer worth another ask: ``reason`` goes back to the model, and
    ``value`` is used when the asks run out (or the model fails) before a better answer comes."""

    def __init__(self, reason: str, value: Any):
        super().__init__(reason)
        self.value = value


@dataclass
class StructuredAnswer(Generic[T]):
    """The outcome of `ask_structured`."""

    value: T | None
    """What ``read`` made of the accepted answer, or None when none was usable."""
    calls: int
    """Model calls spent, transient retries included."""
    error: str = ""
    """Why no value came: the last reason an answer was unreadable, or the model failure."""
    overflow: bool = False
    """Whether the provider refused the request as longer than its context window."""
    unanswered: bool = False
    """Whether a transient error (down, timing out, rate limited) outlived the retries."""
    answer: Any = None
    """The last answer received (for quoting it), or None."""
    failure: BaseException | None = None
    """The exception that ended the asking, when the model call failed."""


def bind_schema(model: Any, schema: type[BaseModel]) -> Any:
    """``model`` answering with ``schema`` through function calling, the raw reply included (bind once, reuse)."""
    return model.with_structured_output(schema, method="function_calling", include_raw=True)


def raw_reply(answer: Any) -> Any:
    """The model's own message in a structured answer (``{"raw": ..., "parsed": ...}``) or the answer itself."""
    return answer.get("raw") if isinstance(answer, Mapping) else answer


def tool_arguments(answer: Any) -> Any:
    """The arguments of the reply's first tool call (malformed JSON arguments read leniently), else the
    validated ``parsed`` value; None when the model answered in text."""
    raw = raw_reply(answer)
    calls = getattr(raw, "tool_calls", None) or []
    if calls:
        return calls[0].get("args")
    invalid = getattr(raw, "invalid_tool_calls", None) or []
    if invalid and isinstance(invalid[0].get("args"), str) and invalid[0]["args"].strip():
        return load_json(invalid[0]["args"])
    parsed = answer.get("parsed") if isinstance(answer, Mapping) else None
    return parsed.model_dump() if isinstance(parsed, BaseModel) else None


def reply_text(answer: Any) -> str:
    """The reply's text (content blocks joined), reasoning (``<think>…</think>``) skipped."""
    raw = raw_reply(answer)
    return without_thinking(message_text(raw)) if isinstance(raw, BaseMessage) else ""


def read_arguments(answer: Any, tool: str) -> Any:
    """The schema's arguments: the tool call's, else JSON in the reply's text (fenced or in prose,
    after any reasoning). UnreadableInput when there is neither."""
    args = tool_arguments(answer)
    if args is not None:
        return args
    text = reply_text(answer)
    if not text:
        raise UnreadableInput(f"the answer is empty: call the {tool} tool")
    return load_json(text)


def quoted(answer: Any) -> str:
    """What the model actually said, for the retry message: its tool call's arguments, else its text."""
    raw = raw_reply(answer)
    if isinstance(raw, AIMessage) and raw.tool_calls:
        return json.dumps(raw.tool_calls[0].get("args"), default=str)[:QUOTED_CHARS]
    if isinstance(raw, BaseMessage):
        return message_text(raw)[:QUOTED_CHARS] or "(empty)"
    return "(none)"


def shortened(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def retry_request(messages: Sequence[BaseMessage], prompt: str, error: str, answer: Any) -> list[BaseMessage]:
    """The request asked again: ``messages`` and ``prompt`` filled with the reason and the previous answer."""
    return [*messages, HumanMessage(prompt.format(error=error, previous=quoted(answer)))]


def failed(called: Called, calls: int, kept: Provisional | None) -> StructuredAnswer:
    """The outcome when a model call failed (``calls`` include its tries): a provisional value kept,
    else no value, with why."""
    exc = called.error
    if kept is not None:
        return StructuredAnswer(kept.value, calls, failure=exc)
    error = f"model call failed: {type(exc).__name__}: {exc}"
    return StructuredAnswer(None, calls, error, overflow=called.overflow, unanswered=called.unanswered, failure=exc)


def ask_structured(
    structured: Any,
    messages: Sequence[BaseMessage],
    read: Callable[[Any], T],
    *,
    retries: int,
    config: Any,
    retry_prompt: str = RETRY_PROMPT,
    error_chars: int = RETRY_ERROR_CHARS,
) -> StructuredAnswer[T]:
    """Ask ``structured`` (see `bind_schema`) until ``read`` accepts an answer, at most ``retries + 1`` answers.

    Transient errors are retried inside each ask (``config``'s retry settings); a call that still
    fails ends the asking at once, its attempts counted. `UnreadableInput` from ``read`` asks again
    with ``retry_prompt`` (``{error}``: the reason, cut to ``error_chars``; ``{previous}``: the answer);
    `Provisional` too, its value used when no accepted answer comes. LangGraph's bubble-up passes through.
    """
    prompt, calls, error, answer = list(messages), 0, "", None
    kept: Provisional | None = None
    for _ in range(retries + 1):
        called = call_model(structured, prompt, config)
        calls += called.attempts
        if called.error is not None:  # the model is down or refuses: the caller falls back
            return failed(called, calls, kept)
        answer = called.reply
        try:
            return StructuredAnswer(read(answer), calls, answer=answer)
        except Provisional as exc:
            kept, error = exc, shortened(str(exc), error_chars)
        except UnreadableInput as exc:
            error = shortened(str(exc), error_chars)
        prompt = retry_request(messages, retry_prompt, error, answer)
    if kept is not None:
        return StructuredAnswer(kept.value, calls, answer=answer)
    return StructuredAnswer(None, calls, error, answer=answer)
