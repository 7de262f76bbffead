"""What agents read reaches the report when the run stops (issue 40): a running subtask's reads, whether
``max_steps``, a budget or a cancel stopped it, its window compressed or not; and every result of a queue longer than
the report lists, in an output the report names."""

from __future__ import annotations

import re

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scripting import WAYS, plan_of, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.durable import kept_output
from replangraph.nodes.finalize.report import REPORT_LISTED
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

ITEM = re.compile(r"ITEM-\d+")


def reader(padding: int = 0):
    """``(read_item tool, the items it returned)``."""
    made: list[str] = []

    def read_item(n: int) -> str:
        """Read item n."""
        made.append(f"ITEM-{n}")
        return f"ITEM-{n}: value {n * 13}" + " detail" * padding

    return read_item, made


def respond(request: ScriptedRequest):
    """Planner: one subtask; its agent reads the next item until item 100 (or asks once, past item 5, when it may);
    a summary says nothing of the items; the final answer is never written (the run stops)."""
    if "Plan" in request.tool_names:
        return plan_of({"id": "1", "content": "read items 1 to 100 and list each"})
    if request.system.startswith("You compress"):
        return "Some items were read."
    seen = [int(n) for n in re.findall(r"ITEM-(\d+)", "\n".join(str(m.content) for m in request.tool_results))]
    last = max(seen, default=0)
    if "ask_user" in request.tool_names and last >= 5 and not request.called("ask_user"):
        return tool_call("ask_user", {"question": "Go on?"})
    return tool_call("read_item", {"n": last + 1}) if last < 100 else "done"


def items(text: str) -> set[str]:
    return set(ITEM.findall(text))


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("limit", [{"max_steps": 42}, {"token_budget": 30_000}])
def test_a_limit_that_stops_a_subtask_keeps_what_it_read_in_the_report(limit, way):
    read_item, made = reader()
    config = AgentConfig(max_step_iterations=200, verify_results=False, **limit)
    state, _ = run(build_graph(ScriptedChatModel(respond=respond), [read_item], config=config), way=way)
    assert state["stop_reason"] and state["tasks"]["1"]["status"] == "failed"
    assert len(made) >= 25
    assert items(state["final_answer"]) == set(made)


def test_a_compressed_window_s_folded_reads_reach_the_report_whole():
    read_item, made = reader(padding=60)
    config = AgentConfig(
        max_steps=42, max_step_iterations=200, context_window=6_000, reserved_output=1_000, verify_results=False
    )
    state, events = run(build_graph(ScriptedChatModel(respond=respond), [read_item], config=config))
    assert any(e["event"] == "context_compressed" for e in events)
    assert items(state["final_answer"]) == set(made) and len(made) >= 40
    assert "[1/history-1: messages its window folded into a summary, whole]" in state["final_answer"]


def test_a_cancel_keeps_what_the_running_subtask_read_in_the_report():
    read_item, made = reader()
    config = AgentConfig(max_step_iterations=200, verify_results=False)
    graph = build_graph(ScriptedChatModel(respond=respond), [read_item], config=config, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    asked = graph.invoke({"messages": [("user", "read the items")]}, cfg)
    assert asked.get("__interrupt__")
    out = graph.invoke(Command(resume="/cancel"), cfg)
    assert out["tasks"]["1"]["status"] == "skipped" and "the user cancelled" in out["final_answer"]
    assert made and items(out["final_answer"]) == set(made)


def test_a_report_of_more_subtasks_than_it_lists_names_an_output_with_every_result_whole():
    shops = [chr(65 + n % 26) + chr(65 + n // 26) + "x" for n in range(REPORT_LISTED + 6)]  # no numbers: no batching
    made: list[str] = []

    def read_shop(shop: str) -> str:
        """Read the two items of a shop."""
        made.extend([f"ITEM-{shop}-a", f"ITEM-{shop}-b"])
        return f"ITEM-{shop}-a: value 13\nITEM-{shop}-b: value 17"

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return plan_of(*[{"id": str(n), "content": f"visit the shop called {s}"} for n, s in enumerate(shops, 1)])
        shop = subtask_of(request).rsplit(" ", 1)[-1]
        return tool_call("read_shop", {"shop": shop}) if not request.called("read_shop") else "done"

    done = len(shops) - 1  # two calls each; the last shop is never visited
    config = AgentConfig(max_steps=1 + 2 * done, verify_results=False, max_concurrency=1)
    state, _ = run(build_graph(ScriptedChatModel(respond=respond), [read_shop], config=config))
    report = state["final_answer"]
    assert state["stop_reason"] and len(made) >= 2 * done
    assert set(made) - set(re.findall(r"ITEM-\w+-[ab]", report))  # the report lists 40: some are not in it
    assert "every result and partial result, whole, in plan order, is output results (" in report
    assert set(re.findall(r"ITEM-\w+-[ab]", kept_output(state, None, "t", "results"))) == set(made)
