"""DuckDuckGoHTML: a keyless `SearchProvider` reading DuckDuckGo's HTML result page with httpx.

`parse_duckduckgo_html` turns such a page into `SearchResult`s; `result_url` and `is_ad_link` read its links.
`replangraph.tools.search.internet_search` re-exports the names in ``__all__``.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import parse_qs, urljoin, urlsplit, urlunsplit

import httpx

from replangraph.tools.search.search_results import (
    MAX_SNIPPET_CHARS,
    MAX_TITLE_CHARS,
    SearchPageError,
    SearchRateLimited,
    SearchResult,
    SearchTimeout,
    SearchUnavailable,
    clean_text,
    clip,
    url_key,
)

DUCKDUCKGO_HTML_URL = "https://html.duckduckgo.com/html/"
DEFAULT_USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
__all__ = [
    "DEFAULT_USER_AGENT",
    "DUCKDUCKGO_HTML_URL",
    "DuckDuckGoHTML",
    "is_ad_link",
    "parse_duckduckgo_html",
    "result_url",
]


class DuckDuckGoHTML:
    """`SearchProvider` reading DuckDuckGo's keyless HTML result page (``GET base_url?q=...``) with httpx.

    Connecting and each read wait at most ``timeout_s``; a page still arriving ``timeout_s`` after the
    request started is given up (checked as data arrives), and at most ``max_bytes`` of it are read.
    ``client`` replaces the httpx client made for each search (it is used as given and not closed). The client
    made here follows no redirect to a private or loopback address (`refuse_private_redirects`).
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
            hooks = {"request": [refuse_private_redirects(self.base_url)]}
            with httpx.Client(
                timeout=httpx.Timeout(self.timeout_s), follow_redirects=True, event_hooks=hooks
            ) as client:
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


def is_private_host(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or is, or resolves to, an address that is not global: loopback, private,
    link-local, reserved. A name that does not resolve is not (its request fails on its own)."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in socket.getaddrinfo(host, None)]
        except (OSError, ValueError):
            return False
    mapped = [getattr(a, "ipv4_mapped", None) or a for a in addresses]
    return any(not a.is_global for a in mapped)


def refuse_private_redirects(start: str):
    """An httpx request hook: a request that leaves ``start``'s origin (a redirect) for a private or loopback
    address is refused with `SearchUnavailable` before it is sent."""
    parts = urlsplit(start)
    origin = (parts.scheme.lower(), parts.netloc.lower())

    def check(request: httpx.Request) -> None:
        url = request.url
        if (url.scheme, url.netloc.decode("ascii").lower()) != origin and is_private_host(url.host):
            raise SearchUnavailable(
                f"the search service redirected to a private or local address ({url.host}), which is not followed"
            )

    return check


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
