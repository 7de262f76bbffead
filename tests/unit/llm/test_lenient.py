"""Lenient reading of model output (pure functions)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ToolMessage

from replangraph.llm.formats import load_json, strip_fences
from replangraph.llm.lenient import truthy
from replangraph.llm.reading import (
    UnreadableInput,
    as_text,
    id_list,
    match_name,
    message_text,
    plan_specs,
    task_specs,
)
from replangraph.queue.plans import coerce_agent_types, normalize_plan


def test_strip_fences_prefers_the_block_that_holds_json():
    assert strip_fences("Sure!\n```json\n[1, 2]\n```\nanything else") == "[1, 2]"
    assert strip_fences("```text\na note\n```\nthen\n```json\n[3]\n```") == "[3]"
    assert strip_fences("```\nplain\n```") == "plain"
    assert strip_fences("  no fence ") == "no fence"


def test_load_json_finds_json_in_prose_and_explains_failures():
    assert load_json('The plan is {"tasks": []} as you asked.') == {"tasks": []}
    with pytest.raises(UnreadableInput, match="not valid JSON"):
        load_json("no json here")
    with pytest.raises(UnreadableInput, match="levels deep"):
        load_json("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize(
    "value, text",
    [
        ("plain", "plain"),
        (None, ""),
        (["#1 A", "#2 B"], "#1 A\n#2 B"),
        ([{"type": "text", "text": "block"}], "block"),
        ([{"type": "text", "text": "cited", "citations": [{"url": "u"}], "cache_control": {}}], "cited"),
        ({"name": "A", "units": 3}, '{"name": "A", "units": 3}'),
        (42, "42"),
    ],
)
def test_as_text_accepts_what_models_send_for_strings(value, text):
    assert as_text(value) == text


@pytest.mark.parametrize(
    "value, ids",
    [
        (["1", 2], ["1", "2"]),
        ("1, 2; 3", ["1", "2", "3"]),
        ("task 1 and task 2", ["task 1", "task 2"]),
        ("none", []),
        ("[1, 2]", ["1", "2"]),
        (7, ["7"]),
        (None, []),
    ],
)
def test_id_list(value, ids):
    assert id_list(value) == ids


@pytest.mark.parametrize(
    "value, answer",
    [(True, True), ("yes", True), ("Complete.", True), ("no", False), ("incomplete", False), (0, False), ("?", None)],
)
def test_truthy(value, answer):
    assert truthy(value) is answer


def test_task_specs_shapes_and_key_names():
    assert task_specs('[{"instruction": "a", "agent": "Browser"}, "b"]') == [
        {"content": "a", "agent_type": "Browser"},
        {"content": "b", "agent_type": None},
    ]
    assert task_specs("1. first\n2) second\n- [ ] third") == [
        {"content": c, "agent_type": None} for c in ("first", "second", "third")
    ]
    only_items = [{"content": c, "agent_type": None} for c in ("first", "second")]
    assert task_specs("Remaining tasks:\n- first\n- second") == only_items  # a heading is not a task
    assert task_specs('Here are the tasks: ["first", "second"]') == only_items
    assert task_specs('```text\nSome notes\n```\n```json\n["first", "second"]\n```') == only_items
    with pytest.raises(UnreadableInput, match="empty"):
        task_specs("   ")


def test_plan_specs_never_reads_prose_as_a_plan():
    with pytest.raises(UnreadableInput, match="JSON list"):
        plan_specs("search flights, then compare them")
    assert plan_specs({"plan": [{"step": 1, "title": "search"}]}) == [
        {"id": "1", "content": "search", "agent_type": None, "depends_on": []}
    ]


def test_match_name_is_loose_about_case_spaces_and_dashes():
    assert match_name("Web-Browser", ["default", "web_browser"]) == "web_browser"
    assert match_name("painter", ["default"]) is None


def test_coerce_agent_types_notes_each_unknown_type_once():
    specs, notes = coerce_agent_types(
        [{"id": "a", "agent_type": "x"}, {"id": "b", "agent_type": "x"}, {"id": "c", "agent_type": None}],
        ["default"],
        "default",
    )
    assert [s["agent_type"] for s in specs] == ["default"] * 3
    assert notes == ["agent type 'x' does not exist (known: default); tasks a, b run as 'default'"]


def test_normalize_plan_reads_loose_dependency_spellings_and_drops_self_dependencies():
    specs, notes = normalize_plan(
        [{"id": " 1 ", "content": " a "}, {"id": "2", "content": "b", "depends_on": ["Task 1", "2", "Task 1"]}]
    )
    assert specs == [
        {"id": "1", "content": "a", "depends_on": []},
        {"id": "2", "content": "b", "depends_on": ["1"]},
    ]
    assert len(notes) == 3  # "Task 1" read as "1" (twice), self-dependency dropped


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)


@given(json_values)
def test_task_specs_either_reads_or_explains_never_crashes(value):
    try:
        specs = task_specs(value)
    except UnreadableInput as exc:
        assert str(exc)
    else:
        assert specs and all(s["content"].strip() for s in specs)


def test_the_items_of_a_tool_output_list_are_lines_and_a_reply_s_blocks_run_on():
    listed = ToolMessage(["alpha", "beta", {"type": "text", "text": "gamma"}, {"type": "image"}], tool_call_id="c1")
    assert message_text(listed) == "alpha\nbeta\ngamma"
    streamed = AIMessage([{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}])
    assert message_text(streamed) == "Hello"
