"""What search providers and the internet_search tool share: `SearchResult`, the `SearchProvider` protocol,
the `SearchError` family, and text helpers (`clean_text`, `clip`, `url_key`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

MAX_TITLE_CHARS = 200
MAX_SNIPPET_CHARS = 400


@dataclass(frozen=True)
class SearchResult:
    """One search hit."""

    title: str
    snippet: str
    url: str


@runtime_checkable
class SearchProvider(Protocol):
    """A search source: the best ``top_k`` results for ``query``, best first; `SearchError` when it cannot search."""

    def search(self, query: str, top_k: int) -> list[SearchResult]: ...


class SearchError(Exception):
    """A search that could not be done; the message says what happened, in words for the agent."""

    kind = "failed"
    advice = "Try again later or rephrase."


class SearchTimeout(SearchError):
    """The search service did not answer in time."""

    kind = "timeout"


class SearchUnavailable(SearchError):
    """The search service could not be reached, or answered with an HTTP error."""

    kind = "unavailable"
    advice = "Try again later; if it keeps failing, go on without web search."


class SearchRateLimited(SearchError):
    """The search service refused to answer now (rate limit or bot check)."""

    kind = "rate_limited"
    advice = "Do not search again at once: wait a while, or go on with what you have."


class SearchPageError(SearchError):
    """The answer could not be read as a result page."""

    kind = "parse"
    advice = "Searching again will not help; go on without web search."


def url_key(url: str) -> str:
    """``url`` for spotting repeats: scheme and host in lower case, no fragment, no trailing slash."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))


def clean_text(text: str) -> str:
    """``text`` with runs of whitespace as single spaces."""
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, at a word where one is near, ending in "…" when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"
