"""A subtask stopped at its step cap or its step time goes on in its own conversation (issue 40, property 3).

The model here is one that only looks at its own conversation, as a ReAct agent's model does: it reads the next
page after the highest item its tool results (or a compression's summary of them) show, one call a turn, and
starts its range again in a window that shows none. It reads no note. Against langchain's ``create_agent`` on the
same scripted model, replangraph must recover every item with calls and prompt tokens of the same order."""

from __future__ import annotations

import re

import pytest
from clocks import FakeClock
from scripting import plan_of, run, subtask_of

import replangraph.clock as step_clock
from benchmarks.harness import Meter
from replangraph import AgentConfig, build_graph
from replangraph.context.compression import SUMMARY_HEADER
from replangraph.llm.reading import message_text
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

PAGE = 5
"""Items one call reads."""


def item(n: int) -> str:
    return f"item-{n}: code C{n * 7919}"


def items_in(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"item-(\d+): code C\d+", text)}


def catalog(size: int, clock: FakeClock | None = None, seconds: float = 0.0):
    """The read tool of a catalog of ``size`` items (each call takes ``seconds`` on ``clock``)."""

    def read_items(start: int, count: int = PAGE) -> str:
        """Read up to 5 items from item `start` (1-based)."""
        if clock is not None:
            clock.advance(seconds)
        last = min(start + min(count, PAGE) - 1, size)
        return "\n".join(item(n) for n in range(start, last + 1)) or "No items there."

    return read_items


def goal(size: int) -> str:
    return f"List all {size} items with their codes."


def conversation_items(request: ScriptedRequest) -> set[int]:
    """The items the model's own conversation shows: its tool results, and a compression's summary of them."""
    summaries = [message_text(m) for m in request.messages if message_text(m).startswith(SUMMARY_HEADER)]
    return {n for text in [*(message_text(m) for m in request.tool_results), *summaries] for n in items_in(text)}


def restarter(size: int) -> ScriptedChatModel:
    """Plans one subtask for the whole goal; as its agent (or as ReAct) reads the page after the highest item its
    conversation shows, from the start of its range in a window that shows none, and answers with every item its
    conversation shows once it has read the last; as the check, compares the items asked for with those shown."""

    def respond(request: ScriptedRequest):
        if "Verdict" in request.tool_names:  # a subtask's check, or the goal's
            asked, _, shown = request.prompt.partition("\nResult")
            span = re.search(r"items (\d+)-(\d+)", asked)
            first, last = (int(span.group(1)), int(span.group(2))) if span else (1, size)
            missing = [n for n in range(first, last + 1) if n not in items_in(shown)]
            rest = [f"List items {missing[0]}-{missing[-1]}"] if missing else []
            return tool_call("Verdict", {"complete": not missing, "remaining_tasks": rest, "reason": "counted"})
        if "Plan" in request.tool_names:
            planned = {"id": "1", "content": f"List items 1-{size}"}
            return plan_of() if "replanner" in request.system else plan_of(planned)
        if "compress the working memory" in request.system:
            return "Items read so far:\n" + "\n".join(item(n) for n in sorted(items_in(request.prompt)))
        if not request.tool_names:  # the final answer
            return "\n".join(item(n) for n in sorted(items_in(request.prompt)))
        asked = re.search(r"items (\d+)-(\d+)", subtask_of(request))
        first, last = (int(asked.group(1)), int(asked.group(2))) if asked else (1, size)
        read = conversation_items(request)
        if read and max(read) >= last:
            return "\n".join(item(n) for n in sorted(read))
        return tool_call("read_items", {"start": max(read) + 1 if read else first, "count": PAGE})

    return ScriptedChatModel(respond=respond)


def replangraph_run(size: int, tools=None, **config) -> tuple[dict, list[dict], Meter]:
    """``(final state, custom events, meter)`` of a run on defaults (but ``config``)."""
    meter = Meter()
    settings = AgentConfig(**{"retry_backoff_s": 0.0, **config})
    graph = build_graph(restarter(size), tools=tools or [catalog(size)], config=settings)
    state, events = run(graph, goal(size), callbacks=[meter], recursion_limit=10_000)
    return state, events, meter


def react_run(size: int) -> tuple[str, Meter]:
    from langchain.agents import create_agent

    meter = Meter()
    agent = create_agent(restarter(size), [catalog(size)])
    state = agent.invoke({"messages": [("user", goal(size))]}, {"callbacks": [meter], "recursion_limit": 10_000})
    return message_text(state["messages"][-1]), meter


def recall(answer: str, size: int) -> float:
    return len(items_in(answer) & set(range(1, size + 1))) / size


@pytest.mark.parametrize("size", [100, 300])
def test_a_subtask_cut_at_its_step_cap_goes_on_in_its_conversation_like_react(size):
    answer, react = react_run(size)
    assert recall(answer, size) == 1.0 and react.calls == size // PAGE + 1  # ReAct: one call a page, one answer
    state, _, meter = replangraph_run(size)
    assert recall(state["final_answer"], size) == 1.0
    assert meter.calls <= 2 * react.calls
    assert meter.prompt_tokens <= 2 * react.prompt_tokens


def test_a_subtask_out_of_step_time_goes_on_in_its_conversation(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(step_clock, "time", clock)
    size = 100
    state, _, meter = replangraph_run(size, tools=[catalog(size, clock, seconds=10.0)], step_timeout_s=95.0)
    assert recall(state["final_answer"], size) == 1.0
    chain = [t for t in state["tasks"].values() if (t.get("follow_up") or {}).get("by") == "limit"]
    assert chain and all("step_timeout_s=95" in t["content"] for t in chain)
    assert meter.calls <= 2 * (size // PAGE + 1)


def test_a_carried_window_that_does_not_fit_is_compressed_first():
    size = 100
    state, events, meter = replangraph_run(size, context_window=2_500, reserved_output=500)
    assert recall(state["final_answer"], size) == 1.0
    continued = [t["id"] for t in state["tasks"].values() if (t.get("follow_up") or {}).get("by") == "limit"]
    compressed = [e for e in events if e["event"] == "context_compressed"]
    assert continued and {e["task_id"] for e in compressed} & set(continued)  # the window it took over
    assert meter.largest({"executor"}) <= 2_000 * 0.9


# --------------------------------------------------------------------------- named work: the note lists every call

CATEGORIES = [f"cat{n}" for n in range(12)]
PAGES = 5


def fetch(category: str, page: int) -> str:
    """Read one page (10 items) of a category."""
    return "\n".join(f"{category}-p{page}-i{i}: code X{i}" for i in range(10))


def pages_listed(text: str) -> set[tuple[str, int]]:
    """The pages the "tool calls so far" of a note or instructions name, grouped (``fetch {"category": "cat3"} ×5
    with page 1-5``) or as written (``fetch {"category": "cat3", "page": 2}``)."""
    done = set()
    for listing in re.findall(r"tool calls so far[^:]*: (.*)", text):
        for category, pages in re.findall(r'fetch \{"category": "(cat\d+)"\} ×\d+ with page ([\d, -]+)', listing):
            for part in pages.split(", "):
                first, _, last = part.partition("-")
                done |= {(category, p) for p in range(int(first), int(last or first) + 1)}
        done |= {(c, int(p)) for c, p in re.findall(r'fetch \{"category": "(cat\d+)", "page": (\d+)\}', listing)}
    return done


def named_reader() -> ScriptedChatModel:
    """Reads the categories page by page, one call a turn: the first page neither its tool results nor the calls
    its conversation lists show; then answers with every item its tool results show."""

    def respond(request: ScriptedRequest):
        if "Verdict" in request.tool_names:
            return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "trusted"})
        if "Plan" in request.tool_names:
            return plan_of() if "replanner" in request.system else plan_of({"id": "1", "content": "Read every page"})
        found = re.findall(r"(cat\d+)-p(\d+)-i\d+: code X\d+", request.prompt if not request.tool_names else "")
        if not request.tool_names:  # the final answer
            return "\n".join(sorted({f"{c}-p{p}" for c, p in found}))
        shown = "\n".join(message_text(m) for m in request.tool_results)
        done = {(c, int(p)) for c, p in re.findall(r"(cat\d+)-p(\d+)-i0", shown)} | pages_listed(request.prompt)
        todo = [(c, p) for c in CATEGORIES for p in range(1, PAGES + 1) if (c, p) not in done]
        if not todo:
            return shown
        return tool_call("fetch", {"category": todo[0][0], "page": todo[0][1]})

    return ScriptedChatModel(respond=respond)


def test_named_work_is_listed_whole_so_pages_out_of_sight_are_not_read_again():
    """60 pages; the window keeps the last 20 outputs. The pages out of sight are known from the listing."""
    meter = Meter()
    config = AgentConfig(retry_backoff_s=0.0, max_observations=20)
    graph = build_graph(named_reader(), tools=[fetch], config=config)
    state, _ = run(graph, "Read every page of every category.", callbacks=[meter], recursion_limit=10_000)
    assert len(set(re.findall(r"cat\d+-p\d+", state["final_answer"]))) == len(CATEGORIES) * PAGES
    assert meter.calls <= len(CATEGORIES) * PAGES + 8  # a page a call, the answer, the plan, checks, the final
