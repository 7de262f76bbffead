"""DuckDuckGoHTML against a loopback server serving recorded result pages; no other host is ever contacted."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from clocks import Ticking
from langchain_core.messages import ToolMessage
from scripting import make_model, plan_of, run

from replangraph import build_graph
from replangraph.testing import tool_call
from replangraph.tools.search import SearchResult, duckduckgo, internet_search_tool
from replangraph.tools.search.duckduckgo import DuckDuckGoHTML, parse_duckduckgo_html, result_url

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "search"
ASYNCIO = "python asyncio"
TWO = "langgraph replanning agent split subtasks"
NOTHING = "qzxv wqpt ploomf"
TOP_ASYNCIO = [
    "https://docs.python.org/3/library/asyncio.html",
    "https://realpython.com/async-io-python/",
    "https://docs.python.org/3/library/asyncio-task.html",
]
TRUNCATED = """<html><body><div class="serp__results"><div id="links" class="results">
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
<h2 class="result__title">asyncio — Asynchronous I/O</h2></div></div>
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
<h2 class="result__title">Coroutines and Tasks</h2></div></div>"""
# query -> (status, body: a page under fixtures/search or literal text, extra headers)
ROUTES: dict[str, tuple[int, str, dict[str, str]]] = {
    ASYNCIO: (200, "ddg_python_asyncio.html", {}),
    TWO: (200, "ddg_two_results.html", {}),
    NOTHING: (200, "ddg_no_results.html", {}),
    "page changed": (200, "changed_layout.html", {}),
    "truncated page": (200, TRUNCATED, {}),
    "empty page": (200, "", {}),
    "bot check": (202, "ddg_challenge.html", {}),
    "bot check ok status": (200, "ddg_challenge.html", {}),
    "server error": (500, "<html><body><h1>500 Internal Server Error</h1></body></html>", {}),
    "too many": (429, "<html><body>Too Many Requests</body></html>", {"Retry-After": "30"}),
    "latin page": (200, "ddg_latin1.html", {"Content-Type": "text/html; charset=ISO-8859-1"}),
}


@dataclass
class Server:
    url: str
    requests: list[dict] = field(default_factory=list)

    def queries(self) -> list[str]:
        return [r["query"] for r in self.requests]


def page_body(source: str) -> bytes:
    return (PAGES / source).read_bytes() if source.endswith(".html") else source.encode()


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch) -> Iterator[None]:
    """No proxy from the environment, and every httpx request refused unless it goes to 127.0.0.1."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    foreign: list[str] = []
    original = httpx.HTTPTransport.handle_request

    def guarded(self, request: httpx.Request) -> httpx.Response:
        if request.url.host != "127.0.0.1":
            foreign.append(str(request.url))
            raise httpx.ConnectError("tests only reach 127.0.0.1", request=request)
        return original(self, request)

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", guarded)
    yield
    assert not foreign, f"a test tried to leave the machine: {foreign}"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """Serves the recorded pages on 127.0.0.1 at ``/html/?q=<query>``; "slow page" is a page without end."""
    state = Server(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = (parse_qs(parts.query).get("q") or [""])[0]
            state.requests.append({"path": parts.path, "query": query, "headers": dict(self.headers)})
            if query == "slow page":
                return self.trickle()
            status, source, headers = ROUTES.get(query, (404, "<html><body>Not Found</body></html>", {}))
            body = page_body(source)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            for name, value in {"Content-Type": "text/html; charset=UTF-8", **headers}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def trickle(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=UTF-8")
            self.end_headers()
            try:
                for _ in range(100_000):  # every read comes quickly, the end of the page never does
                    self.wfile.write(b"<div>" * 50)
                    self.wfile.flush()
            except OSError:  # the client gave up
                pass

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/html/"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A port on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # the kernel completes the handshake; nothing ever reads or writes
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/html/"
    finally:
        listener.close()


@pytest.fixture
def closed_port() -> str:
    """A URL on 127.0.0.1 where nothing listens."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}/html/"


def ddg(url: str, timeout_s: float = 2.0) -> DuckDuckGoHTML:
    return DuckDuckGoHTML(base_url=url, timeout_s=timeout_s)


def call(tool, args: dict) -> ToolMessage:
    """The tool's reply to a model's tool call with ``args``."""
    return tool.invoke({"name": tool.name, "args": args, "id": "call_1", "type": "tool_call"})


# --------------------------------------------------------------------------- the DuckDuckGo provider


@pytest.mark.system
def test_top_three_with_redirects_decoded_ads_and_repeats_dropped(server):
    results = ddg(server.url).search(ASYNCIO, 3)
    assert [r.url for r in results] == TOP_ASYNCIO  # the ad and the repeated docs link are gone
    assert results[0] == SearchResult(
        title="asyncio — Asynchronous I/O — Python 3.13.1 documentation",
        snippet=(
            "asyncio is a library to write concurrent code using the async/await syntax. asyncio is used as a "
            "foundation for multiple Python asynchronous frameworks that provide high-performance network and "
            "web-servers, database connection libraries, distributed task queues, etc."
        ),
        url=TOP_ASYNCIO[0],
    )
    assert results[1].title == "Python's asyncio: A Hands-On Walkthrough – Real Python"
    assert results[1].snippet.startswith("Explore how Python asyncio works & when to use it.")
    sent = server.requests[-1]
    assert sent["path"] == "/html/" and sent["query"] == ASYNCIO
    assert sent["headers"]["User-Agent"].startswith("Mozilla/5.0")


def test_the_whole_page_keeps_page_order_and_decodes_query_strings():
    results = parse_duckduckgo_html((PAGES / "ddg_python_asyncio.html").read_text())
    assert [r.url for r in results] == [
        *TOP_ASYNCIO,
        "https://stackoverflow.com/questions/tagged/python-asyncio?tab=Votes&page=2",
    ]
    assert results[3].title == "Newest 'python-asyncio' Questions - Stack Overflow"


@pytest.mark.parametrize(
    ("href", "url"),
    [
        ("//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2Fx%3Fy%3D1%26z%3D2&rut=ab", "https://a.example/x?y=1&z=2"),
        ("/l/?uddg=http%3A%2F%2Fb.example%2F&rut=cd", "http://b.example/"),
        ("https://duckduckgo.com/l/?uddg=https%3A%2F%2Fc.example%2Fp%23frag", "https://c.example/p#frag"),
        ("https://d.example/direct", "https://d.example/direct"),
        ("https://d.example/l/?uddg=kept", "https://d.example/l/?uddg=kept"),  # not the redirector
        ("//e.example/protocol-relative", "https://e.example/protocol-relative"),
        ("javascript:void(0)", ""),
        ("//duckduckgo.com/l/?uddg=&rut=ef", ""),
        ("", ""),
    ],
)
def test_result_links(href, url):
    assert result_url(href) == url


def test_a_result_without_snippet_or_title_text_is_kept():
    page = """<div id="links" class="results">
    <div class="result results_links web-result"><div class="links_main result__body">
      <h2 class="result__title"><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2F">
        </a></h2></div></div>
    <div class="result results_links web-result"><div class="links_main result__body">
      <h2 class="result__title"><a class="result__a" href="https://b.example/">B<br>title</a></h2>
      <div class="result__snippet">Snippet in a div<br/>on two lines</div></div></div>
    </div>"""
    assert parse_duckduckgo_html(page) == [
        SearchResult(title="https://a.example/", snippet="", url="https://a.example/"),
        SearchResult(title="B title", snippet="Snippet in a div on two lines", url="https://b.example/"),
    ]


@pytest.mark.system
def test_fewer_results_than_asked(server):
    results = ddg(server.url).search(TWO, 3)
    assert [r.title for r in results] == [
        "Plan-and-Execute - LangGraph",
        "Agents that split their own work & re-queue it",
    ]
    assert results[1].url == "https://blog.example.org/2025/03/agents-that-split-their-own-work?ref=ddg&lang=en#queue"
    assert results[0].snippet == (
        'This notebook shows how to create a "plan-and-execute" style agent. '
        "It first plans, then replans after each step."
    )
    assert results[1].snippet == (
        "Why a running subtask should hand off the rest of its work instead of running out of context."
    )
    text = internet_search_tool(ddg(server.url)).invoke({"query": TWO})
    assert text.startswith(f'Top 2 web result(s) for "{TWO}":') and "\n3." not in text


@pytest.mark.system
def test_the_page_is_read_in_the_charset_its_server_names(server):
    assert ddg(server.url).search("latin page", 3) == [
        SearchResult("Café Crème — Menü", "Déjà vu à la carte.", "https://café.example/menü")
    ]


@pytest.mark.system
def test_a_page_that_found_nothing_is_an_empty_list_not_an_error(server):
    assert ddg(server.url).search(NOTHING, 3) == []
    reply = call(internet_search_tool(ddg(server.url)), {"query": NOTHING})
    assert reply.content.startswith(f'No results for "{NOTHING}". Try fewer or other words')
    assert reply.artifact == {"query": NOTHING, "results": [], "error": None, "status": "empty"}


# --------------------------------------------------------------------------- the tool's text


@pytest.mark.system
def test_the_tool_answers_with_three_numbered_results(server):
    text = internet_search_tool(ddg(server.url)).invoke({"query": ASYNCIO})
    lines = text.splitlines()
    assert lines[0] == f'Top 3 web result(s) for "{ASYNCIO}":'
    assert lines[1] == "1. asyncio — Asynchronous I/O — Python 3.13.1 documentation"
    assert lines[2].startswith("   asyncio is a library to write concurrent code")
    assert [line.strip() for line in lines if "Link:" in line] == [f"Link: {url}" for url in TOP_ASYNCIO]
    assert "4." not in text and "courses.example.com" not in text and "<b>" not in text


@pytest.mark.system
def test_a_tool_call_carries_the_results_as_data(server):
    reply = call(internet_search_tool(ddg(server.url), top_k=5), {"query": ASYNCIO})
    assert isinstance(reply, ToolMessage) and reply.name == "internet_search" and reply.status == "success"
    assert reply.artifact["status"] == "ok" and reply.artifact["query"] == ASYNCIO
    assert [r["url"] for r in reply.artifact["results"]][:3] == TOP_ASYNCIO
    assert len(reply.artifact["results"]) == 4  # top_k 5, and the page holds 4 distinct results
    assert set(reply.artifact["results"][0]) == {"title", "snippet", "url"}


# --------------------------------------------------------------------------- failures become observations


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("page changed", "the search service sent a page without a results section; its layout may have changed"),
        ("empty page", "the search service sent an empty page; its layout may have changed"),
        ("truncated page", "the result page has 2 result block(s) but no result link in any"),
    ],
)
@pytest.mark.system
def test_a_page_that_cannot_be_read_is_a_parse_error_observation(server, query, says):
    reply = call(internet_search_tool(ddg(server.url)), {"query": query})
    assert reply.content.startswith(f"Search failed: {says}")
    assert f'(query: "{query}")' in reply.content and "Searching again will not help" in reply.content
    assert reply.artifact["status"] == "error" and reply.artifact["error"] == "parse"


@pytest.mark.system
def test_http_500_is_an_observation(server):
    reply = call(internet_search_tool(ddg(server.url)), {"query": "server error"})
    assert reply.content == (
        'Search failed: the search service answered with an error (HTTP 500) (query: "server error"). '
        "Try again later; if it keeps failing, go on without web search."
    )
    assert reply.artifact["error"] == "unavailable"


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("too many", "the search service is refusing requests for now (HTTP 429; it asks to wait 30 s)"),
        ("bot check", "the search service is refusing requests for now (HTTP 202)"),
        ("bot check ok status", "the search service asked to prove this is not a bot (a rate limit)"),
    ],
)
@pytest.mark.system
def test_rate_limits_and_the_bot_check_are_observations(server, query, says):
    reply = call(internet_search_tool(ddg(server.url)), {"query": query})
    assert reply.content.startswith(f"Search failed: {says}")
    assert "Do not search again at once" in reply.content
    assert reply.artifact["error"] == "rate_limited"


@pytest.mark.system
def test_a_server_that_never_answers_times_out_within_the_configured_time(silent_server, monkeypatch):
    sent: list[dict] = []
    guarded = httpx.HTTPTransport.handle_request  # `loopback_only`'s

    def recorded(self, request: httpx.Request) -> httpx.Response:
        sent.append(request.extensions["timeout"])
        return guarded(self, request)

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", recorded)
    text = internet_search_tool(ddg(silent_server, timeout_s=0.5)).invoke({"query": ASYNCIO})
    assert text == (
        f'Search failed: the search service did not answer within 0.5 s (query: "{ASYNCIO}"). '
        "Try again later or rephrase."
    )
    assert sent == [{"connect": 0.5, "read": 0.5, "write": 0.5, "pool": 0.5}]  # one request, on the configured time


@pytest.mark.system
def test_a_page_that_keeps_trickling_is_given_up_after_the_configured_time(server, monkeypatch):
    """Every read of the endless page comes quickly; the tool's own clock (read before the request and after each
    read of the page; here 0.125 s apart) ends it once more than 0.5 s have passed: after the fifth read."""
    clock = Ticking(0.125)
    monkeypatch.setattr(duckduckgo, "time", clock)
    text = internet_search_tool(ddg(server.url, timeout_s=0.5)).invoke({"query": "slow page"})
    assert text.startswith("Search failed: the search service did not send its page within 0.5 s")
    assert clock.reads == 6


def test_connection_refused_is_an_observation(closed_port):
    reply = call(internet_search_tool(ddg(closed_port, timeout_s=1)), {"query": ASYNCIO})
    assert reply.content.startswith("Search failed: could not reach the search service (")
    assert reply.artifact == {"query": ASYNCIO, "results": [], "error": "unavailable", "status": "error"}


# --------------------------------------------------------------------------- inside the graph


def searching_agent(seen: list):
    """An agent that searches once, then answers with the first link it was given (or the failure)."""

    def work(request):
        seen.append(request.tool_names)
        found = request.last_result("internet_search")
        if found is None:
            return tool_call("internet_search", {"q": ASYNCIO})
        link = re.search(r"Link: (\S+)", found)
        return f"The asyncio reference is {link.group(1)}" if link else f"No reference found: {found}"

    return work


@pytest.mark.system
def test_the_agent_loop_uses_the_tool_and_the_result_reaches_the_final_answer(server):
    seen: list = []
    before = len(server.requests)
    plan = plan_of({"id": "1", "content": "Find the official asyncio documentation", "depends_on": []})
    graph = build_graph(make_model(plan, searching_agent(seen)), tools=[internet_search_tool(ddg(server.url))])
    out, _ = run(graph, "Where is the asyncio documentation?")
    assert "internet_search" in seen[0]
    assert out["tasks"]["1"]["status"] == "completed"
    assert f"The asyncio reference is {TOP_ASYNCIO[0]}" in out["final_answer"]
    assert server.queries()[before:] == [ASYNCIO]


def test_a_failed_search_inside_the_graph_is_an_observation_the_agent_reports(closed_port):
    plan = plan_of({"id": "1", "content": "Find the official asyncio documentation", "depends_on": []})
    tools = [internet_search_tool(ddg(closed_port, timeout_s=1))]
    out, _ = run(build_graph(make_model(plan, searching_agent([])), tools=tools))
    assert out["tasks"]["1"]["status"] == "completed"
    assert "No reference found: Search failed: could not reach the search service" in out["final_answer"]


@pytest.fixture
def internal_service() -> Iterator[list[str]]:
    """Another loopback server, standing for a service inside the network; the paths it was asked for."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"secret")

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    asked.append(f"http://127.0.0.1:{httpd.server_address[1]}")  # asked[0]: where it listens
    try:
        yield asked
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.system
@pytest.mark.parametrize("target", ["internal", "http://localhost:9/admin", "http://10.0.0.1/", "http://[::1]/"])
def test_a_redirect_to_a_private_or_loopback_address_is_not_followed(server, internal_service, monkeypatch, target):
    location = f"{internal_service[0]}/metadata" if target == "internal" else target
    monkeypatch.setitem(ROUTES, "redirected", (302, "", {"Location": location}))
    reply = call(internet_search_tool(ddg(server.url)), {"query": "redirected"})
    assert reply.content.startswith("Search failed: the search service redirected to a private or local address")
    assert reply.artifact["error"] == "unavailable"
    assert internal_service[1:] == []  # nothing was asked there


@pytest.mark.system
def test_a_redirect_within_the_search_service_is_followed(server, monkeypatch):
    monkeypatch.setitem(ROUTES, "moved", (301, "", {"Location": f"{server.url}?q={ASYNCIO.replace(' ', '+')}"}))
    reply = call(internet_search_tool(ddg(server.url)), {"query": "moved"})
    assert reply.artifact["status"] != "error", reply.content
    assert TOP_ASYNCIO[0] in reply.content


@pytest.mark.parametrize(
    ("host", "private"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("10.1.2.3", True),
        ("169.254.169.254", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("192.168.0.1", True),
        ("8.8.8.8", False),
        ("2001:4860:4860::8888", False),
    ],
)
def test_which_hosts_are_private(host, private):
    assert duckduckgo.is_private_host(host) is private
