"""The model server, checked before a run: does it answer, does it take the key, and which model does it serve.

With a base URL (``--base-url`` or $OPENAI_BASE_URL), ``GET {base_url}/models`` is asked once with a short
timeout: a server that does not answer ends the command at once (exit 4, the URL named) instead of after the
run's retries, and a local server's model is taken from its list rather than sending OpenAI's default name.
Without one, OpenAI's ``/models`` is asked the same way when $OPENAI_API_KEY is set (its list is not used): no
network, or a key it refuses, is said before the run instead of after it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from replangraph.durable import SECRET_NAME, masked_url

PROBE_TIMEOUT_S = 3.0
OPENAI_URL = "https://api.openai.com/v1"
MODEL_ENV = "REPLANGRAPH_MODEL"
BASE_URL_ENV = "OPENAI_BASE_URL"
KEY_ENV = "OPENAI_API_KEY"


class ServerDown(Exception):
    """The model server did not answer; the message names it and what to fix (exit code 4)."""


class NoModel(Exception):
    """No model could be chosen for the server, or its URL is malformed; the message says what to pass (exit 2)."""


class KeyRefused(NoModel):
    """The server refused the API key (HTTP 401 or 403); the message says to set another (exit 2, as NoModel)."""


def env_base_url(given: str | None = None) -> str | None:
    """``given`` (``--base-url``, or as recorded), else $OPENAI_BASE_URL, else None (OpenAI)."""
    return given or os.environ.get(BASE_URL_ENV) or None


def base_url(settings: Mapping[str, Any]) -> str | None:
    """The OpenAI-compatible server the run talks to: ``--base-url`` (or as recorded), else $OPENAI_BASE_URL."""
    return env_base_url(settings.get("base_url"))


def url_without_secrets(url: str | None) -> str | None:
    """``url`` as it may be stored: without its user part (``user:password@``) and without the query parameters
    whose names look secret (`SECRET_NAME`)."""
    if not url:
        return url
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not SECRET_NAME.search(k)]
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query=urlencode(query)))


def url_label(url: str) -> str:
    """A server's URL as messages name it: masked (`masked_url`), without a trailing slash."""
    parts = urlsplit(url)
    return masked_url(urlunsplit(parts._replace(path=parts.path.rstrip("/"))))


def endpoint(url: str, path: str) -> str:
    """``path`` (``/models``) under the server at ``url``: after its path, before its query string."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path))


def without_query(url: str) -> tuple[str, dict[str, str]]:
    """``(url without its query string, the query's parameters)``: the OpenAI client appends its paths to the whole
    base URL, so a query must travel as its ``default_query``."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query="")), dict(parse_qsl(parts.query, keep_blank_values=True))


def is_openai(url: str) -> bool:
    """Whether ``url`` is OpenAI's API (the host and port of ``OPENAI_URL``): not a server of the user's to start."""

    def place(address: str) -> tuple[str | None, int | None]:
        parts = urlsplit(address)
        try:
            return parts.hostname, parts.port or {"http": 80, "https": 443}.get(parts.scheme)
        except ValueError:  # a port that is not a number
            return parts.hostname, None

    return place(url) == place(OPENAI_URL)


def fix_phrase(url: str, source: str | None = None) -> str:
    """What to do when the server at ``url`` does not answer. ``source`` is where the URL came from
    (``--base-url``, $OPENAI_BASE_URL), None for OpenAI's default URL."""
    if is_openai(url):
        return f"check your network connection or {f'fix {source}' if source else 'pass --base-url'}"
    return f"start it or fix {source or '--base-url'}"


def lost_server_message(settings: Mapping[str, Any]) -> str:
    """The sentence that ends a run whose model server stopped answering (see `lost_server`)."""
    url = base_url(settings) or OPENAI_URL
    fix = "check your network connection" if is_openai(url) else "start it"
    return (
        f"The model server at {url_label(url)} stopped answering during the run (connection error): {fix} and run "
        "the goal again."
    )


def paused_message(settings: Mapping[str, Any], down: Exception) -> str:
    """The sentence that pauses a run whose model server stopped answering (``down``: `ModelServerDown`)."""
    url = base_url(settings) or getattr(down, "url", None) or OPENAI_URL
    cause = down.__cause__ or down
    what = "timed out" if "timeout" in type(cause).__name__.lower() else "connection error"
    fix = "check your network connection" if is_openai(url) else "start it"
    return (
        f"The model server at {url_label(url)} stopped answering during the run ({what}); the run is paused, "
        f"nothing failed: {fix}."
    )


def why_not(exc: Exception, timeout_s: float) -> str:
    """Why a request got no answer, in a few words."""
    import httpx  # optional: comes with the OpenAI client

    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {timeout_s:g} s"
    text = str(exc).lower()
    if "refused" in text:
        return "connection refused"
    if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
        return "its host name was not found"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def listed_models(
    url: str, timeout_s: float = PROBE_TIMEOUT_S, source: str | None = "--base-url"
) -> tuple[list[str] | None, str]:
    """``(model ids, note)`` from ``GET {url}/models``: None with the reason when it lists none (no such endpoint,
    an error status, a body that is not a model list, a slow answer). ServerDown when nothing answers, KeyRefused
    for HTTP 401/403, NoModel for a URL that is not http(s); their messages say what to fix (``source``: where the
    URL came from, None for OpenAI's default, see `fix_phrase`)."""
    import httpx  # optional: comes with the OpenAI client

    label = url_label(url)
    if urlsplit(url).scheme not in ("http", "https"):
        raise NoModel(
            f"The model server URL {label} does not start with http:// or https://: fix {source or '--base-url'}."
        )
    key = os.environ.get(KEY_ENV)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        reply = httpx.get(endpoint(url, "/models"), headers=headers, timeout=timeout_s)
    except httpx.ReadTimeout:  # connected: a server that is busy (loading a model, say) still counts as up
        return None, f"did not list its models within {timeout_s:g} s"
    except (httpx.TransportError, httpx.InvalidURL, ValueError) as exc:
        raise ServerDown(
            f"The model server at {label} did not answer ({why_not(exc, timeout_s)}): {fix_phrase(url, source)}."
        ) from None
    if reply.status_code in (401, 403):
        raise KeyRefused(
            f"The model server at {label} refused the API key (HTTP {reply.status_code}): "
            f"set {KEY_ENV} to a key it accepts."
        )
    if reply.status_code != 200:
        note = f"answered GET /models with HTTP {reply.status_code}"
        if reply.status_code == 404 and not urlsplit(url).path.rstrip("/").endswith("/v1"):
            note += f" (did you mean {label}/v1?)"
        return None, note
    try:
        data = reply.json().get("data")
        models = [str(m["id"]) for m in data if isinstance(m, Mapping) and m.get("id")]
    except (ValueError, AttributeError, TypeError):
        return None, "did not answer GET /models with a model list"
    return models, "lists no models" if not models else ""


def check_server(settings: Mapping[str, Any], timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """The model a local server serves when none was chosen (``--model``, as recorded, $REPLANGRAPH_MODEL), else
    None (the chosen one, or OpenAI's default, is used). Without a base URL, OpenAI is asked when a key is set (its
    list is not used), else nothing. ServerDown when the server does not answer; KeyRefused when it refuses the
    key; NoModel when none was chosen and it serves none or several."""
    url = base_url(settings)
    if not url:
        if os.environ.get(KEY_ENV):
            listed_models(OPENAI_URL, timeout_s, None)
        return None
    models, note = listed_models(url, timeout_s, "--base-url" if settings.get("base_url") else f"${BASE_URL_ENV}")
    if settings.get("model") or os.environ.get(MODEL_ENV):
        return None
    label = url_label(url)
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
