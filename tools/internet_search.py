"""internet_search: a web search tool whose source is injected.

`internet_search_tool(provider)` builds the ``internet_search`` tool an agent calls with a query; it answers
with the top results (title, snippet, link) as short numbered text, and reports every failure (the network,
an HTTP error, rate limiting, a page it cannot read, no results, an empty query) as a message the agent can
act on, never as an exception. The search itself is the provider's: `DuckDuckGoHTML` reads DuckDuckGo's
keyless HTML endpoint with httpx. To plug in another source, pass any object with a method
``search(query: str, top_k: int) -> list[SearchResult]`` (a `SearchProvider`; results may also be dicts or
objects with ``title``, ``snippet`` and ``url``), raising `SearchError` or one of its subclasses, with a
message written for the agent, when a search cannot be done; any other exception is reported by its type
and message. The graph and the agent loop never see which provider runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from html.parser import HTMLParser
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qs, urljoin, urlsplit, urlunsplit

import httpx
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ValidationError

from replangraph.lenient import as_text, text_field

TOOL_NAME = "internet_search"
DEFAULT_TOP_K = 3
MAX_QUERY_CHARS = 400
MAX_TITLE_CHARS = 200
MAX_SNIPPET_CHARS = 400
DUCKDUCKGO_HTML_URL = "https://html.duckduckgo.com/html/"
DEFAULT_USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
QUERY_NAMES = ("query", "q", "search", "text", "search_query", "searchQuery", "keywords", "terms", "question")
TOOL_DESCRIPTION = (
    "Search the web. Give `query`: a few keywords, as you would type them into a search engine. "
    "Returns the top results, each with its title, a snippet and its link. Use it for facts you do not "
    "know or that may have changed; cite the links you rely on."
)
QUERY_DESCRIPTION = "What to search for: a few keywords, e.g. 'python asyncio timeout'."


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


# --------------------------------------------------------------------------- DuckDuckGo


class DuckDuckGoHTML:
    """`SearchProvider` reading DuckDuckGo's keyless HTML result page (``GET base_url?q=...``) with httpx.

    Connecting and each read wait at most ``timeout_s``; a page still arriving ``timeout_s`` after the
    request started is given up (checked as data arrives), and at most ``max_bytes`` of it are read.
    ``client`` replaces the httpx client made for each search (it is used as given and not closed).
    """

    def __init__(
        self,
        base_url: str = DUCKDUCKGO_HTML_URL,
        timeout_s: float = 10.0,
        user_agent: str = DEFAULT_USER_AGENT,
        *,
        max_bytes: int = 2_000_000,
        client: httpx.Client | None = None,
    ):
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.user_agent = user_agent
        self.max_bytes = max_bytes
        self.client = client

    def search(self, query: str, top_k: int) -> list[SearchResult]:
        """The first ``top_k`` organic results for ``query`` (ads left out, links decoded, duplicates dropped)."""
        query = " ".join(query.split())
        if not query or top_k < 1:
            return []
        page = self.fetch(query)
        return parse_duckduckgo_html(page, base_url=self.base_url)[:top_k]

    def fetch(self, query: str) -> str:
        """The result page for ``query``; `SearchError` for a timeout, a network or HTTP error, or a refusal."""
        headers = {
            "User-Agent": self.user_agent,
            "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8",
            "Accept-Language": "en-US,en;q=0.8",
        }
        waited = f"{self.timeout_s:g} s"
        try:
            if self.client is not None:
                return self._get(self.client, query, headers)
            with httpx.Client(timeout=httpx.Timeout(self.timeout_s), follow_redirects=True) as client:
                return self._get(client, query, headers)
        except httpx.TimeoutException:
            raise SearchTimeout(f"the search service did not answer within {waited}") from None
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise SearchUnavailable(f"could not reach the search service ({reason})") from None

    def _get(self, client: httpx.Client, query: str, headers: dict[str, str]) -> str:
        deadline = time.monotonic() + self.timeout_s
        with client.stream("GET", self.base_url, params={"q": query}, headers=headers) as response:
            status = response.status_code
            if status in (202, 403, 429):  # DuckDuckGo answers its bot check with 202
                wait = response.headers.get("Retry-After", "")
                later = f"; it asks to wait {wait} s" if wait.isdigit() else ""
                raise SearchRateLimited(f"the search service is refusing requests for now (HTTP {status}{later})")
            if status >= 400:
                raise SearchUnavailable(f"the search service answered with an error (HTTP {status})")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) >= self.max_bytes:
                    break
                if time.monotonic() > deadline:
                    raise SearchTimeout(f"the search service did not send its page within {self.timeout_s:g} s")
            try:
                return bytes(body).decode(response.encoding or "utf-8", errors="replace")
            except LookupError:  # an unknown charset
                return bytes(body).decode("utf-8", errors="replace")


def parse_duckduckgo_html(page: str, base_url: str = DUCKDUCKGO_HTML_URL) -> list[SearchResult]:
    """The organic results of a DuckDuckGo HTML result page, in page order: tags and extra whitespace
    stripped, ``/l/?uddg=`` redirect links decoded, ads and repeated links dropped. An empty list for a
    page that says it found nothing; `SearchRateLimited` for the bot check, `SearchPageError` for a page
    with no results section or with result blocks none of which holds a link."""
    reader = _ResultPageReader()
    try:
        reader.feed(page)
        reader.close()
    except Exception as exc:  # html.parser rarely raises, but a page that makes it must not escape
        raise SearchPageError(f"the result page could not be read ({type(exc).__name__})") from None
    organic = [block for block in reader.blocks if "result--ad" not in block.classes]
    if reader.challenge and not organic:
        raise SearchRateLimited("the search service asked to prove this is not a bot (a rate limit)")
    if not reader.blocks and not (reader.has_container or reader.says_no_results):
        found = "an empty page" if not page.strip() else "a page without a results section"
        raise SearchPageError(f"the search service sent {found}; its layout may have changed")
    results, seen = [], set()
    for block in organic:
        url = result_url(block.href, base_url)
        if not url or is_ad_link(url):
            continue
        key = url_key(url)
        if key in seen:
            continue
        seen.add(key)
        title = clip(clean_text("".join(block.title or ())), MAX_TITLE_CHARS) or url
        snippet = clip(clean_text("".join(block.snippet or ())), MAX_SNIPPET_CHARS)
        results.append(SearchResult(title=title, snippet=snippet, url=url))
    if organic and not results and not any(block.href for block in organic):
        raise SearchPageError(
            f"the result page has {len(organic)} result block(s) but no result link in any; its layout may have changed"
        )
    return results


@dataclass
class _Block:
    classes: frozenset[str]
    href: str = ""
    title: list[str] | None = None
    snippet: list[str] | None = None


class _ResultPageReader(HTMLParser):
    """Collects ``div.result`` blocks: the ``a.result__a`` link and text, the ``.result__snippet`` text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[_Block] = []
        self.has_container = False
        self.says_no_results = False
        self.challenge = False
        self._depth = 0  # divs open in the current block; 0: outside any block
        self._capture: list[str] | None = None
        self._capture_tag = ""
        self._capture_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = frozenset((values.get("class") or "").split())
        if values.get("id") == "links" or classes & {"results", "serp__results"}:
            self.has_container = True
        if classes & {"no-results", "result--no-result"}:
            self.says_no_results = True
        if values.get("id") == "challenge-form" or any(name.startswith("anomaly-modal") for name in classes):
            self.challenge = True
        if self._capture is not None:
            if tag == self._capture_tag:
                self._capture_depth += 1
            elif tag == "br":
                self._capture.append(" ")
        if tag == "div" and self._depth:
            self._depth += 1
        elif tag == "div" and "result" in classes and "result--no-result" not in classes:
            self.blocks.append(_Block(classes))
            self._depth = 1
            return
        if not self._depth or self._capture is not None:
            return
        block = self.blocks[-1]
        if tag == "a" and "result__a" in classes and block.title is None:
            block.href = (values.get("href") or "").strip()
            block.title = self._start_capture(tag)
        elif "result__snippet" in classes and block.snippet is None:
            block.snippet = self._start_capture(tag)

    def _start_capture(self, tag: str) -> list[str]:
        self._capture, self._capture_tag, self._capture_depth = [], tag, 1
        return self._capture

    def handle_endtag(self, tag: str) -> None:
        if self._capture is not None and tag == self._capture_tag:
            self._capture_depth -= 1
            if not self._capture_depth:
                self._capture = None
        if tag == "div" and self._depth:
            self._depth -= 1
            if not self._depth:
                self._capture = None  # an unclosed link ends with its block

    def handle_data(self, data: str) -> None:
        if self._capture is not None:
            self._capture.append(data)


def result_url(href: str, base_url: str = DUCKDUCKGO_HTML_URL) -> str:
    """The target of a result link: the ``uddg`` parameter of a ``/l/`` redirect, else the link made
    absolute; "" for anything but http(s)."""
    if not href:
        return ""
    parts = urlsplit(urljoin(base_url, href))
    host = parts.netloc.lower()
    redirector = host == urlsplit(base_url).netloc.lower() or host.endswith("duckduckgo.com")
    if redirector and parts.path.rstrip("/") == "/l":  # the redirect: its target or nothing
        parts = urlsplit((parse_qs(parts.query).get("uddg") or [""])[0].strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return ""
    return urlunsplit(parts)


def is_ad_link(url: str) -> bool:
    """Whether ``url`` is DuckDuckGo's ad click-through (``duckduckgo.com/y.js``)."""
    parts = urlsplit(url)
    return parts.netloc.lower().endswith("duckduckgo.com") and parts.path.startswith("/y.js")


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


# --------------------------------------------------------------------------- the tool


def as_results(found: Any) -> list[SearchResult]:
    """`SearchResult`s, whitespace cleaned, from what a provider returned (None: nothing): results,
    mappings or objects with title, snippet and url (``link``/``href``, ``body``/``description`` are read
    too); items with neither url nor title are dropped. `SearchError` when ``found`` is not a list of such items."""
    if found is None:
        return []
    if isinstance(found, str | bytes | Mapping) or not isinstance(found, Iterable):
        raise SearchError(f"the search provider returned {type(found).__name__}, not a list of results")
    results = []
    for item in found:
        get = item.get if isinstance(item, Mapping) else lambda key, obj=item: getattr(obj, key, None)
        url = first_text(get, ("url", "link", "href"))
        title = first_text(get, ("title", "name"))
        snippet = first_text(get, ("snippet", "body", "description", "content", "text"))
        if url or title:
            results.append(SearchResult(title=title, snippet=snippet, url=url))
    if not results and isinstance(found, list | tuple) and found:
        raise SearchError(f"the search provider returned {len(found)} result(s) without a title or a link")
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
        found = as_results(provider.search(text, top_k))
    except SearchError as exc:
        message = f"Search failed: {exc} (query: {quoted}). {exc.advice}"
        return message, {**data, "status": "error", "error": exc.kind}
    except Exception as exc:  # a provider's own bug or library error: the agent still gets an answer
        message = f"Search failed: the search provider raised {type(exc).__name__}: {exc} (query: {quoted}). "
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
