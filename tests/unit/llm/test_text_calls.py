"""Tool calls written as text (`read_text_calls`), format by format, and what is not a call."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from replangraph.llm.formats import CUT_CALL, load_json, read_text_calls
from replangraph.llm.reading import CutOff, UnreadableInput, is_cut_json, repair_tool_calls

NAMES = ["search", "get_weather", "Plan"]
SEARCH = ("search", {"q": "rain"})
WEATHER = ("get_weather", {"city": "Oslo"})


def read(text: str) -> tuple[list[tuple[str, dict]], list[str], str]:
    found = read_text_calls(text, NAMES)
    return [(c["name"], c["args"]) for c in found.calls], [c["name"] for c in found.cut], found.rest


@pytest.mark.parametrize(
    "text, calls",
    [
        ('<tool_call>\n{"name": "search", "arguments": {"q": "rain"}}\n</tool_call>', [SEARCH]),
        ('<tool_call>{"name": "search", "arguments": {"q": "rain"}}', [SEARCH]),  # never closed
        ('<|tool_call|>[{"name": "search", "arguments": {"q": "rain"}}]<|/tool_call|>', [SEARCH]),
        ('[TOOL_CALLS] [{"name": "search", "arguments": {"q": "rain"}}]', [SEARCH]),
        ('[TOOL_CALLS]search[ARGS]{"q": "rain"}', [SEARCH]),
        ('[TOOL_CALLS]search[CALL_ID]a1b2c3d4e[ARGS]{"q": "rain"}', [SEARCH]),
        ('[TOOL_CALLS]search{"q": "rain"}[TOOL_CALLS]get_weather{"city": "Oslo"}', [SEARCH, WEATHER]),
        ('<|python_tag|>{"name": "search", "parameters": {"q": "rain"}}<|eom_id|>', [SEARCH]),
        ('<|python_tag|>search.call(q="rain")', [SEARCH]),
        ('<function=search>{"q": "rain"}</function>', [SEARCH]),
        ('```json\n{"name": "search", "arguments": {"q": "rain"}}\n```', [SEARCH]),
        ('{"name": "search", "parameters": {"q": "rain"}}', [SEARCH]),
        ('{"name": "search", "arguments": "{\\"q\\": \\"rain\\"}"}', [SEARCH]),  # arguments as a JSON string
        ('{"type": "function", "function": {"name": "search", "arguments": {"q": "rain"}}}', [SEARCH]),
        ('[search(q="rain"), get_weather(city="Oslo")]', [SEARCH, WEATHER]),  # Llama 3.2 pythonic
        ('```tool_code\nsearch(q="rain")\n```', [SEARCH]),  # Gemma
    ],
    ids=[
        "qwen-hermes tags",
        "unclosed tag",
        "granite-phi tags",
        "mistral list",
        "mistral named",
        "mistral with call id",
        "mistral v11 special tokens skipped",
        "llama python_tag json",
        "llama built-in call",
        "llama function tag",
        "fenced json",
        "bare json with parameters",
        "arguments as a string",
        "openai shape",
        "pythonic list",
        "gemma tool_code",
    ],
)
def test_every_format_gives_the_call(text, calls):
    assert read(text) == (calls, [], "")


def test_several_calls_in_one_message_keep_their_order():
    tags = (
        '<tool_call>{"name": "search", "arguments": {"q": "rain"}}</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    )
    assert read(tags)[0] == [SEARCH, WEATHER]
    mistral = (
        '[TOOL_CALLS] [{"name": "search", "arguments": {"q": "rain"}}, '
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}]'
    )
    assert read(mistral)[0] == [SEARCH, WEATHER]
    llama = (
        '<|python_tag|>{"name": "search", "parameters": {"q": "rain"}}; '
        '{"name": "get_weather", "parameters": {"city": "Oslo"}}'
    )
    assert read(llama)[0] == [SEARCH, WEATHER]
    found = read_text_calls(tags, NAMES)
    assert len({c["id"] for c in found.calls}) == 2  # each call its own id


def test_prose_around_the_calls_is_kept_as_the_rest():
    text = 'Let me look that up.\n<tool_call>{"name": "search", "arguments": {"q": "rain"}}</tool_call>\nOne moment.'
    assert read(text) == ([SEARCH], [], "Let me look that up.\n\nOne moment.")
    bare = 'I will call it: {"name": "get_weather", "arguments": {"city": "Oslo"}} and report back.'
    assert read(bare) == ([WEATHER], [], "I will call it:  and report back.")


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>',  # a tool the request did not offer
        '{"name": "Oslo", "population": 700000}',  # JSON that is no call
        'Result: {"summary": {"name": "search", "arguments": {"q": "rain"}}}',  # a call inside another value
        '{"name": "search"}',  # bare JSON naming a tool but no arguments
        "search the web for rain",
    ],
)
def test_unknown_text_stays_the_answer(text):
    assert read(text) == ([], [], text.strip())


def test_names_are_matched_loosely_to_the_offered_tools():
    assert read('<tool_call>{"name": "Get-Weather", "arguments": {"city": "Oslo"}}</tool_call>')[0] == [WEATHER]


@pytest.mark.parametrize(
    "text, name",
    [
        ('<tool_call>{"name": "Plan", "arguments": {"tasks": [{"id": "1"}, {"id": "2"', "Plan"),
        ('[TOOL_CALLS] [{"name": "search", "arguments": {"q": "ra', "search"),
        ('<function=search>{"q": "ra', "search"),
        ('Here: {"name": "search", "arguments": {"q": "ra', "search"),
        ('```json\n{"name": "Plan", "arguments": {"tasks": [{"id": "1"}', "Plan"),
    ],
)
def test_a_call_the_text_ends_inside_of_is_cut_never_a_smaller_call(text, name):
    calls, cut, _ = read(text)
    assert calls == [] and cut == [name]
    [invalid] = read_text_calls(text, NAMES).cut
    assert invalid["type"] == "invalid_tool_call" and CUT_CALL in invalid["error"]


def test_load_json_refuses_truncated_json_instead_of_reading_its_first_inner_object():
    plan = '{"tasks": [' + ", ".join(f'{{"id": "{i}", "content": "step {i}"}}' for i in range(1, 98))
    with pytest.raises(CutOff, match="cut off"):
        load_json(plan[:-40])
    with pytest.raises(CutOff):
        load_json("Here is the plan:\n```json\n" + plan[:-40])
    assert len(load_json(plan + "]}")["tasks"]) == 97
    assert load_json('see [below] {"a": 1}') == {"a": 1}  # prose in brackets is no cut JSON
    with pytest.raises(UnreadableInput, match="not valid JSON"):
        load_json('{"a": 1,,}')


def test_repair_turns_text_calls_into_tool_calls_and_keeps_the_prose():
    reply = AIMessage('Checking.\n<tool_call>{"name": "search", "arguments": {"q": "rain"}}</tool_call>')
    repaired = repair_tool_calls(reply, NAMES)
    assert [(c["name"], c["args"]) for c in repaired.tool_calls] == [SEARCH]
    assert repaired.content == "Checking."
    plain = AIMessage("No tool needed: it rains.")
    assert repair_tool_calls(plain, NAMES) is plain


def test_repair_answers_a_cut_call_as_cut():
    reply = AIMessage('<tool_call>{"name": "search", "arguments": {"q": "ra')
    repaired = repair_tool_calls(reply, NAMES)
    [invalid] = repaired.invalid_tool_calls
    assert not repaired.tool_calls and invalid["name"] == "search" and CUT_CALL in invalid["error"]
    broken = AIMessage("", invalid_tool_calls=[{"name": "search", "args": '{"q": "ra', "id": "c1", "error": None}])
    assert CUT_CALL in repair_tool_calls(broken, NAMES).invalid_tool_calls[0]["error"]


def test_a_reply_the_output_limit_ended_has_its_last_call_marked_cut():
    # A streamed call's arguments are closed by a partial parse: they look whole, but the limit ended them.
    reply = AIMessage(
        "",
        tool_calls=[
            {"name": "search", "args": {"q": "rain"}, "id": "c1"},
            {"name": "Plan", "args": {"tasks": [{"id": "1"}]}, "id": "c2"},
        ],
        response_metadata={"finish_reason": "length"},
    )
    repaired = repair_tool_calls(reply, NAMES)
    assert [c["id"] for c in repaired.tool_calls] == ["c1"]
    [cut] = repaired.invalid_tool_calls
    assert cut["id"] == "c2" and CUT_CALL in cut["error"]


def test_calls_that_share_an_id_get_distinct_ones_and_unique_ones_stay():
    # Some OpenAI-compatible servers give every call of a reply one id.
    reply = AIMessage(
        "",
        tool_calls=[{"name": "search", "args": {"q": q}, "id": "call_0"} for q in ("a", "b", "c")],
        invalid_tool_calls=[{"name": "search", "args": '{"q": ', "id": "call_0", "error": None}],
    )
    repaired = repair_tool_calls(reply, NAMES)
    assert [c["id"] for c in repaired.tool_calls] == ["call_0", "call_0_2", "call_0_3"]
    assert [c["args"]["q"] for c in repaired.tool_calls] == ["a", "b", "c"]
    assert [c["id"] for c in repaired.invalid_tool_calls] == ["call_0_4"]
    distinct = AIMessage("", tool_calls=[{"name": "search", "args": {"q": "a"}, "id": "c1"}])
    assert repair_tool_calls(distinct, NAMES) is distinct


@pytest.mark.parametrize(
    ("text", "cut"),
    [
        ('{"tasks": [{"id": "1", "content": "find the', True),
        ('```json\n[{"city": "Lima"\n```', True),
        ('{"city": "Lima"}', False),
        ("[1] Lima is in Peru; [2", False),
        ("[see below] Lima is in Peru {", False),
        ("Lima is in Peru.", False),
        ("", False),
    ],
)
def test_only_json_that_opens_the_text_and_never_closes_is_cut_json(text, cut):
    assert is_cut_json(text) is cut
