"""Each of LangGraph's private parts replangraph uses (`replangraph.langgraph_private`) still is where it was and
still does what replangraph relies on: an upgrade that moves or changes one fails here, naming the part, before
anything that uses it misbehaves quietly."""

from __future__ import annotations

import asyncio
import importlib
import operator
from typing import Annotated

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config
from langgraph.graph import START, StateGraph
from langgraph.runtime import get_runtime
from langgraph.types import Command
from typing_extensions import TypedDict

from replangraph import langgraph_private as private

UPSTREAM = {
    "CONFIG_KEY_CALL": "langgraph._internal._constants",
    "CONFIG_KEY_CHECKPOINTER": "langgraph._internal._constants",
    "CONFIG_KEY_DURABILITY": "langgraph._internal._constants",
    "CONFIG_KEY_NODE_ERROR": "langgraph._internal._constants",
    "CONFIG_KEY_RUNTIME": "langgraph._internal._constants",
    "RunnableCallable": "langgraph._internal._runnable",
}


class State(TypedDict):
    seen: Annotated[list, operator.add]


def one_node_graph(node, **compile_args):
    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    return builder.compile(**compile_args)


def test_the_module_names_every_part_it_takes_and_each_is_where_it_was():
    assert sorted(private.__all__) == sorted([*UPSTREAM, "pregel_checkpoint"])
    assert private.pregel_checkpoint is importlib.import_module("langgraph.pregel._checkpoint")
    assert callable(private.pregel_checkpoint.uuid6), "langgraph.pregel._checkpoint no longer names checkpoints"
    for name, module in UPSTREAM.items():
        assert getattr(importlib.import_module(module), name, None) is getattr(private, name), (
            f"langgraph moved {module}.{name}: replangraph.langgraph_private needs a new source for it"
        )


@pytest.mark.parametrize("checkpointer", [None, InMemorySaver()], ids=["without", "with"])
def test_a_nodes_config_holds_the_checkpointer_and_the_task_starter(checkpointer):
    found = {}

    def node(state):
        configurable = get_config()["configurable"]
        found["checkpointer"] = configurable.get(private.CONFIG_KEY_CHECKPOINTER)
        found["can_start_tasks"] = private.CONFIG_KEY_CALL in configurable
        found["runtime"] = configurable.get(private.CONFIG_KEY_RUNTIME) is get_runtime()
        return {"seen": ["node"]}

    one_node_graph(node, checkpointer=checkpointer).invoke({"seen": []}, {"configurable": {"thread_id": "t"}})
    assert found == {"checkpointer": checkpointer, "can_start_tasks": True, "runtime": True}


def test_the_durability_key_sets_how_often_a_run_is_checkpointed():
    builder = StateGraph(State)
    for name in ("a", "b", "c"):
        builder.add_node(name, lambda state, name=name: {"seen": [name]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")

    def checkpoints(durability: str) -> int:
        saver = InMemorySaver()
        graph = builder.compile(checkpointer=saver).with_config(
            configurable={private.CONFIG_KEY_DURABILITY: durability}
        )
        run = {"configurable": {"thread_id": durability}}
        assert graph.invoke({"seen": []}, run)["seen"] == ["a", "b", "c"]
        return len(list(graph.get_state_history(run)))

    assert checkpoints("exit") < checkpoints("sync")


def test_an_error_handler_node_finds_the_error_in_its_config():
    found = []

    def failing(state):
        raise RuntimeError("boom")

    def handler(state, config):
        found.append(config["configurable"][private.CONFIG_KEY_NODE_ERROR])
        return Command(update={"seen": ["handled"]})

    builder = StateGraph(State)
    builder.add_node("node", failing, error_handler=handler)
    builder.add_edge(START, "node")
    assert builder.compile().invoke({"seen": []})["seen"] == ["handled"]
    [error] = found
    assert "boom" in str(getattr(error, "error", error))


def test_a_runnable_callable_runs_its_sync_path_under_invoke_and_its_async_path_under_ainvoke():
    async def asynchronous(value):
        return f"async {value}"

    both = private.RunnableCallable(lambda value: f"sync {value}", asynchronous, name="both", trace=False)
    assert both.invoke("x") == "sync x"
    assert asyncio.run(both.ainvoke("x")) == "async x"
