"""The structured-output loop (`structured_steps`): a model bound to a schema (`replangraph.llm.answers.bind_schema`)
asked through `replangraph.llm.calls.call_model`, or `replangraph.llm.aio.acall_model` on the async path, until
``read`` accepts its answer. Its rare turns: an answer it could not use, asked again with the reason and the
previous answer quoted (`retry_request`, `quoted`, `shortened`), and the outcome of an ask whose model call
failed (`failed`). No LangGraph here but ``GraphBubbleUp`` (through the call path)."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from replangraph.llm.aio import acall_model
from replangraph.llm.answers import (
    QUOTED_CHARS,
    RETRY_ERROR_CHARS,
    RETRY_PROMPT,
    Provisional,
    StructuredAnswer,
    raw_reply,
)
from replangraph.llm.calls import Called, call_model
from replangraph.llm.lenient import UnreadableInput
from replangraph.llm.reading import answer_text

T = TypeVar("T")


def quoted(answer: Any, limit: int = QUOTED_CHARS) -> str:
    """What the model actually said, for the retry message (at most ``limit`` characters): its tool call's
    arguments, else its text."""
    raw = raw_reply(answer)
    if isinstance(raw, AIMessage) and raw.tool_calls:
        return json.dumps(raw.tool_calls[0].get("args"), default=str)[:limit]
    if isinstance(raw, BaseMessage):
        return answer_text(raw)[:limit] or "(empty)"
    return "(none)"


def shortened(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def retry_request(
    messages: Sequence[BaseMessage], prompt: str, error: str, answer: Any, quoted_chars: int = QUOTED_CHARS
) -> list[BaseMessage]:
    """The request asked again: ``messages`` and ``prompt`` filled with the reason and the previous answer
    (at most ``quoted_chars`` of it)."""
    return [*messages, HumanMessage(prompt.format(error=error, previous=quoted(answer, quoted_chars)))]


def failed(called: Called, calls: int, kept: Provisional | None) -> StructuredAnswer:
    """The outcome when a model call failed (``calls`` include its tries): a provisional value kept,
    else no value, with why."""
    exc = called.error
    if kept is not None:
        return StructuredAnswer(kept.value, calls, failure=exc)
    error = f"model call failed: {type(exc).__name__}: {exc}"
    return StructuredAnswer(None, calls, error, overflow=called.overflow, unanswered=called.unanswered, failure=exc)


def structured_steps(
    structured: Any,
    messages: Sequence[BaseMessage],
    read: Callable[[Any], T],
    *,
    retries: int,
    config: Any,
    retry_prompt: str = RETRY_PROMPT,
    error_chars: int = RETRY_ERROR_CHARS,
    quoted_chars: int = QUOTED_CHARS,
    observe: Callable[[Any, Any], None] | None = None,
    monitor: Any = None,
    awaited: bool = False,
    trace: RunnableConfig | None = None,
) -> Generator[Any, Any, StructuredAnswer[T]]:
    """Ask ``structured`` (see `bind_schema`) until ``read`` accepts an answer, at most ``retries + 1`` answers;
    steps (`run_steps`, `arun_steps`): each ask through `call_model`, or `acall_model` when ``awaited``.

    Transient errors are retried inside each ask (``config``'s retry settings); a call that still
    fails ends the asking at once, its attempts counted. `UnreadableInput` from ``read`` asks again
    with ``retry_prompt`` (``{error}``: the reason, cut to ``error_chars``; ``{previous}``: the answer, cut to
    ``quoted_chars``);
    `Provisional` too, its value used when no accepted answer comes. LangGraph's bubble-up passes through.
    ``observe(request, reply)`` sees each reply; ``monitor`` bounds the answers and ``trace`` is the calls'
    run config (see `call_model`).
    """
    ask = acall_model if awaited else call_model
    prompt, calls, error, answer = list(messages), 0, "", None
    kept: Provisional | None = None
    for _ in range(retries + 1):
        called = yield ask(structured, prompt, config, observe=observe, monitor=monitor, trace=trace)
        calls += called.attempts
        if called.error is not None:  # the model is down or refuses: the caller falls back
            return failed(called, calls, kept)
        answer = called.reply
        try:
            return StructuredAnswer(read(answer), calls, answer=answer)
        except Provisional as exc:
            kept, error = exc, str(exc)
        except UnreadableInput as exc:
            error = str(exc)
        error = shortened(error, error_chars)
        prompt = retry_request(messages, retry_prompt, error, answer, quoted_chars)
    if kept is not None:
        return StructuredAnswer(kept.value, calls, answer=answer)
    return StructuredAnswer(None, calls, error, answer=answer)
