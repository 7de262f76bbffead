"""internet_search: a web search tool whose source is injected.

`internet_search_tool(provider)` builds the ``internet_search`` tool an agent calls with a query; it answers
with the top results (title, snippet, link) as short numbered text, and reports every failure (the network,
an HTTP error, rate limiting, a page it cannot read, no results, an empty query) as a message the agent can
act on, never as an exception. The search itself is the provider's: `DuckDuckGoHTML` (in
`replangraph.tools.search.duckduckgo`, importable from here too) reads DuckDuckGo's keyless HTML endpoint with httpx.
To plug in another source, pass an object with a method ``search(query: str, top_k: int) -> list[SearchResult]``
(a `SearchProvider`; results may also be dicts or objects with ``title``, ``snippet`` and ``url``), raising
`SearchError` or one of its subclasses, with a message written for the agent, when a search cannot be done;
any other exception is reported by its type and (clipped) message. Links other than http(s) are dropped.
The graph and the agent loop never see which provider runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict
from itertools import islice
from typing import Any
from urllib.parse import urlsplit

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, ValidationError

from replangraph.llm.reading import as_text, text_field
from replangraph.tools.search.search_results import (
    MAX_SNIPPET_CHARS,
    MAX_TITLE_CHARS,
    SearchError,
    SearchProvider,
    SearchResult,
    clean_text,
    clip,
    url_key,
)

__all__ = ["internet_search_tool", "search_observation"]
"""The family's whole API is `replangraph.tools.search`."""

TOOL_NAME = "internet_search"
DEFAULT_TOP_K = 3
MAX_QUERY_CHARS = 400
MAX_ERROR_CHARS = 300
"""Longest error message of a provider the agent is shown."""
QUERY_NAMES = ("query", "q", "search", "text", "search_query", "searchQuery", "keywords", "terms", "question")
TOOL_DESCRIPTION = (
    "Search the web. Give `query`: a few keywords, as you would type them into a search engine. "
    "Returns the top results, each with its title, a snippet and its link. Use it for facts you do not "
    "know or that may have changed; cite the links you rely on."
)
QUERY_DESCRIPTION = "What to search for: a few keywords, e.g. 'python asyncio timeout'."


def web_link(url: str) -> str:
    """``url`` when it is an http(s) link with a host, else ""."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. a bad IPv6 host
        return ""
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else ""


def said(exc: BaseException) -> str:
    """The message of ``exc``, whitespace cleaned and clipped to ``MAX_ERROR_CHARS`` ("" when it cannot be read)."""
    try:
        text = str(exc)
    except Exception:  # a __str__ that raises
        return ""
    return clip(clean_text(text), MAX_ERROR_CHARS)


# --------------------------------------------------------------------------- the tool


def as_results(found: Any, most: int | None = None) -> list[SearchResult]:
    """`SearchResult`s, whitespace cleaned, from the first ``most`` items a provider returned (None: nothing):
    results, mappings or objects with title, snippet and url (``link``/``href``, ``body``/``description`` are
    read too); a link other than http(s) is dropped, an item with neither link nor title too. `SearchError`
    when ``found`` is not a list of such items."""
    if found is None:
        return []
    if isinstance(found, str | bytes | Mapping) or not isinstance(found, Iterable):
        raise SearchError(f"the search provider returned {type(found).__name__}, not a list of results")
    results, seen = [], 0
    for item in islice(found, most):
        seen += 1
        get = item.get if isinstance(item, Mapping) else lambda key, obj=item: getattr(obj, key, None)
        url = web_link(first_text(get, ("url", "link", "href")))
        title = first_text(get, ("title", "name"))
        snippet = first_text(get, ("snippet", "body", "description", "content", "text"))
        if url or title:
            results.append(SearchResult(title=title, snippet=snippet, url=url))
    if not results and seen:
        raise SearchError(f"the search provider returned {seen} result(s) without a title or a web link")
    return results


def first_text(get: Any, keys: tuple[str, ...]) -> str:
    """The first non-empty text among ``get(key)`` for ``keys``, whitespace cleaned."""
    for key in keys:
        text = clean_text(as_text(get(key)))
        if text:
            return text
    return ""


def search_observation(provider: SearchProvider, query: Any, top_k: int = DEFAULT_TOP_K) -> tuple[str, dict]:
    """The tool's answer to ``query``: the text for the agent, and the same as data
    (``{"status": "ok" | "empty" | "refused" | "error", "query", "results", "error"}``)."""
    text = clean_text(as_text(query))
    note = ""
    if len(text) > MAX_QUERY_CHARS:
        text, note = clip(text, MAX_QUERY_CHARS).removesuffix("…"), f" (query cut to {MAX_QUERY_CHARS} characters)"
    data: dict[str, Any] = {"query": text, "results": [], "error": None}
    if not text:
        message = (
            "Search refused: the query is empty. Call internet_search again with the words to search for, "
            'e.g. {"query": "python asyncio timeout"}.'
        )
        return message, {**data, "status": "refused", "error": "empty_query"}
    quoted = f'"{text}"'
    try:
        found = as_results(provider.search(text, top_k), most=max(top_k * 10, 50))
    except GraphBubbleUp:  # an interrupt (e.g. a provider asking the user) is LangGraph's, not a failure
        raise
    except SearchError as exc:
        message = f"Search failed: {said(exc) or 'the search could not be done'} (query: {quoted}). {exc.advice}"
        return message, {**data, "status": "error", "error": exc.kind}
    except Exception as exc:  # a provider's own bug or library error: the agent still gets an answer
        why = f"{type(exc).__name__}: {message}" if (message := said(exc)) else type(exc).__name__
        message = f"Search failed: the search provider raised {why} (query: {quoted}). "
        return message + SearchError.advice, {**data, "status": "error", "error": type(exc).__name__}
    results, seen = [], set()
    for result in found:
        key = url_key(result.url) if result.url else result.title
        if key not in seen:
            seen.add(key)
            results.append(result)
    results = results[:top_k]
    if not results:
        message = f"No results for {quoted}{note}. Try fewer or other words, or go on without web search."
        return message, {**data, "status": "empty"}
    lines = [f"Top {len(results)} web result(s) for {quoted}{note}:"]
    for n, result in enumerate(results, 1):
        lines.append(f"{n}. {clip(result.title, MAX_TITLE_CHARS) or '(no title)'}")
        if result.snippet:
            lines.append(f"   {clip(result.snippet, MAX_SNIPPET_CHARS)}")
        lines.append(f"   Link: {result.url or '(none)'}")
    return "\n".join(lines), {**data, "status": "ok", "results": [asdict(r) for r in results]}


class SearchArgs(BaseModel):
    query: text_field(QUERY_DESCRIPTION, QUERY_NAMES)


def bad_search_arguments(error: ValidationError) -> str:
    """The agent-facing message for a call without a query."""
    return (
        "Search refused: no query was given. Call internet_search again with the words to search for, "
        'e.g. {"query": "python asyncio timeout"}.'
    )


def internet_search_tool(provider: SearchProvider, top_k: int = DEFAULT_TOP_K) -> BaseTool:
    """The ``internet_search`` tool, answering with the top ``top_k`` results of ``provider``.

    Called as a tool call it returns a ToolMessage whose ``artifact`` holds the answer as data
    (see `search_observation`); called with plain arguments, the text.
    """
    if isinstance(provider, type):
        raise TypeError(f"provider must be an object, not a class: pass an instance, e.g. {provider.__name__}()")
    if not callable(getattr(provider, "search", None)):
        raise TypeError(f"provider must have a search(query, top_k) method, got {type(provider).__name__}")
    if top_k < 1:
        raise ValueError("top_k must be at least 1")

    def internet_search(query: Any) -> tuple[str, dict]:
        return search_observation(provider, query, top_k)

    return StructuredTool.from_function(
        internet_search,
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        args_schema=SearchArgs,
        response_format="content_and_artifact",
        handle_tool_error=True,
        handle_validation_error=bad_search_arguments,
    )
