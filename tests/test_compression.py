"""Context monitor and compressor: properties over random histories, units, and a long end-to-end run."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.store.memory import InMemoryStore
from scripting import make_model, plan_of, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.compression import (
    SUMMARY_HEADER,
    compress_window,
    is_summary,
    safe_cut,
    split_window,
    tool_pairs_ok,
)
from replangraph.config import resolve_profiles
from replangraph.context import ContextMonitor
from replangraph.nodes.compressor import Compressor, summarizer_request
from replangraph.nodes.tool_runner import ToolRunner
from replangraph.observations import DROPPED, drop_old_observations
from replangraph.queue import new_task
from replangraph.scripted import ScriptedChatModel, tool_call

HEAD = [SystemMessage("You are an agent."), HumanMessage("Your subtask (a): read everything")]


def tokens(window):
    return count_tokens_approximately(window)


# --------------------------------------------------------------------------- random histories


@st.composite
def histories(draw):
    """A window: head, then turns of text replies or (parallel) tool calls with their results."""
    body = []
    for n in range(draw(st.integers(1, 14))):
        if draw(st.booleans()):
            body.append(AIMessage("thinking " * draw(st.integers(1, 60)), id=f"ai{n}"))
        else:
            calls = [tool_call("read", {"n": n + k}, call_id=f"c{n}_{k}") for k in range(draw(st.integers(1, 3)))]
            body.append(AIMessage("", tool_calls=calls, id=f"ai{n}"))
            body.extend(
                ToolMessage("data " * draw(st.integers(1, 700)), tool_call_id=c["id"], name="read") for c in calls
            )
    return [*HEAD, *body]


def short_summary(previous, messages):
    return f"summary of {len(messages)} messages" + (f" after: {previous}" if previous else "")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window=histories(), keep_last=st.integers(1, 12), budget=st.integers(150, 6_000))
def test_compression_properties(window, keep_last, budget):
    assert tool_pairs_ok(window)

    def fits(w):
        return tokens(w) <= budget

    result, folded = compress_window(window, keep_last=keep_last, fits=fits, summarize=short_summary, plan="[ ] a: x")
    # the provider rule holds after compression
    assert tool_pairs_ok(result)
    # the head is kept, at most one summary follows it
    assert [type(m) for m in result[:2]] == [SystemMessage, HumanMessage]
    assert sum(is_summary(m) for m in result) == (1 if folded else 0)
    # the tail is the original tail from the safe cut: same messages, contents intact or visibly shrunk
    _, _, body = split_window(window)
    tail = body[safe_cut(body, keep_last) :]
    assert len(tail) >= min(keep_last, len(body))
    kept = result[len(result) - len(tail) :]
    for before, after in zip(tail, kept, strict=True):
        assert type(before) is type(after) and before.id == after.id
        assert after.content == before.content or "characters cut" in after.content
    # it fits, unless nothing is left to shrink
    assert fits(result) or all(len(m.content) <= 260 for m in result[1:] if isinstance(m.content, str))
    if folded or result != window:
        assert tokens(result) <= tokens(window)


def test_safe_cut_never_starts_on_a_tool_result():
    calls = [tool_call("read", {"n": k}, call_id=f"c{k}") for k in range(3)]
    body = [AIMessage("", tool_calls=calls), *(ToolMessage("x", tool_call_id=c["id"]) for c in calls), AIMessage("ok")]
    assert safe_cut(body, 2) == 0  # keeping 2 would split the parallel calls: keep the whole group
    assert safe_cut(body, 1) == 4


# --------------------------------------------------------------------------- units


def long_window(n=6, size=400):
    body = []
    for i in range(n):
        body.append(AIMessage("", tool_calls=[tool_call("read", {"n": i}, call_id=f"c{i}")]))
        body.append(ToolMessage(f"page {i} " + "x" * size, tool_call_id=f"c{i}", name="read"))
    return [*HEAD, *body]


def test_second_compression_folds_the_first_summary_into_a_new_one():
    seen = []

    def summarize(previous, messages):
        seen.append(previous)
        return f"S{len(seen)}"

    first, _ = compress_window(long_window(), keep_last=2, fits=lambda w: True, summarize=summarize, plan="p")
    grown = [*first, *long_window(3)[2:]]
    second, folded = compress_window(grown, keep_last=2, fits=lambda w: True, summarize=summarize, plan="p")
    assert seen == [None, "S1"]  # the earlier summary text is handed to the summarizer
    assert [m.id for m in second if is_summary(m)] == ["replangraph-summary-2"]
    assert "S2" in second[2].content and "S1" not in second[2].content
    assert folded == len(grown) - 2 - 1 - 2  # everything between the old summary and the kept tail


def test_summary_reinjects_the_plan_and_the_instructions():
    result, _ = compress_window(
        long_window(),
        keep_last=2,
        fits=lambda w: True,
        summarize=short_summary,
        plan="[X] 1: gather (Result: 5 items)\n[>] a: read everything",
        instructions="(a) read everything",
    )
    text = result[2].content
    assert text.startswith(SUMMARY_HEADER)
    assert "Current plan:\n[X] 1: gather (Result: 5 items)" in text
    assert "Your subtask, unchanged:\n(a) read everything" in text


def test_tail_alone_over_budget_is_shrunk_instead_of_compressed_again():
    window = [
        *HEAD,
        AIMessage("", tool_calls=[tool_call("read", {}, call_id="c")]),
        ToolMessage("y" * 20_000, tool_call_id="c"),
    ]
    calls = []

    def summarize(previous, messages):
        calls.append(1)
        return "s"

    result, folded = compress_window(window, keep_last=10, fits=lambda w: tokens(w) < 1_500, summarize=summarize)
    assert folded == 0 and calls == []
    assert tokens(result) < 1_500
    assert "characters cut" in result[-1].content and result[-1].tool_call_id == "c"


def test_usage_metadata_is_preferred_and_stripped_after_compression():
    monitor = ContextMonitor(AgentConfig())
    reply = AIMessage("hi", usage_metadata={"input_tokens": 50_000, "output_tokens": 10, "total_tokens": 50_010})
    assert monitor.tokens([*HEAD, reply]) == 50_010
    assert monitor.tokens([*HEAD, reply, HumanMessage("x" * 400)]) > 50_010
    result, _ = compress_window([*HEAD, reply], keep_last=5, fits=lambda w: True, summarize=short_summary)
    assert result[-1].usage_metadata is None
    assert monitor.tokens(result) < 100


def test_effective_window_from_the_model_profile_and_tool_schemas_count():
    model = ScriptedChatModel(respond=lambda r: "x", profile={"max_input_tokens": 32_000})
    monitor = ContextMonitor(AgentConfig(reserved_output=2_000), model)
    assert monitor.context_window == 32_000 and monitor.effective_window == 30_000
    assert ContextMonitor(AgentConfig()).context_window == 200_000

    def search(query: str, limit: int = 10) -> str:
        """Search the catalogue for products matching the query, newest first."""
        return ""

    from langchain_core.tools import tool

    assert monitor.tokens(HEAD, [tool(search)]) > monitor.tokens(HEAD)


def test_summarizer_input_is_trimmed_to_the_summary_model_window():
    monitor = ContextMonitor(AgentConfig())
    messages = long_window(40, 2_000)[2:]
    request = summarizer_request("earlier", messages, budget_tokens=3_000, monitor=monitor)
    assert monitor.tokens(request) <= 3_000
    assert "characters cut" in request[-1].content


def test_failing_summary_model_leaves_a_note_and_keeps_the_earlier_summary():
    def respond(request):
        raise RuntimeError("summary model down")

    config = AgentConfig(keep_last_messages=2)
    compressor = Compressor(ScriptedChatModel(respond=respond), {"default": []}, config, ContextMonitor(config))
    text = compressor.summarize("found A and B", long_window()[2:])
    assert text.startswith("found A and B") and "summary model down" in text


def test_old_observations_are_dropped_but_every_call_keeps_an_answer():
    window = long_window(5)
    trimmed, dropped = drop_old_observations(window, keep=2)
    assert tool_pairs_ok(trimmed)
    assert list(dropped) == ["c0", "c1", "c2"] and dropped["c0"].startswith("page 0")
    assert [m.content for m in trimmed if isinstance(m, ToolMessage)][:3] == [DROPPED.format(keep=2)] * 3


def tool_runner_state(output_size):
    def read(n: int) -> str:
        """Read page n."""
        return f"page {n} " + "z" * output_size

    profiles = resolve_profiles(None, [read])
    task = {**new_task("a", "read", position=[0]), "status": "in_progress"}
    window = [*HEAD, AIMessage("", tool_calls=[tool_call("read", {"n": 1}, call_id="c1")])]
    return profiles, {"tasks": {"a": task}, "windows": {"a": window}, "goal": "g"}


def test_long_tool_output_is_cut_with_a_marker_and_kept_in_the_task_record():
    profiles, state = tool_runner_state(30_000)
    update = ToolRunner(profiles, AgentConfig(max_observation_chars=1_000))(state)
    content = update["windows"]["a"][-1].content
    assert len(content) <= 1_000 and "characters cut" in content
    assert len(update["tasks"]["a"]["full_outputs"]["c1"]) > 30_000


def test_long_tool_output_goes_to_the_store_when_the_graph_has_one():
    store = InMemoryStore()

    def read(n: int) -> str:
        """Read page n."""
        return "ITEM-7 " + "z" * 30_000

    def work(request):
        return tool_call("read", {"n": 1}) if not request.tool_results else "done"

    graph = build_graph(
        make_model(plan_of({"id": "a", "content": "read"}), work),
        tools=[read],
        config=AgentConfig(max_observation_chars=500),
        store=store,
    )
    state, _ = run(graph, thread_id="t")
    assert "full_outputs" not in state["tasks"]["a"]
    [item] = store.search(("replangraph", "outputs", "t", "a"))
    assert item.value["content"].startswith("ITEM-7") and len(item.value["content"]) > 30_000


# --------------------------------------------------------------------------- end to end

ITEMS = 12


def item_responder(request):
    """Worker reads items one by one; the summarizer keeps item codes; the finalizer lists them."""
    text = request.prompt + " ".join(str(m.content) for m in request.tool_results)
    found = sorted(set(re.findall(r"ITEM-(\d+)", text)), key=int)
    if "Plan" in request.tool_names:
        return plan_of({"id": "a", "content": f"read items 1 to {ITEMS} and list their codes"})
    if request.tool_names:
        last = max((int(x) for x in found), default=0)
        if last < ITEMS:
            return tool_call("read_item", {"n": last + 1})
        return "codes: " + ", ".join(f"ITEM-{x}" for x in found)
    if "compress the working memory" in request.system:
        return "found so far: " + ", ".join(f"ITEM-{x}" for x in found)
    return "all items: " + ", ".join(f"ITEM-{x}" for x in found)


def read_item(n: int) -> str:
    """Read item n."""
    return f"ITEM-{n} " + "filler text " * 500


def test_long_run_compresses_several_times_and_keeps_every_item():
    config = AgentConfig(context_window=6_000, reserved_output=1_000, keep_last_messages=3, max_step_iterations=40)
    graph = build_graph(ScriptedChatModel(respond=item_responder), tools=[read_item], config=config)
    state, events = run(graph)
    compressed = [e for e in events if e["event"] == "context_compressed"]
    assert len(compressed) >= 3
    assert all(e["tokens_after"] < e["tokens_before"] for e in compressed)
    assert state["tasks"]["a"]["status"] == "completed"
    for n in range(1, ITEMS + 1):
        assert f"ITEM-{n}" in state["final_answer"]


def test_huge_dependency_results_are_cut_to_fit_the_first_request():
    seen = []

    def work(request):
        seen.append(count_tokens_approximately(request.messages))
        return "ok"

    plan = plan_of({"id": "a", "content": "gather"}, {"id": "b", "content": "use it", "depends_on": ["a"]})

    def big_result(request):
        return "ITEM " * 20_000 if subtask_of(request) == "gather" else work(request)

    config = AgentConfig(context_window=8_000, reserved_output=1_000)
    state, _ = run(build_graph(make_model(plan, big_result), config=config))
    assert state["tasks"]["b"]["status"] == "completed"
    assert seen and max(seen) <= 0.9 * 7_000
