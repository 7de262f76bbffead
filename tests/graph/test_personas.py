"""Every benchmark persona, end to end in both worlds: what replangraph recovers, what ReAct loses.

At N = 19 the runs use batches of 5, so every persona that hands off in batches splits its work; at N = 100
they use the defaults, and every persona runs, the variants (`VARIANT_PERSONAS`) included: that test is the
product's target (a model that bends the rules still gets every item done), and on an engine that does not
yet meet it some variants fail it."""

from __future__ import annotations

import pytest

from benchmarks.harness import Meter, react_agent, replangraph_agent
from benchmarks.personas import BATCHED_HANDOFF_PERSONAS, PERSONAS, persona
from benchmarks.worlds import CatalogWorld, ReportWorld
from replangraph import AgentConfig, build_graph
from replangraph.tools.replan_toolkit.toolkit import TURN_OUTPUTS

FAST = {"retry_backoff_s": 0.0, "batch_size": 5}
"""No real waits, and batches of 5: a 19-item job splits three times."""
WORLDS = [CatalogWorld, ReportWorld]


@pytest.mark.parametrize("world_cls", WORLDS, ids=["catalog", "report"])
@pytest.mark.parametrize("name", BATCHED_HANDOFF_PERSONAS)
def test_replangraph_recovers_every_item_with_every_persona(world_cls, name):
    world = world_cls(19)
    verify = name == "lazy"  # the lazy persona ignores the toolkit: only the completion check catches it
    outcome = replangraph_agent(verify=verify, **FAST)(persona(name, world).model(), world)
    assert outcome.error is None
    assert outcome.recovered == 19, f"{name}: {outcome.recovered}/19"


@pytest.mark.parametrize("world_cls", WORLDS, ids=["catalog", "report"])
@pytest.mark.parametrize("name", PERSONAS)
def test_every_persona_recovers_every_item_with_the_default_batch_size(world_cls, name):
    """replangraph on defaults recalls all 100 items with every persona, each variant included."""
    world = world_cls(100)
    outcome = replangraph_agent(verify=True, retry_backoff_s=0.0)(persona(name, world).model(), world)
    assert outcome.error is None
    assert outcome.recovered == 100, f"{name}: {outcome.recovered}/100"


@pytest.mark.parametrize("world_cls", WORLDS, ids=["catalog", "report"])
def test_without_the_check_the_lazy_persona_loses_most_items_in_both_agents(world_cls):
    world = world_cls(19)
    ours = replangraph_agent(verify=False, **FAST)(persona("lazy", world).model(), world)
    react = react_agent(persona("lazy", world).model(), world)
    assert ours.recovered == FAST["batch_size"]  # one batch of the size its rules give
    assert react.recovered == world.batch  # one page: nothing told it a batch size
    assert max(ours.recovered, react.recovered) / 19 < 0.3


def test_flaky_persona_needs_retries_a_plain_agent_gets_only_from_its_client():
    world = CatalogWorld(19)
    bare = react_agent(persona("flaky", world).model(client_retries=0), world)
    assert bare.recovered == 0 and bare.error in {"OpenAITimeoutError", "OpenAIConnectionError", "OpenAIRateLimitError"}
    flaky = persona("flaky", world)
    with_client = react_agent(flaky.model(client_retries=2), world)  # ChatOpenAI's default max_retries
    assert with_client.recovered == 19 and flaky.requests > with_client.calls  # client retries are unseen


def test_sloppy_persona_really_sends_the_sloppy_shapes():
    world = CatalogWorld(19)
    graph = build_graph(persona("sloppy", world).model(), tools=world.tools, config=AgentConfig(**FAST))
    events = [
        chunk
        for mode, chunk in graph.stream({"messages": [("user", world.goal)]}, stream_mode=["custom", "values"])
        if mode == "custom"
    ]
    [created] = [e for e in events if e["event"] == "plan_created"]
    assert "'researcher' does not exist" in created["notes"][0]
    [added] = [e for e in events if e["event"] == "dynamic_tasks_added"]
    assert "'browser' does not exist" in added["notes"][0]


def test_repeater_is_stopped_by_the_guard_and_replanned():
    world = ReportWorld(19)
    graph = build_graph(persona("repeater", world).model(), tools=world.tools, config=AgentConfig(**FAST))
    state = graph.invoke({"messages": [("user", world.goal)]})
    [record] = state["replans"]
    assert "repeated a refused replan_split_and_handoff call" in record["reason"]
    assert record["outcome"] == "replanned"
    assert world.score(state["final_answer"]) == 19


def test_meter_counts_failed_calls_and_tokens_by_node():
    world = CatalogWorld(19)
    meter = Meter()
    graph = build_graph(persona("flaky", world).model(), tools=world.tools, config=AgentConfig(**FAST))
    graph.invoke({"messages": [("user", world.goal)]}, {"callbacks": [meter]})
    assert meter.calls > len(meter.prompts)  # the failed tries are calls without an answer
    assert {node for node, _ in meter.prompts} >= {"planner", "executor", "finalize"}
    assert meter.largest({"executor"}) > 0 and meter.largest({"finalize"}) > 0


def test_default_limits_fit_a_1000_item_job():
    """20 subtasks of 50 items and about 40 model calls: the defaults must let it finish."""
    world = CatalogWorld(1000)
    outcome = replangraph_agent(verify=False)(persona("compliant", world).model(), world)
    assert outcome.recovered == 1000
    assert 40 <= outcome.calls <= 45
    assert outcome.largest_worker_prompt <= 8_000


def test_parallel_persona_reads_and_hands_off_in_one_message_and_nothing_is_lost():
    world = CatalogWorld(19)
    graph = build_graph(persona("parallel", world).model(), tools=world.tools, config=AgentConfig(**FAST))
    state = graph.invoke({"messages": [("user", world.goal)]})
    root = state["tasks"]["1"]
    assert root["status"] == "completed" and root["result"].startswith("Reading products 1-5 in this turn")
    assert TURN_OUTPUTS in root["result"] and world.score(root["result"]) == 5  # the batch read beside the hand-off
    assert [t["content"] for t in state["tasks"].values() if t.get("parent_id") == "1"] == [
        world.range_task(6, 10),
        world.range_task(11, 15),
        world.range_task(16, 19),
    ]
    assert world.score(state["final_answer"]) == 19


@pytest.mark.parametrize(
    ("world_cls", "size", "batch"),
    [(ReportWorld, 100, 20), (ReportWorld, 250, None), (CatalogWorld, 250, None)],
    ids=["report-100-batch-20", "report-250-default", "catalog-250-default"],
)
def test_a_lazy_model_that_reads_one_page_per_turn_loses_nothing(world_cls, size, batch):
    """Each check round gets one page further (4 or 5 items of a batch of 20 or 50): the check's
    follow-ups continue the same work, so they keep going past max_split_depth (when they counted as
    splits: 60/100, 120/250 and 125/250, the rest left to two replans)."""
    world = world_cls(size)
    lazy = persona("lazy", world, pages_per_turn=1)
    limits = {"retry_backoff_s": 0.0, **({"batch_size": batch} if batch else {})}
    outcome = replangraph_agent(verify=True, **limits)(lazy.model(), world)
    assert outcome.error is None
    assert outcome.recovered == size, f"{outcome.recovered}/{size}"
