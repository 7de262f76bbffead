"""What a running subtask read reaches the report when the run stops it: ``max_steps``, a budget, a cancel, with its
window compressed or not (issue 40). Its agent reads one item a turn and would go on to item 100."""

from __future__ import annotations

import re

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scripting import WAYS, plan_of, run

from replangraph import AgentConfig, build_graph
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
