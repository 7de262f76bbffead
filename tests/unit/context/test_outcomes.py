"""The update builders are pure: their writes and events travel in the update; `collect_writes` applies them."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.store.memory import InMemoryStore
from scripting import kept

from replangraph.context.carried import READS_HEAD
from replangraph.context.fitting import mark_kept
from replangraph.context.outcomes import (
    announced,
    completed,
    completed_with_window,
    failed,
    failed_with_window,
    merge_updates,
)
from replangraph.context.workspace import apply_effects, collect_writes, open_workspace
from replangraph.queue.tasks import new_task

TASK = {**new_task("1", "x", position=[0]), "status": "in_progress"}
NAMESPACE = ("replangraph", "default")


@pytest.fixture
def sent():
    """The events that reach the custom stream."""
    events: list[dict] = []
    with patch("replangraph.events.get_stream_writer", return_value=events.append):
        yield events


def test_completed_outside_a_run_writes_nothing_and_returns_its_entries_and_events(sent):
    update = completed(TASK, "the answer", 3)
    assert update["tasks"]["1"]["status"] == "completed" and update["windows"] == {"1": None}
    entries = update["workspace"]["plan:1:step:1"]
    assert entries[":result:v1"]["content"] == entries[":result"]["content"] == "the answer"
    assert [e["event"] for e in update["events"]] == ["step_completed"] and update["events"][0]["task_id"] == "1"
    assert sent == []


def test_failed_keeps_a_partial_result_and_its_window_as_entries(sent):
    window = [SystemMessage("s"), HumanMessage("h"), AIMessage(""), ToolMessage("FACT", tool_call_id="c")]
    update = failed_with_window(TASK, window, "boom", 2, result="half done")
    assert "its window is kept as output 1/window-at-failure" in update["tasks"]["1"]["error"]
    assert set(kept(update, "1")) == {"c", "window-at-failure"} and kept(update, "1")["c"] == "FACT"
    # The partial result carries what the window read (its tools' outputs), after the agent's words.
    partial = update["workspace"]["plan:1:step:1"][":result"]["content"]
    assert partial == f"half done\n\n{READS_HEAD}\n\n[tool {{}}]\nFACT"
    assert [e["event"] for e in update["events"]] == ["step_failed"] and sent == []


def test_completed_keeps_the_window_outputs_not_kept_already_and_the_result_carries_what_it_omits(sent):
    dropped = mark_kept(ToolMessage("x", tool_call_id="d"), "[output removed from context]", "1/d")
    calls = AIMessage(
        "", tool_calls=[{"name": "look", "args": {"n": 1}, "id": "d"}, {"name": "look", "args": {}, "id": "c"}]
    )
    window = [SystemMessage("s"), HumanMessage("h"), calls, dropped, ToolMessage("FACT", tool_call_id="c", name="look")]
    before = {"plan:1:step:1": {":output:d": {"content": "OLD FINDING"}, ":output:c": {"content": "EARLIER"}}}
    with open_workspace(before):
        update = completed_with_window(TASK, window, "the answer", 3)
    assert kept(update, "1") == {"c~2": "FACT"}  # ``d`` is kept already; ``c`` holds another text
    # The answer shows neither output: both follow it, the dropped one read back whole from the workspace.
    carried = f'the answer\n\n{READS_HEAD}\n\n[look {{"n": 1}}]\nOLD FINDING\n\n[look {{}}]\nFACT'
    assert update["workspace"]["plan:1:step:1"][":result"]["content"] == carried
    assert update["tasks"]["1"]["result"] == carried and update["windows"] == {"1": None}
    with open_workspace(before):
        shown = completed_with_window(TASK, window, "the answer: OLD FINDING and FACT", 3)
    assert shown["tasks"]["1"]["result"] == "the answer: OLD FINDING and FACT"  # it shows them: nothing added
    assert [e["event"] for e in update["events"]] == ["step_completed"] and sent == []


def test_merged_updates_keep_every_entry_and_event_in_order():
    other = {**TASK, "id": "2"}
    merged = merge_updates([announced([{"event": "first"}], completed(TASK, "a")), failed(other, "no", 1)])
    assert [e["event"] for e in merged["events"]] == ["first", "step_completed", "step_failed"]
    assert set(merged["workspace"]) == {"plan:1:step:1"} and set(merged["tasks"]) == {"1", "2"}


def test_applying_writes_the_entries_to_the_store_then_sends_the_events(sent):
    store = InMemoryStore()
    update = apply_effects(completed(TASK, "the answer"), store)
    assert "workspace" not in update and "events" not in update and update["tasks"]["1"]["status"] == "completed"
    assert store.get(NAMESPACE, "plan:1:step:1:result:v1").value["content"] == "the answer"
    assert [e["event"] for e in sent] == ["step_completed"]


def test_a_node_sends_its_events_only_when_it_returns(sent):
    @collect_writes
    def node(state):
        update = completed(TASK, "the answer")
        if state.get("crash"):
            raise RuntimeError("crash after the update was built")
        return update

    with pytest.raises(RuntimeError):
        node({"crash": True})
    assert sent == []
    update = node({})
    assert [e["event"] for e in sent] == ["step_completed"] and "events" not in update
    assert update["workspace"]["plan:1:step:1"][":result"]["content"] == "the answer"  # no store: channel writes
