"""The internet_search tool over any provider: its text, its data, and every failure as an observation."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt
from langgraph.types import Command, interrupt
from scripting import make_model, plan_of

from replangraph import build_graph
from replangraph.testing import tool_call
from replangraph.tools.search import (
    DuckDuckGoHTML,
    SearchProvider,
    SearchRateLimited,
    SearchResult,
    SearchUnavailable,
    internet_search_tool,
)


def call(tool, args: dict) -> ToolMessage:
    """The tool's reply to a model's tool call with ``args``."""
    return tool.invoke({"name": tool.name, "args": args, "id": "call_1", "type": "tool_call"})


class Recorder:
    """A provider answering from a fixed list and recording what it was asked."""

    def __init__(self, found=(), error: Exception | None = None):
        self.found, self.error, self.calls = found, error, []

    def search(self, query: str, top_k: int):
        self.calls.append((query, top_k))
        if self.error is not None:
            raise self.error
        return self.found


# --------------------------------------------------------------------------- other providers


def test_any_object_with_search_is_a_provider():
    provider = Recorder(
        [
            SearchResult("One", " first\n ", "https://one.example/"),
            {"title": "Two", "body": "second", "link": "https://two.example/a"},
            {"title": "One again", "snippet": "repeat", "url": "https://ONE.example"},
            {"name": "Three", "description": ["third", "part"], "href": "https://three.example/"},
            {"irrelevant": True},
            {"title": "Four", "url": "https://four.example/"},
        ]
    )
    assert isinstance(provider, SearchProvider)
    text = internet_search_tool(provider).invoke({"query": "anything at all"})
    assert provider.calls == [("anything at all", 3)]
    assert text == "\n".join(
        [
            'Top 3 web result(s) for "anything at all":',
            "1. One",
            "   first",
            "   Link: https://one.example/",
            "2. Two",
            "   second",
            "   Link: https://two.example/a",
            "3. Three",
            "   third part",
            "   Link: https://three.example/",
        ]
    )


@pytest.mark.parametrize(
    ("provider", "says", "kind"),
    [
        (
            Recorder(error=SearchRateLimited("the quota of this key is spent")),
            "the quota of this key is spent",
            "rate_limited",
        ),
        (Recorder(error=RuntimeError("boom")), "the search provider raised RuntimeError: boom", "RuntimeError"),
        (Recorder("a string"), "the search provider returned str, not a list of results", "failed"),
        (Recorder([{"x": 1}, 2]), "the search provider returned 2 result(s) without a title or a web link", "failed"),
    ],
)
def test_a_provider_s_failures_are_observations(provider, says, kind):
    reply = call(internet_search_tool(provider), {"query": "q"})
    assert reply.content.startswith(f'Search failed: {says} (query: "q"). ')
    assert reply.artifact["status"] == "error" and reply.artifact["error"] == kind


class Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("no message")


class UnprintableSearchError(SearchUnavailable):
    def __str__(self) -> str:
        raise ValueError("no message")


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (Unprintable(), "Search failed: the search provider raised Unprintable (query: "),
        (UnprintableSearchError(), "Search failed: the search could not be done (query: "),
        (RuntimeError(""), "Search failed: the search provider raised RuntimeError (query: "),
    ],
)
def test_an_error_whose_message_cannot_be_read_is_still_an_observation(error, says):
    reply = call(internet_search_tool(Recorder(error=error)), {"query": "q"})
    assert reply.content.startswith(says) and reply.artifact["status"] == "error"


@pytest.mark.parametrize("error", [RuntimeError("boom " * 5_000), SearchUnavailable("down\n" * 5_000)])
def test_a_long_error_message_is_clipped(error):
    reply = call(internet_search_tool(Recorder(error=error)), {"query": "q"})
    assert reply.content.startswith("Search failed: ") and len(reply.content) < 500
    assert "…" in reply.content and "\n" not in reply.content


def test_an_endless_provider_is_read_only_as_far_as_needed():
    taken = []

    def endless():
        while len(taken) < 100_000:  # "endless": a test that reads to the end fails instead of hanging
            taken.append(len(taken))
            yield {"title": f"Same page {len(taken)}", "url": "https://same.example/"}

    class Endless:
        def search(self, query, top_k):
            return endless()

    reply = call(internet_search_tool(Endless()), {"query": "q"})
    assert reply.content.startswith('Top 1 web result(s) for "q":') and len(taken) <= 50


def test_only_web_links_are_shown():
    provider = Recorder(
        [
            {"title": "Script", "url": "javascript:alert(document.cookie)"},
            {"title": "Data", "link": "data:text/html,<script>x</script>"},
            {"url": "file:///etc/passwd"},
            {"title": "No host", "url": "https:"},
            {"title": "Good", "url": "HTTPS://good.example/a"},
        ]
    )
    reply = call(internet_search_tool(provider, top_k=5), {"query": "q"})
    assert "javascript:" not in reply.content and "data:" not in reply.content and "file:" not in reply.content
    assert [r["url"] for r in reply.artifact["results"]] == ["", "", "", "HTTPS://good.example/a"]
    assert reply.content.count("Link: (none)") == 3


def test_an_interrupt_raised_by_a_provider_is_not_swallowed():
    with pytest.raises(GraphInterrupt):
        internet_search_tool(Recorder(error=GraphInterrupt())).invoke({"query": "q"})


def test_a_provider_that_asks_the_user_pauses_the_run_and_gets_the_answer():
    class AsksForKey:
        def search(self, query, top_k):
            key = interrupt("API key for the search service?")
            return [SearchResult(f"found with {key}", "", "https://k.example/")]

    seen = []

    def work(request):
        found = request.last_result("internet_search")
        if found is None:
            return tool_call("internet_search", {"query": "anything"})
        seen.append(found)
        return "done"

    model = make_model(plan_of({"id": "1", "content": "search the web"}), work)
    graph = build_graph(model, tools=[internet_search_tool(AsksForKey())], checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    out = graph.invoke({"messages": [("user", "go")]}, cfg)
    assert [i.value for i in out["__interrupt__"]] == ["API key for the search service?"]
    out = graph.invoke(Command(resume="k-123"), cfg)
    assert out["tasks"]["1"]["status"] == "completed" and "1. found with k-123" in seen[-1]


def test_a_provider_that_finds_nothing():
    assert internet_search_tool(Recorder([])).invoke({"query": "q"}).startswith('No results for "q".')
    assert internet_search_tool(Recorder(None)).invoke({"query": "q"}).startswith('No results for "q".')


def test_bad_providers_and_top_k_are_refused_when_the_tool_is_built():
    with pytest.raises(TypeError, match="search"):
        internet_search_tool(object())
    with pytest.raises(TypeError, match=r"pass an instance, e.g. DuckDuckGoHTML\(\)"):
        internet_search_tool(DuckDuckGoHTML)  # the class: every call would fail
    with pytest.raises(ValueError, match="top_k"):
        internet_search_tool(Recorder(), top_k=0)
    with pytest.raises(ValueError, match="timeout_s"):
        DuckDuckGoHTML(timeout_s=0)


# --------------------------------------------------------------------------- sloppy arguments


@pytest.mark.parametrize(
    "args",
    [
        {"query": "python asyncio"},
        {"q": "python asyncio"},
        {"search": ["python", "asyncio"]},
        {"text": "  python\n   asyncio "},
        {"query": [{"type": "text", "text": "python asyncio"}]},
        {"search_query": "python asyncio", "num_results": 10},
    ],
)
def test_sloppy_arguments_are_read(args):
    provider = Recorder([SearchResult("T", "S", "https://t.example/")])
    reply = call(internet_search_tool(provider), args)
    assert provider.calls == [("python asyncio", 3)]
    assert reply.content.startswith('Top 1 web result(s) for "python asyncio":')


@pytest.mark.parametrize("args", [{}, {"query": ""}, {"query": "  \n "}, {"query": None}, {"q": []}, {"topic": "x"}])
def test_an_empty_query_is_refused_without_searching(args):
    provider = Recorder([SearchResult("T", "S", "https://t.example/")])
    reply = call(internet_search_tool(provider), args)
    assert reply.content.startswith("Search refused: ")
    assert 'e.g. {"query": "python asyncio timeout"}' in reply.content
    assert provider.calls == []


def test_a_very_long_query_is_cut():
    provider = Recorder([])
    text = internet_search_tool(provider).invoke({"query": "word " * 200})
    assert len(provider.calls[0][0]) <= 400 and provider.calls[0][0].endswith("word")
    assert "(query cut to 400 characters)" in text


def test_the_schema_shows_one_string_field():
    schema = internet_search_tool(Recorder()).tool_call_schema.model_json_schema()
    assert schema["properties"]["query"]["type"] == "string"
    assert schema["required"] == ["query"]
