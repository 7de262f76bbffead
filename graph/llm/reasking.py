"""The structured-output loop's rare turns (`replangraph.llm.calls.structured_steps`): an answer it could not use,
asked again with the reason and the previous answer quoted (`retry_request`, `quoted`, `shortened`), and the
outcome of an ask whose model call failed (`failed`). An answer read at the first ask runs nothing here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from replangraph.llm.calls import QUOTED_CHARS, Called, Provisional, StructuredAnswer, raw_reply
from replangraph.llm.reading import answer_text


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
