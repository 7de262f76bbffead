"""A completing subtask keeps what it read (issue 23): the tool outputs still in its window when it answers
are kept under their output ids, with or without the completion check, in the state or the graph's store."""

from __future__ import annotations

import pytest
from langgraph.store.memory import InMemoryStore
from scenarios import WINDOW_ANSWER, item_reader, item_text, read_item
from scripting import make_model, plan_of, run

from replangraph import AgentConfig, build_graph
from replangraph.context.carried import READS_HEAD
from replangraph.durable import kept_output, kept_output_ids

ITEMS = 8


@pytest.mark.parametrize("verify_results", [False, True], ids=["executor-completes", "verifier-completes"])
@pytest.mark.parametrize("with_store", [False, True], ids=["state", "store"])
def test_every_item_a_completing_subtask_read_stays_readable(verify_results, with_store):
    store = InMemoryStore() if with_store else None
    model = make_model(plan_of({"id": "1", "content": "read the items"}), item_reader(ITEMS))
    config = AgentConfig(verify_results=verify_results, max_observations=3, max_step_iterations=20)
    graph = build_graph(model, tools=[read_item], config=config, store=store)
    state, events = run(graph)
    task = state["tasks"]["1"]
    assert task["status"] == "completed"
    # The answer names items 1 and 2 only: the result carries the other items its agent read after the answer.
    assert task["result"].startswith(WINDOW_ANSWER + "\n\n" + READS_HEAD)
    assert all((item_text(n) in task["result"]) == (n > 2) for n in range(1, ITEMS + 1))
    assert any(e["event"] == "step_verified" for e in events) == verify_results
    outputs = [ident for ident in kept_output_ids(state, store, "t") if not ident.endswith("/result")]
    texts = [kept_output(state, store, "t", ident) for ident in outputs]
    for n in range(1, ITEMS + 1):
        holding = [t for t in texts if t and item_text(n) in t]
        assert len(holding) == 1, f"ITEM-{n}: kept {len(holding)} times"  # reachable, and kept once as an output
