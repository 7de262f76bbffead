"""A model bound to a schema and how its answer is read: the answer types of the structured-output loop
(`StructuredAnswer`, `Provisional`), the binding (`bind_schema`: function calling, raw reply included), the
arguments of the tool call it answered with (`read_arguments`) and the texts that ask again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableBinding, RunnableSequence
from pydantic import BaseModel

from replangraph.llm.bounds import bounded
from replangraph.llm.formats import load_json, read_text_calls
from replangraph.llm.lenient import CUT_OFF, CutOff, UnreadableInput
from replangraph.llm.reading import answer_text, cut_by_limit

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
    """The outcome of `structured_steps`."""

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


class Structured:
    """A chat model answering with a schema through function calling, the raw reply included (see `bind_schema`);
    `call_model` asks a copy bounded to the run's output limit."""

    def __init__(self, model: Any, schema: type[BaseModel]):
        self.model = model
        self.schema = schema
        self.answering = schema_call(model, schema)
        self.runnable = (
            model.with_structured_output(schema, method="function_calling", include_raw=True)
            if self.answering is None
            else None
        )
        self.copies: dict[tuple[int | None, bool, float | None], Structured] = {}

    def invoke(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if self.answering is not None:
            return raw_answer(self.answering.invoke(request, *args, **kwargs))
        return self.runnable.invoke(request, *args, **kwargs)

    async def ainvoke(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if self.answering is not None:
            return raw_answer(await self.answering.ainvoke(request, *args, **kwargs))
        return await self.runnable.ainvoke(request, *args, **kwargs)

    def bounded(self, tokens: int | None, client_retries: bool = True, timeout_s: float | None = None) -> Structured:
        """This schema on the model as `bounded` makes it; itself when that changes nothing."""
        model = bounded(self.model, tokens, client_retries, timeout_s)
        if model is self.model:
            return self
        key = (tokens, client_retries, timeout_s)
        if key not in self.copies:
            self.copies[key] = Structured(model, self.schema)
        return self.copies[key]


def schema_call(model: Any, schema: type[BaseModel]) -> Any:
    """The model call of ``model.with_structured_output(schema, method="function_calling")``: the model bound
    to the schema as its one tool, as the provider's integration binds it (tool choice, strictness). None when
    the integration builds something else; `Structured` then uses LangChain's ``include_raw`` chain.

    Hand-written because ``include_raw=True`` wraps that call in a ``RunnableParallel``, whose ``invoke`` starts
    a thread pool per call (a new thread for every check, plan and verdict), and `tool_arguments` reads the
    raw reply leniently anyway: the parser's ``parsed`` value was never the one used."""
    chain = model.with_structured_output(schema, method="function_calling")
    first = chain.first if isinstance(chain, RunnableSequence) else None
    return first if isinstance(first, (BaseChatModel, RunnableBinding)) else None


def raw_answer(reply: Any) -> dict[str, Any]:
    """A reply in the shape of LangChain's ``include_raw`` answers (``raw``, ``parsed``, ``parsing_error``);
    the readers here read ``raw``."""
    return {"raw": reply, "parsed": None, "parsing_error": None}


def bind_schema(model: Any, schema: type[BaseModel]) -> Structured:
    """``model`` answering with ``schema`` through function calling, the raw reply included (bind once, reuse)."""
    return Structured(model, schema)


def raw_reply(answer: Any) -> Any:
    """The model's own message in a structured answer (``{"raw": ..., "parsed": ...}``) or the answer itself."""
    return answer.get("raw") if isinstance(answer, Mapping) else answer


def tool_arguments(answer: Any) -> Any:
    """The arguments of the reply's first tool call (malformed JSON arguments read leniently), else the
    validated ``parsed`` value; None when the model answered in text. `CutOff` when the output limit
    ended the reply (`cut_by_limit`) or the arguments' JSON never closes: a cut call is never read."""
    raw = raw_reply(answer)
    calls = getattr(raw, "tool_calls", None) or []
    invalid = getattr(raw, "invalid_tool_calls", None) or []
    if (calls or invalid) and cut_by_limit(raw):
        raise CutOff(CUT_OFF)
    if calls:
        return calls[0].get("args")
    if invalid and isinstance(invalid[0].get("args"), str) and invalid[0]["args"].strip():
        return load_json(invalid[0]["args"])
    parsed = answer.get("parsed") if isinstance(answer, Mapping) else None
    return parsed.model_dump() if isinstance(parsed, BaseModel) else None


def reply_text(answer: Any) -> str:
    """The reply's text (content blocks joined), reasoning (``<think>…</think>``, reasoning blocks) skipped."""
    raw = raw_reply(answer)
    return answer_text(raw) if isinstance(raw, BaseMessage) else ""


def called_arguments(answer: Any, tool: str) -> Any:
    """The arguments of the schema's call: the tool call's (`tool_arguments`), else those of a call of ``tool``
    written as text (`read_text_calls`: ``<tool_call>``, ``[TOOL_CALLS]``...); None when the answer holds
    neither. `CutOff` when the call was cut off."""
    args = tool_arguments(answer)
    if args is not None:
        return args
    written = read_text_calls(reply_text(answer), [tool])
    if written.cut and not written.calls:
        raise CutOff(CUT_OFF)
    return written.calls[0]["args"] if written.calls else None


def read_arguments(answer: Any, tool: str) -> Any:
    """The schema's arguments: the call's (`called_arguments`: a tool call, or one written as text), else JSON
    in the reply's text (fenced or in prose, after any reasoning). UnreadableInput when there is neither;
    `CutOff` when the answer was cut off (the output limit ended it, or its JSON never closes)."""
    if cut_by_limit(raw_reply(answer)) and reply_text(answer):
        raise CutOff(CUT_OFF)
    args = called_arguments(answer, tool)
    if args is not None:
        return args
    text = reply_text(answer)
    if not text:
        raise UnreadableInput(f"the answer is empty: call the {tool} tool")
    return load_json(text)


def was_cut(reply: Any) -> bool:
    """Whether the model's answer (or the raw reply of a structured one) stopped at its output bound."""
    return cut_by_limit(raw_reply(reply))
