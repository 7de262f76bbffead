"""What ``run --temporal`` shows of a run between the workflow's own ``values`` (`folded`): the updates written
into the state as the graph's reducers would, without the keys the view leaves out. Skipped without the temporal
extra."""

from __future__ import annotations

import pytest

pytest.importorskip("temporalio.langgraph", reason='needs the temporal extra: pip install "replangraph[temporal]"')

from langchain_core.messages import AIMessage  # noqa: E402
from langgraph.types import Interrupt  # noqa: E402

from replangraph.queue.tasks import RESET, new_task  # noqa: E402
from replangraph.temporal.remote import as_graph_input, folded  # noqa: E402


def test_updates_fold_into_the_view_as_the_state_reduces_them():
    planned = {RESET: True, "1": new_task("1", "first", position=[1]), "2": new_task("2", "second", position=[2])}
    view = folded({}, {"planner": {"goal": "g", "tasks": planned, "messages": [AIMessage("plan")]}})
    assert view["goal"] == "g" and list(view["tasks"]) == ["1", "2"] and "messages" not in view
    view = folded(
        view,
        {"executor": [{"tasks": {"1": {"status": "in_progress"}}, "windows": {"1": [AIMessage("turn")]}}]},
    )
    assert view["tasks"]["1"]["status"] == "in_progress" and view["tasks"]["1"]["content"] == "first"
    assert "windows" not in view
    view = folded(view, {"goal_check": {"node_calls": {"goal_check": 1}}})
    view = folded(view, {"goal_check": {"node_calls": {"goal_check": 2}}, "__interrupt__": (Interrupt("q", id="x"),)})
    assert view["node_calls"] == {"goal_check": 3}
    assert "__interrupt__" not in view


def test_pairs_become_messages_that_cross_the_converter():
    (message,) = as_graph_input({"messages": [("user", "a goal")]})["messages"]
    assert message.type == "human" and message.content == "a goal"
    assert as_graph_input("/status") == "/status"
