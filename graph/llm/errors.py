"""What a provider's error says: transient or not, how long to wait (``Retry-After``), a request over the
context window (and the window or refused size it names), a model server that stopped answering.

Pure classification, read from langchain-core's `ModelError` / `ContextOverflowError`, the openai SDK's and
httpx's classes, and the wordings of OpenAI, vLLM, llama.cpp, Anthropic and LM Studio. What to do about an
error (retry, refit, pause) is `replangraph.llm.calls`'s one policy. No LangGraph here but
``GraphBubbleUp`` (a `ModelServerDown` pauses the run).
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping, Sequence

from langchain_core.exceptions import ContextOverflowError, ModelError
from langgraph.errors import GraphBubbleUp

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


RETRYABLE_NAMES = frozenset(
    {
        # SDKs that do not subclass langchain-core's ModelError (httpx, older provider packages)
        "APITimeoutError",
        "APIConnectionError",
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "ConnectTimeout",
        "ReadTimeout",
        "RemoteProtocolError",
    }
)


def status_code(exc: BaseException) -> int | None:
    """The HTTP status an API error carries, if any."""
    for source in (exc, getattr(exc, "response", None)):
        code = getattr(source, "status_code", None)
        if isinstance(code, int):
            return code
    return None


SERVER_DOWN_NAMES = frozenset(
    {"APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout", "ReadTimeout", "RemoteProtocolError"}
)


def is_server_down(exc: BaseException) -> bool:
    """Whether ``exc`` says the model server did not answer at all (refused, reset, timed out), as opposed to
    answering with an error (rate limits, 5xx, a refused request) or the step's own time limit."""
    if isinstance(exc, ModelServerDown):
        return True
    if isinstance(exc, StepTimeout | GraphBubbleUp):
        return False
    if isinstance(exc, ConnectionError):
        return True
    return any(cls.__name__ in SERVER_DOWN_NAMES for cls in type(exc).__mro__)


SERVER_DOWN_MARKS = ("connectionerror", "connecterror", "connection error", "connection refused", "connecttimeout")


def says_server_down(error: str | None) -> bool:
    """Whether a recorded error (a subtask's) says the model server could not be reached."""
    text = (error or "").lower()
    return any(mark in text for mark in SERVER_DOWN_MARKS)


def server_url(exc: BaseException) -> str | None:
    """The URL the failed request went to (the openai and httpx errors carry it), without its query."""
    if isinstance(exc, ModelServerDown):
        return exc.url
    try:
        url = getattr(getattr(exc, "request", None), "url", None)
    except RuntimeError:  # httpx raises when the error has no request
        return None
    if url is None:
        return None
    text = str(url).split("?")[0]
    return text.removesuffix("/chat/completions").removesuffix("/completions")


def is_transient(exc: BaseException) -> bool:
    """Worth another try: langchain-core's ``is_retryable`` model errors, timeouts,
    connection errors, 408/409/425/429 and 5xx. ``StepTimeout`` and LangGraph's bubble-up are not."""
    if isinstance(exc, StepTimeout | GraphBubbleUp):
        return False
    if isinstance(exc, ModelError) and exc.is_retryable:
        return True
    if isinstance(exc, ModelError) and type(exc) is not ModelError:
        return False  # classified by the provider as permanent (auth, bad request, context overflow)
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    if any(cls.__name__ in RETRYABLE_NAMES for cls in type(exc).__mro__):
        return True
    code = status_code(exc)
    return code is not None and (code in RETRYABLE_STATUS or code >= 500)


OVERFLOW_PHRASES = (
    "context_length_exceeded",  # OpenAI's error code
    "maximum context length",  # OpenAI, vLLM
    "longer than the maximum model length",  # vLLM v1
    "context window",  # llama-cpp-python ("exceed context window"), others
    "context length of only",  # LM Studio
    "exceeds the available context size",  # llama.cpp server
    "exceed_context_size",
    "too big compared to kv size",  # older llama.cpp server
    "prompt is too long",  # Anthropic
    "input tokens exceed",
    "exceeds the maximum number of tokens",  # Gemini
    "too many tokens",
)


OVERFLOW_PATTERNS = (re.compile(r"tokens? \+ `?max_new_tokens`? must be <="),)  # text-generation-inference


def is_context_overflow(exc: BaseException) -> bool:
    """Whether the provider refused the request as longer than its context window.

    langchain-core's ``ContextOverflowError``, or an error whose code or message says so
    (any status, or none for in-process models): langchain-openai only recognises some
    wordings (with openai>=2 the code is not in the message), and local servers word it
    their own way.
    """
    if isinstance(exc, ContextOverflowError):
        return True
    if isinstance(exc, StepTimeout | TimeoutError | ConnectionError | GraphBubbleUp):
        return False
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, Mapping) else None
    code = str(error.get("code") or error.get("type") or "") if isinstance(error, Mapping) else ""
    text = f"{code} {exc}".lower()
    return any(phrase in text for phrase in OVERFLOW_PHRASES) or any(p.search(text) for p in OVERFLOW_PATTERNS)


def retry_after(exc: BaseException, now: float | None = None) -> float | None:
    """Seconds the provider asked us to wait (``Retry-After``, ``retry-after-ms``), if it said."""
    direct = getattr(exc, "retry_after", None)
    if isinstance(direct, int | float) and direct >= 0:
        return float(direct)
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not isinstance(headers, Mapping) and not hasattr(headers, "get"):
        return None
    millis = headers.get("retry-after-ms")
    try:
        if millis is not None:
            return max(float(millis) / 1000, 0.0)
    except (TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value)).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(when - (time.time() if now is None else now), 0.0)


WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d+)"),  # OpenAI, vLLM
    re.compile(r"available context size \((\d+) tokens?\)"),  # llama.cpp server
    re.compile(r"context window of (\d+)"),  # llama-cpp-python
    re.compile(r"context length of only (\d+)"),  # LM Studio
    re.compile(r"maximum model length (?:of |is )?(\d+)"),  # vLLM v1
    re.compile(r"tokens? > (\d+) maximum"),  # Anthropic
)


REFUSED_PATTERNS = (
    re.compile(r"\((\d+) in the messages"),  # OpenAI, vLLM: the prompt part of "you requested N tokens"
    re.compile(r"messages resulted in (\d+) tokens"),  # OpenAI
    re.compile(r"requested tokens \((\d+)\)"),  # llama-cpp-python
    re.compile(r"request \((\d+) tokens?\)"),  # llama.cpp server
    re.compile(r"prompt is too long: (\d+) tokens"),  # Anthropic
    re.compile(r"prompt \(length (\d+)\)"),  # vLLM v1
    re.compile(r"you requested (\d+) tokens"),  # OpenAI, vLLM (prompt and completion together)
)


def overflow_sizes(exc: BaseException | str | None) -> tuple[int | None, int | None]:
    """``(window, refused)`` a provider's overflow error names: its context window in tokens, and the size of
    the refused prompt by its own count; None for what it does not say."""
    text = str(exc or "").lower().replace(",", "")

    def first(patterns: Sequence[re.Pattern]) -> int | None:
        for pattern in patterns:
            found = pattern.search(text)
            if found:
                return int(found.group(1))
        return None

    return first(WINDOW_PATTERNS), first(REFUSED_PATTERNS)


class ModelServerDown(GraphBubbleUp, ConnectionError):
    """The model server stopped answering (connection refused or reset, timeouts) through every retry, and the
    run pauses instead of failing its work (``pause_when_model_down``): it ends with this error, its checkpoint
    keeps the steps done, and resuming the thread (``invoke(None, config)``) goes on once the server is back.

    A LangGraph bubble-up, so that no node's ``error_handler`` turns it into a failed subtask and the step
    that raised it runs again on resume."""

    def __init__(self, cause: BaseException, message: str | None = None):
        """``message``: the words of one raised elsewhere (another process), kept as they are."""
        self.url = server_url(cause)
        where = f" at {self.url}" if self.url else ""
        super().__init__(
            message
            or f"the model server{where} stopped answering ({type(cause).__name__}: {cause}); the run is paused: "
            "start the server again and resume the thread"
        )


class StepTimeout(TimeoutError):
    """A subtask ran past ``step_timeout_s``."""
