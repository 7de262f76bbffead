"""A subtask a limit stopped goes on in its own conversation: the pieces (replangraph.nodes.execution.continuing,
and the carried window's own part in replangraph.context)."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from scripting import kept

from replangraph import AgentConfig
from replangraph.context.carried import call_label, continued_id, own_part
from replangraph.context.outcomes import window_reads
from replangraph.context.window_outputs import marked_outputs
from replangraph.nodes.compression.compressor import folded_calls
from replangraph.nodes.execution.continuing import (
    LISTED_CHARS,
    call_groups,
    chain_calls,
    listed_calls,
    numbers_text,
    stopped_at_limit,
)
from replangraph.queue.tasks import new_task


def label(name: str, **args) -> str:
    return call_label({"name": name, "args": args})


def turn(call_id: str, name: str, text: str, **args) -> list:
    call = {"name": name, "args": args, "id": call_id, "type": "tool_call"}
    return [AIMessage("", tool_calls=[call]), ToolMessage(text, tool_call_id=call_id, name=name)]


# --------------------------------------------------------------------------- every call, compactly


def test_numbers_are_listed_as_runs():
    assert numbers_text([16, 1, 6, 11, 11]) == "1-16 step 5"
    assert numbers_text([1, 2, 3, 5]) == "1-3, 5"
    assert (numbers_text([3, 9]), numbers_text([1, 2]), numbers_text([7])) == ("3, 9", "1-2", "7")


def test_calls_are_grouped_by_tool_and_other_arguments():
    calls = [label("fetch", category=c, page=p) for c in ("books", "toys") for p in range(1, 8)]
    calls += [label("read_items", start=1, count=5), label("search", query="lamps")]
    assert call_groups(calls) == [
        'fetch {"category": "books"} ×7 with page 1-7',
        'fetch {"category": "toys"} ×7 with page 1-7',
        'read_items {"count": 5, "start": 1}',  # a call made once, as it was made
        'search {"query": "lamps"}',
    ]


def test_a_listing_names_every_call_however_many():
    """1,000 pages of 12 categories: every page is named, in a listing that does not grow with the pages (the last
    20 calls named 2 categories)."""
    categories = [f"category-{n}" for n in range(12)]
    calls = [label("fetch", category=c, page=p) for c in categories for p in range(1, 84)]
    listing, whole = listed_calls(calls)
    assert whole is None and all(f'{{"category": "{c}"}} ×83 with page 1-83' in listing for c in categories)
    assert len(listing) < 1_000


def test_a_listing_too_long_to_show_is_kept_whole():
    calls = [label("search", query=f"query number {n}") for n in range(500)]
    listing, whole = listed_calls(calls)
    assert len(listing) <= LISTED_CHARS and listing.endswith("more groups of calls")
    assert whole is not None and all(f"query number {n}" in whole for n in range(500))


def test_a_chain_lists_the_calls_of_each_link_in_turn():
    tasks = {
        "1": {"id": "1", "parent_id": None},
        "1_dyn_0": {"id": "1_dyn_0", "parent_id": "1", "continued": {"instructions": "x", "calls": ["a", "b"]}},
        "1_dyn_0_dyn_0": {
            "id": "1_dyn_0_dyn_0",
            "parent_id": "1_dyn_0",
            "continued": {"instructions": "x", "calls": ["c"]},
        },
    }
    assert chain_calls(tasks["1_dyn_0_dyn_0"], tasks) == ["a", "b", "c"]
    assert chain_calls(tasks["1"], tasks) == []


# --------------------------------------------------------------------------- the carried window


def carried() -> list:
    """Subtask 1's window (two pages read), then the note that opens 1_dyn_0's part, then a page of its own."""
    return [
        SystemMessage("s"),
        HumanMessage("Your subtask (1): list items 1-15"),
        *turn("a", "read_items", "item-1 item-2 item-3 item-4 item-5", start=1),
        *turn("b", "read_items", "item-6 item-7 item-8 item-9 item-10", start=6),
        HumanMessage("goes on", id=continued_id("1_dyn_0")),
        *turn("c", "read_items", "item-11 item-12 item-13 item-14 item-15", start=11),
    ]


def test_a_continuation_reads_and_calls_only_its_own_part_of_a_carried_window():
    window = carried()
    assert own_part("1_dyn_0", window) == window[-2:] and own_part("1", window) == window
    task = new_task("1_dyn_0", "list items 1-15", position=[0, 0])
    assert [r.text for r in window_reads(task, window)] == ["item-11 item-12 item-13 item-14 item-15"]


def test_outputs_kept_from_a_window_are_marked_so_a_carried_window_keeps_them_once():
    window, outputs = marked_outputs("1", carried())
    assert sorted(outputs) == ["a", "b", "c"]
    again, more = marked_outputs("1_dyn_0", window)
    assert more == {} and again == window
    assert window[3].response_metadata["replangraph_kept"] == "1/a" and window[3].content == carried()[3].content


def test_a_compression_records_the_calls_of_its_own_it_folds():
    window = carried()
    assert folded_calls("1_dyn_0", window, folded=7) == [label("read_items", start=11)]  # not 1's two calls
    assert folded_calls("1", window[:6], folded=2) == [label("read_items", start=1)]


def test_a_stopped_subtask_goes_on_at_once_in_its_window():
    task = {**new_task("1", "list items 1-15", position=[0]), "status": "in_progress", "model_calls": 3}
    window = carried()[:6]
    update = stopped_at_limit(task, {"1": task}, window, "no final answer", 3, AgentConfig(), ["default"])
    child = update["tasks"]["1_dyn_0"]
    assert update["tasks"]["1"]["status"] == "completed" and child["status"] == "in_progress"
    assert "read_items ×2 with start 1, 6" in child["content"]
    assert update["windows"]["1"] is None and update["windows"]["1_dyn_0"][:-1] == window
    note = update["windows"]["1_dyn_0"][-1]
    assert note.id == continued_id("1_dyn_0") and "read_items ×2 with start 1, 6" in note.content
    assert [e["event"] for e in update["events"]][:2] == ["dynamic_tasks_added", "step_started"]
    assert json.loads(json.dumps(child["continued"])) == {
        "instructions": "list items 1-15",
        "calls": [
            label("read_items", start=1),
            label("read_items", start=6),
        ],
    }


def test_a_listing_too_long_for_the_instructions_is_kept_and_named():
    task = {**new_task("1", "search everything", position=[0]), "status": "in_progress", "model_calls": 3}
    window = [SystemMessage("s"), HumanMessage("Your subtask (1): search everything")]
    for n in range(300):
        window += turn(f"q{n}", "search", f"hit number {n} for query {n}", query=f"query number {n}")
    update = stopped_at_limit(task, {"1": task}, window, "no final answer", 3, AgentConfig(), ["default"])
    child = update["tasks"]["1_dyn_0"]
    assert "every call is listed in output 1/calls-so-far" in child["content"]
    assert len(child["content"]) < 2 * LISTED_CHARS
    assert kept(update, "1")["calls-so-far"].count("search {") == 300
