"""Long runs lose nothing: every item reaches the final answer, big outputs are paged back, overflows recover.

The scripted models are faithful stand-ins: workers page through their tool and list every code they can
see; the summarizer and the finalizer list every code in their input.
"""

from __future__ import annotations

import re

import pytest
from clocks import GUARD_S
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.store.memory import InMemoryStore
from scripting import kept, plan_of, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.context.excerpts import NOTE_RE
from replangraph.llm.reading import message_text
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

CODE = re.compile(r"P-\d+")
NEXT = re.compile(r"Next page: read_products\(start=(\d+)\)")


def codes(text: str) -> list[str]:
    return sorted(set(CODE.findall(text)), key=lambda c: int(c[2:]))


def request_text(request: ScriptedRequest) -> str:
    return "\n".join(message_text(m) for m in request.messages)


def catalog(size: int, per_page: int = 5, filler: int = 500):
    def read_products(start: int = 1) -> str:
        """Read a page of the catalog from item number `start`."""
        last = min(start + per_page - 1, size)
        lines = [f"P-{n}: product {n}, rated {n % 5 + 1}/5. " + "spec " * (filler // 5) for n in range(start, last + 1)]
        tail = f"Next page: read_products(start={last + 1})" if last < size else "End of catalog."
        return "\n".join([*lines, tail])

    return read_products


def faithful(plan_content: str, sizes: list[int] | None = None):
    """Planner: one subtask. Worker: next page until the end, then every code it sees. Others: list codes."""

    def respond(request: ScriptedRequest):
        if sizes is not None:
            sizes.append(count_tokens_approximately(request.messages))
        if "Plan" in request.tool_names:
            return plan_of({"id": "1", "content": plan_content})
        text = request_text(request)
        if request.tool_names:
            last = request.tool_results[-1] if request.tool_results else None
            if last is None:
                return tool_call("read_products", {"start": 1})
            found = NEXT.search(message_text(last))
            if found:
                return tool_call("read_products", {"start": int(found.group(1))})
            return "Products: " + ", ".join(codes(text))
        return "Products: " + ", ".join(codes(text))

    return respond


@pytest.mark.parametrize("keep_last", [10, 3])
def test_sixty_items_in_one_subtask_all_reach_the_final_answer(keep_last):
    sizes: list[int] = []
    config = AgentConfig(
        context_window=9_000, reserved_output=1_000, keep_last_messages=keep_last, max_step_iterations=40
    )
    model = ScriptedChatModel(respond=faithful("read all 60 products and list every code", sizes))
    graph = build_graph(model, tools=[catalog(60, filler=1_000)], config=config)
    state, events = run(graph)
    assert state["tasks"]["1"]["status"] == "completed"
    assert codes(state["final_answer"]) == [f"P-{n}" for n in range(1, 61)]
    compressed = [e for e in events if e["event"] == "context_compressed"]
    assert len(compressed) >= 2
    assert all(e["saved"] for e in compressed)  # the folded messages are kept every time
    assert max(sizes) <= 9_000 - 1_000  # no request over the window


def test_a_two_megabyte_output_is_paged_back_with_read_output_and_the_middle_is_found():
    needle_at = 1_000_000

    def dump() -> str:
        """Dump the whole server log."""
        return "log line ok\n" * (needle_at // 12) + "NEEDLE-42 found here\n" + "log line ok\n" * (1_000_000 // 12)

    reads = []

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return plan_of({"id": "1", "content": "find the NEEDLE code in the server log"})
        if not request.tool_names:
            return "Answer: " + ", ".join(re.findall(r"NEEDLE-\d+", request_text(request)))
        outputs = "\n".join(message_text(m) for m in request.tool_results)
        found = re.findall(r"NEEDLE-\d+", outputs)
        if found:
            return f"The code is {found[0]}."
        if not request.tool_results:
            return tool_call("dump", {})
        assert "read_output" in request.tool_names  # offered once something was kept out of the window
        note = list(NOTE_RE.finditer(message_text(request.tool_results[-1])))[-1]
        reads.append(int(note.group(2)))
        return tool_call("read_output", {"output_id": note.group(1), "offset": note.group(2)})  # offset as text

    config = AgentConfig(max_observation_chars=100_000, max_observations=3, max_step_iterations=40)
    state, _ = run(build_graph(ScriptedChatModel(respond=respond), tools=[dump], config=config))
    assert state["tasks"]["1"]["result"] == "The code is NEEDLE-42."
    assert "NEEDLE-42" in state["final_answer"]
    assert len(reads) >= 9 and reads == sorted(reads)  # paged forward, page by page
    saved = kept(state, "1")
    assert any(len(text) > 2_000_000 for text in saved.values())


def test_kept_outputs_are_read_from_the_store_when_the_graph_has_one():
    store = InMemoryStore()

    def big() -> str:
        """Big output."""
        return "A " * 20_000 + "CODE-9 " + "B " * 20_000

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return plan_of({"id": "1", "content": "find the code"})
        if not request.tool_names:
            return "final: " + ", ".join(re.findall(r"CODE-\d+", request_text(request)))
        seen = re.findall(r"CODE-\d+", "\n".join(message_text(m) for m in request.tool_results))
        if seen:
            return seen[0]
        if not request.tool_results:
            return tool_call("big", {})
        ident = NOTE_RE.search(message_text(request.tool_results[-1]))
        return tool_call("read_output", {"output_id": ident.group(1), "offset": 39_500, "limit": 8_000})

    config = AgentConfig(max_observation_chars=2_000)
    state, _ = run(build_graph(ScriptedChatModel(respond=respond), tools=[big], config=config, store=store))
    assert state["tasks"]["1"]["result"] == "CODE-9"  # the output's excerpt holds no data beyond its note
    assert not state.get("workspace")  # with a store, nothing is kept in the state
    items = store.search(("replangraph", "t"), filter={"step": "plan:1:step:1"})
    [output] = [i for i in items if ":output:" in i.key]
    assert "CODE-9" in output.value["content"]
    assert store.get(("replangraph", "t"), "plan:1:step:1:result").value["content"] == "CODE-9"


def test_a_dependency_result_too_big_for_the_window_is_shown_with_a_pointer_the_agent_follows():
    plan = plan_of({"id": "a", "content": "gather"}, {"id": "b", "content": "use it", "depends_on": ["a"]})
    gathered = "filler " * 8_000 + "KEY-77 " + "filler " * 8_000
    first_requests = []

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return plan
        if not request.tool_names:
            return "final: " + ", ".join(re.findall(r"KEY-\d+", request_text(request)))
        if subtask_of(request) == "gather":
            return gathered
        if not request.tool_results:
            first_requests.append(count_tokens_approximately(request.messages))
            assert "read_output" in request.tool_names
            note = NOTE_RE.search(request.prompt)
            assert note and note.group(1) == "a/result"
            return tool_call("read_output", {"output_id": "a/result", "offset": 50_000, "limit": 20_000})
        return "used " + ", ".join(re.findall(r"KEY-\d+", message_text(request.tool_results[-1])))

    config = AgentConfig(context_window=8_000, reserved_output=1_000)
    state, _ = run(build_graph(ScriptedChatModel(respond=respond), config=config))
    assert state["tasks"]["b"]["result"] == "used KEY-77"
    assert first_requests and max(first_requests) <= 0.9 * 7_000


def provider_with_limit(limit_tokens: int, respond, refusals: list[int]):
    """A model that refuses requests over ``limit_tokens`` as a provider does (ContextOverflowError)."""

    def guarded(request: ScriptedRequest):
        used = count_tokens_approximately(request.messages)
        if request.tool_names and "Plan" not in request.tool_names and used > limit_tokens:
            refusals.append(used)
            raise ContextOverflowError(f"This model's maximum context length is {limit_tokens} tokens ({used} sent)")
        return respond(request)

    return ScriptedChatModel(respond=guarded)


def test_a_provider_context_overflow_compresses_the_window_and_the_step_goes_on():
    refusals: list[int] = []
    model = provider_with_limit(4_000, faithful("read all 30 products and list every code"), refusals)
    config = AgentConfig(context_window=20_000, reserved_output=1_000, max_step_iterations=40)
    state, events = run(build_graph(model, tools=[catalog(30)], config=config))
    assert refusals  # our window (20k) was wrong: the provider refused
    assert state["tasks"]["1"]["status"] == "completed"
    assert codes(state["final_answer"]) == [f"P-{n}" for n in range(1, 31)]
    assert len([e for e in events if e["event"] == "context_compressed"]) >= len(refusals)
    assert "context_overflow" not in state["tasks"]["1"] or not state["tasks"]["1"]["context_overflow"]


def test_an_overflow_that_compression_cannot_cure_fails_the_step():
    refusals: list[int] = []
    model = provider_with_limit(60, faithful("read all 30 products"), refusals)
    # No single-agent fallback: it would meet the same catalog and be refused once more.
    config = AgentConfig(context_window=20_000, reserved_output=1_000, max_replans=0, single_agent_fallback=False)
    state, _ = run(build_graph(model, tools=[catalog(30)], config=config))
    task = state["tasks"]["1"]
    assert task["status"] == "failed" and "context window too small" in task["error"]
    assert len(refusals) == 1  # refused once; compression could not get under half of it, so no second try


def test_a_failed_step_keeps_the_tool_outputs_it_had_read():
    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return plan_of({"id": "1", "content": "read"})
        if request.tool_names and not request.tool_results:
            return tool_call("read_products", {"start": 1})
        if request.tool_names:
            raise RuntimeError("model crashed")
        return "report"

    config = AgentConfig(max_replans=0, model_retries=0)
    state, _ = run(build_graph(ScriptedChatModel(respond=respond), tools=[catalog(10)], config=config))
    task = state["tasks"]["1"]
    assert task["status"] == "failed"
    saved = kept(state, "1")
    assert sorted(saved) == sorted([next(k for k in saved if k.startswith("call_")), "window-at-failure"])
    assert codes(saved["window-at-failure"]) == ["P-1", "P-2", "P-3", "P-4", "P-5"]
    assert "its window is kept as output 1/window-at-failure" in task["error"]


def test_a_tool_timeout_keeps_the_replies_of_the_calls_that_finished():
    import threading
    import time

    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from replangraph.config import resolve_profiles
    from replangraph.nodes.execution.tools_node import ToolRunner
    from replangraph.queue.tasks import new_task

    release = threading.Event()

    def fast() -> str:
        """Fast."""
        return "FAST-FACT-7"

    def slow() -> str:
        """Slow."""
        release.wait(GUARD_S)  # never answers in time: the test releases it at the end
        return "late"

    calls = [tool_call("fast", {}, call_id="f"), tool_call("slow", {}, call_id="s")]
    task = {**new_task("1", "x", position=[0]), "status": "in_progress", "started_at": time.time()}
    window = [SystemMessage("s"), HumanMessage("h"), AIMessage("", tool_calls=calls)]
    runner = ToolRunner(resolve_profiles(None, [fast, slow]), AgentConfig(step_timeout_s=1.0))
    try:
        update = runner({"tasks": {"1": task}, "windows": {"1": window}, "goal": "g"})
    finally:
        release.set()
    # The fast call read something: the step ends as a hand-off, the rest in a continuation that names the timeout
    assert update["tasks"]["1"]["status"] == "completed" and "FAST-FACT-7" in update["tasks"]["1"]["result"]
    assert "in tool 'slow'" in update["tasks"]["1_dyn_0"]["content"]
    assert kept(update, "1")["f"] == "FAST-FACT-7"


def test_a_crash_in_the_tools_node_keeps_the_window_of_the_subtask():
    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return plan_of({"id": "1", "content": "read"})
        if request.tool_names and not request.tool_results:
            return tool_call("read_products", {"start": 1})
        if request.tool_names and len(request.tool_results) == 1:
            return [tool_call("read_products", {"start": 6}), tool_call("explode", {})]
        return "report"

    class Boom(BaseException):  # not an Exception: the tools node cannot catch it, its error handler does
        pass

    def explode() -> str:
        """Explode."""
        raise Boom("store down")

    config = AgentConfig(max_replans=0)
    try:
        state, _ = run(build_graph(ScriptedChatModel(respond=respond), tools=[catalog(10), explode], config=config))
    except Boom:
        pytest.skip("LangGraph's error handler does not catch BaseException here")
    task = state["tasks"]["1"]
    assert task["status"] == "failed" and "window is kept" in task["error"]
    assert codes(kept(state, "1")["window-at-failure"]) == ["P-1", "P-2", "P-3", "P-4", "P-5"]
