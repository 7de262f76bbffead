"""What bounds one call on the model's client: the output tokens an answer may take (`output_limit`, sent as the
client's own field: `output_bound`), the client's retries and timeout (`client_fields`: replangraph retries
itself, and no request outlives its step), and how a reply cut at that bound is told (`was_cut`, `cut_note`)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableBinding

BOUND_FIELDS = ("max_tokens", "max_output_tokens", "num_predict", "max_new_tokens")
"""A chat model's own field bounding its answer, by the names providers use (OpenAI, Anthropic and most others;
Gemini; Ollama; Hugging Face)."""


BOUND_COPIES_KEPT = 64


_bound_copies: dict[tuple[int, int | None, bool, float | None], tuple[Any, Any]] = {}


_bound_lock = threading.Lock()


def output_limit(config: Any, monitor: Any) -> int | None:
    """Most tokens one answer may take: ``max_output_tokens``, else the room the model's requests leave for
    the answer (the ``monitor``'s ``reserved_output``: at most a quarter of the window it knows, learned or
    configured; without a monitor, ``reserved_output`` within a quarter of ``context_window``); None when 0."""
    if getattr(config, "max_output_tokens", None):
        return config.max_output_tokens
    if monitor is not None:
        return monitor.reserved_output or None
    reserved = getattr(config, "reserved_output", 0)
    window = getattr(config, "context_window", None)
    room = min(reserved, window // 4) if window else reserved
    return room or None


def endpoint_url(model: Any) -> str:
    """The base URL an OpenAI-client model sends to ('' for others, or when it is OpenAI's default)."""
    client = getattr(model, "root_client", None)
    url = getattr(client, "base_url", None) or getattr(model, "openai_api_base", None) or ""
    return str(url)


def output_bound(model: Any, tokens: int) -> dict[str, Any]:
    """The fields to set on ``model`` so its answers stop at ``tokens`` (at most the model profile's
    ``max_output_tokens``, and a smaller bound already set stays), in the form its endpoint honours.

    langchain-openai sends ``max_tokens`` as ``max_completion_tokens``, which OpenAI wants but servers such as
    llama.cpp's ignore: against any other base URL the bound goes as ``max_tokens`` in ``extra_body``."""
    fields = getattr(type(model), "model_fields", {})
    profile = getattr(model, "profile", None) or {}
    cap = profile.get("max_output_tokens") if isinstance(profile, Mapping) else None
    tokens = min(tokens, int(cap)) if cap else tokens
    url = endpoint_url(model)
    if "extra_body" in fields and url and "api.openai.com" not in url:
        extra = dict(getattr(model, "extra_body", None) or {})
        given = extra.get("max_tokens")
        extra["max_tokens"] = min(given, tokens) if isinstance(given, int) and given > 0 else tokens
        return {"extra_body": extra}
    for name in BOUND_FIELDS:
        if name in fields:
            given = getattr(model, name, None)
            return {name: min(given, tokens) if isinstance(given, int) and given > 0 else tokens}
    return {}


def client_retries(model: Any) -> int | None:
    """How often a chat model's own client retries a failed request (ChatOpenAI: ``max_retries``, its client's
    2 when unset), or None when it does not say."""
    own = getattr(model, "max_retries", None)
    if isinstance(own, int):
        return own
    client = getattr(getattr(model, "root_client", None), "max_retries", None)
    return client if isinstance(client, int) else None


def stacked_retries(model: Any) -> int:
    """Retries a chat model's client makes on its own that replangraph cannot turn off for its calls (a client
    other than OpenAI's: `quiet_client` quiets those); 0 when none."""
    return 0 if hasattr(getattr(model, "root_client", None), "with_options") else client_retries(model) or 0


def capped_timeout(timeout: Any, limit_s: float) -> Any:
    """An OpenAI client's ``timeout`` at most ``limit_s`` seconds: a number or None (no limit) as the smaller,
    an ``httpx.Timeout`` with each of its parts capped (a shorter part stays); anything else: ``limit_s``."""
    if timeout is None or isinstance(timeout, int | float):
        return limit_s if timeout is None or timeout > limit_s else timeout
    parts = ("connect", "read", "write", "pool")
    if all(hasattr(timeout, part) for part in parts):
        capped = {
            part: limit_s if getattr(timeout, part) is None else min(getattr(timeout, part), limit_s) for part in parts
        }
        return timeout if all(getattr(timeout, p) == v for p, v in capped.items()) else type(timeout)(**capped)
    return limit_s


def client_fields(model: Any, quiet: bool, timeout_s: float | None) -> dict[str, Any]:
    """The fields that make an OpenAI-client chat model (ChatOpenAI, AzureChatOpenAI and the other
    ``BaseChatOpenAI`` kinds) send each request once (``quiet``: ``max_retries=0``) and wait at most
    ``timeout_s`` seconds for it (its ``timeout``, a shorter one kept; None: as it is): its clients copied
    with those options (``with_options`` keeps their base URL, key, headers, other settings and HTTP
    connection pool); {} when nothing changes, or for a model that has no OpenAI client to copy."""
    sync, run_async = getattr(model, "root_client", None), getattr(model, "root_async_client", None)
    if not hasattr(sync, "with_options"):
        return {}
    quiet = quiet and bool(client_retries(model))
    fields: dict[str, Any] = {}
    for name, client, calls in (("root_client", sync, "client"), ("root_async_client", run_async, "async_client")):
        if not hasattr(client, "with_options"):
            continue
        options: dict[str, Any] = {"max_retries": 0} if quiet else {}
        if timeout_s is not None and (capped := capped_timeout(client.timeout, timeout_s)) != client.timeout:
            options["timeout"] = capped
        if options:
            fields[name] = client.with_options(**options)
            fields[calls] = fields[name].chat.completions
    if fields and quiet:
        fields["max_retries"] = 0
    return fields


def quiet_client(model: Any) -> dict[str, Any]:
    """The fields that make an OpenAI-client chat model send each request once (`client_fields`); {} for a
    model whose client does not retry, or that has no OpenAI client to copy."""
    return client_fields(model, True, None)


def bounded(model: Any, tokens: int | None, client_retries: bool = True, timeout_s: float | None = None) -> Any:
    """A copy of the chat model ``model`` whose answers stop at ``tokens`` (`output_bound`; None: no bound) and,
    without ``client_retries``, whose client sends each request once (replangraph retries them, with the
    provider's ``Retry-After`` and each try counted), and waits at most ``timeout_s`` for an answer (the time
    replangraph gives the call: its client gives up no later, see `client_fields`); the model itself when
    nothing changes. Copies are reused (and keep their model alive, so its id is not reused)."""
    key = (id(model), tokens, client_retries, timeout_s)
    with _bound_lock:
        found = _bound_copies.get(key)
    if found is not None:
        return found[1]
    fields = output_bound(model, tokens) if tokens else {}
    fields.update(client_fields(model, not client_retries, timeout_s))
    if not fields or all(getattr(model, k, None) is v or getattr(model, k, None) == v for k, v in fields.items()):
        return model
    copy = model.model_copy(update=fields)
    with _bound_lock:
        if len(_bound_copies) >= BOUND_COPIES_KEPT:
            _bound_copies.pop(next(iter(_bound_copies)))
        _bound_copies[key] = (model, copy)
    return copy


def with_output_bound(
    model: Any, tokens: int | None, client_retries: bool = True, timeout_s: float | None = None
) -> Any:
    """``model`` answering in at most ``tokens``, without ``client_retries`` sending each request once, and its
    client waiting at most ``timeout_s`` (`bounded`): a chat model, one bound to tools or settings, or one
    bound to a schema by `bind_schema`; anything else as it is."""
    if tokens is None and client_retries and timeout_s is None:
        return model
    if callable(getattr(model, "bounded", None)):  # bound to a schema (`replangraph.llm.answers.Structured`)
        return model.bounded(tokens, client_retries, timeout_s)
    if isinstance(model, BaseChatModel):
        return bounded(model, tokens, client_retries, timeout_s)
    if isinstance(model, RunnableBinding) and isinstance(model.bound, BaseChatModel):
        inner = bounded(model.bound, tokens, client_retries, timeout_s)
        return model if inner is model.bound else model.model_copy(update={"bound": inner})
    return model


def cut_note(limit: int | None) -> str:
    """The note ending an answer that stopped at its output bound."""
    bound = f" of {limit} tokens" if limit else ""
    return f"[cut: this answer stopped at the model's output limit{bound} (max_output_tokens); the rest is missing]"
