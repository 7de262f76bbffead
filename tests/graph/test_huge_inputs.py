"""Huge things an agent sends or a run piles up stay out of the windows and the report (issue 23): a tool
call's arguments are cut like outputs, whole in the workspace, and the subtask goes on."""

from __future__ import annotations

import json

from langgraph.store.memory import InMemoryStore
from scenarios import HUGE_SPLIT, huge_split_work
from scripting import make_model, plan_of, run

from replangraph import AgentConfig, build_graph
from replangraph.context.window_monitor import ContextMonitor
from replangraph.durable import kept_output
from replangraph.testing import ScriptedRequest
from replangraph.tools import SPLIT_TOOL


def test_a_huge_refused_split_is_cut_in_the_window_and_the_subtask_goes_on():
    config = AgentConfig(verify_results=False)
    monitor = ContextMonitor(config)
    seen: list[tuple[int, ScriptedRequest]] = []
    store = InMemoryStore()
    model = make_model(plan_of({"id": "1", "content": "extract all items"}), huge_split_work(monitor, seen))
    graph = build_graph(model, config=config, store=store)
    state, _ = run(graph)
    assert {t: s["status"] for t, s in state["tasks"].items()} == {"1": "completed", "1_dyn_0": "completed"}
    assert state["tasks"]["1"]["result"] == "items 1-5"
    refused = seen[1][1].last_result(SPLIT_TOOL)
    assert "100000 more do not fit" in refused and "fewer, larger" in refused
    assert all(tokens <= monitor.budget for tokens, _ in seen), [tokens for tokens, _ in seen]
    assert "read_output" in seen[1][1].tool_names
    whole = json.dumps(HUGE_SPLIT, ensure_ascii=False)
    assert kept_output(state, store, "t", "1/huge-args") == whole
    [read] = [c for _, r in seen for m in r.messages for c in getattr(m, "tool_calls", None) or () if c["id"] == "read"]
    start = read["args"]["offset"]
    page = seen[2][1].last_result("read_output")  # the next characters, exactly as sent
    assert page.startswith(f'output "1/huge-args", characters {start}-') and whole[start : start + 2000] in page
