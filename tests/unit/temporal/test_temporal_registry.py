"""replangraph.temporal's registry, without a server: `temporal_builder` makes `build_graph`'s graph fit for
temporalio-langgraph (every node placed, error handlers in the workflow, async routers, nodes registered for
`run_node`). Skipped without the temporal extra."""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("temporalio.langgraph", reason='needs the temporal extra: pip install "replangraph[temporal]"')

from replangraph import AgentConfig, build_graph  # noqa: E402
from replangraph.hosting import pauses_run  # noqa: E402
from replangraph.names import TOOLS  # noqa: E402
from replangraph.nodes.human.names import ASK, PLAN_REVIEW  # noqa: E402
from replangraph.temporal import registry, run_defaults, run_node, temporal_builder  # noqa: E402
from replangraph.testing import ScriptedChatModel  # noqa: E402


def example(**settings):
    return build_graph(ScriptedChatModel(respond=lambda request: "done"), config=AgentConfig(**settings))


@pytest.mark.parametrize("in_workflow", [(), (TOOLS,)], ids=["nodes as activities", "tools node in the workflow"])
def test_every_node_is_placed(in_workflow):
    compiled = example()
    pausing = {name for name, spec in compiled.builder.nodes.items() if pauses_run(spec.runnable)}
    assert pausing == {ASK, PLAN_REVIEW}  # the nodes that pause, flagged by their feature
    builder = temporal_builder(compiled, name="test-placed", in_workflow=in_workflow)
    for name, spec in builder.nodes.items():
        placed = (spec.metadata or {}).get("execute_in")
        if spec.is_error_handler or name in in_workflow or name in pausing:
            assert placed == "workflow", name
        else:
            assert placed == "activity", name
            assert spec.runnable.afunc is run_node, name
            assert spec.metadata[registry.GRAPH_KEY] == "test-placed"
            assert name in registry._nodes["test-placed"]
    assert any(spec.is_error_handler for spec in builder.nodes.values())


def test_routers_have_an_async_path():
    """A sync router's async path would be ``run_in_executor``, which the workflow's event loop refuses."""
    builder = temporal_builder(example(), name="test-routers")
    paths = [branch.path for branches in builder.branches.values() for branch in branches.values()]
    assert paths
    for path in paths:
        assert path.afunc is not None and inspect.iscoroutinefunction(path.afunc), path.name


def test_run_defaults_keep_the_compiled_limits():
    defaults = run_defaults(example(max_steps=7))
    assert defaults["recursion_limit"] > 0
    assert set(defaults) <= {"recursion_limit", "max_concurrency"}


def test_a_graph_with_a_store_is_refused_before_connecting():
    import asyncio

    from langgraph.store.memory import InMemoryStore

    from replangraph.temporal import serve

    graph = build_graph(ScriptedChatModel(respond=lambda request: "done"), store=InMemoryStore())
    with pytest.raises(ValueError, match="store cannot run on Temporal"):
        asyncio.run(serve("127.0.0.1:1", graph))  # refused before it tries the (absent) server
