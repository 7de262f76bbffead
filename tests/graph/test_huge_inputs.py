"""Huge things an agent sends or a run piles up stay out of the windows and the report (issue 23): a tool
call's arguments are cut like outputs, whole in the workspace, and the subtask goes on."""

from __future__ import annotations

import json
import re

from langgraph.store.memory import InMemoryStore
from scripting import make_model, plan_of, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.context.fitting import ContextMonitor
from replangraph.durable import kept_output
from replangraph.testing import ScriptedRequest, tool_call
from replangraph.tools import SPLIT_TOOL

HUGE_SPLIT = {"summary": "items 1-5", "tasks": [{"content": f"Extract catalogue item {i}"} for i in range(100_000)]}
SMALL_SPLIT = {"summary": "items 1-5", "tasks": [{"content": "Extract catalogue items 6-50000"}]}
READ = re.compile(r'read_output\(output_id="([^"]+)", offset=(\d+)\)')


def test_a_huge_refused_split_is_cut_in_the_window_and_the_subtask_goes_on():
    config = AgentConfig(verify_results=False)
    monitor = ContextMonitor(config)
    seen: list[tuple[int, ScriptedRequest]] = []

    def work(request: ScriptedRequest):
        seen.append((monitor.approximate(request.messages), request))
        if "6-50000" in subtask_of(request):
            return "items 6-50000"
        if not request.tool_results:  # ~3.3 MB of arguments: refused by max_tasks
            return tool_call(SPLIT_TOOL, HUGE_SPLIT, call_id="huge")
        if not request.called("read_output"):  # the cut call's note says where the rest is
            calls = [c for m in request.messages for c in getattr(m, "tool_calls", None) or []]
            ident, offset = READ.search(calls[0]["args"]["tasks"]).groups()
            return tool_call("read_output", {"output_id": ident, "offset": int(offset)}, call_id="read")
        return tool_call(SPLIT_TOOL, SMALL_SPLIT, call_id="small")  # told to send fewer tasks: it does

    store = InMemoryStore()
    graph = build_graph(
        make_model(plan_of({"id": "1", "content": "extract all items"}), work), config=config, store=store
    )
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
