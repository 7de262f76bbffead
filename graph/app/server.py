"""The model server, checked before a run: does it answer, and which model does it serve.

With a base URL (``--base-url`` or $OPENAI_BASE_URL), ``GET {base_url}/models`` is asked once with a short
timeout: a server that does not answer ends the command at once (exit 4, the URL named) instead of after the
run's retries, and a local server's model is taken from its list rather than sending OpenAI's default name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from replangraph.durable import masked_url

PROBE_TIMEOUT_S = 3.0
OPENAI_URL = "https://api.openai.com/v1"
MODEL_ENV = "REPLANGRAPH_MODEL"


class ServerDown(Exception):
    """The model server did not answer; the message names it and what to fix (exit code 4)."""


class NoModel(Exception):
    """No model could be chosen for the server, or its URL is malformed; the message says what to pass (exit 2)."""


def base_url(settings: Mapping[str, Any]) -> str | None:
    """The OpenAI-compatible server the run talks to: ``--base-url`` (or as recorded), else $OPENAI_BASE_URL."""
    return settings.get("base_url") or os.environ.get("OPENAI_BASE_URL") or None


def server_label(settings: Mapping[str, Any]) -> str:
    """The server as messages name it: its URL without a password, else OpenAI's."""
    url = base_url(settings)
    return masked_url(url.rstrip("/")) if url else OPENAI_URL


def why_not(exc: Exception, timeout_s: float) -> str:
    """Why a request got no answer, in a few words."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {timeout_s:g} s"
    text = str(exc).lower()
    if "refused" in text:
        return "connection refused"
    if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
        return "its host name was not found"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def listed_models(
    url: str, timeout_s: float = PROBE_TIMEOUT_S, fix: str = "--base-url"
) -> tuple[list[str] | None, str]:
    """``(model ids, note)`` from ``GET {url}/models``: None with the reason when it lists none (no such endpoint,
    an error status, a body that is not a model list, a slow answer). ServerDown when nothing answers, NoModel for
    a URL that is not http(s); their messages say to fix ``fix`` (where the URL came from)."""
    import httpx

    if urlsplit(url).scheme not in ("http", "https"):
        raise NoModel(f"The model server URL {masked_url(url)} does not start with http:// or https://: fix {fix}.")
    key = os.environ.get("OPENAI_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    label = masked_url(url.rstrip("/"))
    try:
        reply = httpx.get(url.rstrip("/") + "/models", headers=headers, timeout=timeout_s)
    except httpx.ReadTimeout:  # connected: a server that is busy (loading a model, say) still counts as up
        return None, f"did not list its models within {timeout_s:g} s"
    except (httpx.TransportError, httpx.InvalidURL, ValueError) as exc:
        raise ServerDown(
            f"The model server at {label} did not answer ({why_not(exc, timeout_s)}): start it or fix {fix}."
        ) from None
    if reply.status_code != 200:
        return None, f"answered GET /models with HTTP {reply.status_code}"
    try:
        data = reply.json().get("data")
        models = [str(m["id"]) for m in data if isinstance(m, Mapping) and m.get("id")]
    except (ValueError, AttributeError, TypeError):
        return None, "did not answer GET /models with a model list"
    return models, "lists no models" if not models else ""


def check_server(settings: Mapping[str, Any], timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """The model a local server serves when none was chosen (``--model``, as recorded, $REPLANGRAPH_MODEL), else
    None (the chosen one, or OpenAI's default, is used). Without a base URL nothing is asked. ServerDown when the
    server does not answer; NoModel when none was chosen and it serves none or several."""
    url = base_url(settings)
    if not url:
        return None
    models, note = listed_models(url, timeout_s, "--base-url" if settings.get("base_url") else "$OPENAI_BASE_URL")
    if settings.get("model") or os.environ.get(MODEL_ENV):
        return None
    label = masked_url(url.rstrip("/"))
    if models and len(models) == 1:
        return models[0]
    if models:
        raise NoModel(f"The server at {label} serves several models: pass --model, one of: {', '.join(models)}.")
    raise NoModel(f"The server at {label} {note}, so replangraph cannot tell which model to use: pass --model NAME.")


CONNECTION_MARKS = ("connectionerror", "connecterror", "connection error", "connection refused", "connecttimeout")


def is_connection_error(error: str | None) -> bool:
    """Whether a subtask's recorded error says the model server could not be reached."""
    text = (error or "").lower()
    return any(mark in text for mark in CONNECTION_MARKS)


def lost_server(values: Mapping[str, Any]) -> bool:
    """Whether a run failed only because the model server stopped answering: some subtask failed, and every
    failure was a connection error."""
    failed = [t for t in (values.get("tasks") or {}).values() if t.get("status") == "failed"]
    return bool(failed) and all(is_connection_error(t.get("error")) for t in failed)
