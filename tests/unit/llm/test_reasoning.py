"""Reasoning is not an answer: every shape a reasoning model sends it in stays on the message, out of its text."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from replangraph.llm.answers import reply_text
from replangraph.llm.reading import answer_text, parted_thinking, repair_tool_calls, split_reasoning
from replangraph.llm.structured import quoted


@pytest.mark.parametrize(
    "text, answer, reasoning",
    [
        ("<think>count them</think>19 items", "19 items", "count them"),
        ("<think>a</think>one<think>b</think> two", "one two", "a\n\nb"),
        ("<thinking>hmm</thinking>\nDone.", "Done.", "hmm"),
        ("<reasoning>why</reasoning>Done.", "Done.", "why"),
        ("so 19 it is</think>\n19 items", "19 items", "so 19 it is"),  # the server ate the opening tag
        ("<think>still counting", "", "still counting"),  # cut before the answer
        ("19 items\n<think>should I check", "19 items", "should I check"),  # an unclosed block after the answer
        ("no reasoning here", "no reasoning here", ""),
    ],
    ids=["block", "two blocks", "thinking tag", "reasoning tag", "orphan close", "unclosed", "unclosed late", "none"],
)
def test_think_blocks_are_parted_from_the_answer(text, answer, reasoning):
    assert parted_thinking(text) == (answer, reasoning)


def test_removed_reasoning_stays_on_the_message():
    reply = split_reasoning(AIMessage("<think>count them</think>19 items"))
    assert reply.content == "19 items" and reply.additional_kwargs["reasoning_content"] == "count them"


def test_a_providers_reasoning_content_is_left_as_it_is():
    reply = AIMessage(
        "<think>copy</think>19 items", additional_kwargs={"reasoning_content": "the provider's own reasoning"}
    )
    split = split_reasoning(reply)
    assert split.content == "19 items"
    assert split.additional_kwargs["reasoning_content"] == "the provider's own reasoning"
    plain = AIMessage("19 items", additional_kwargs={"reasoning_content": "thought"})
    assert split_reasoning(plain) is plain and answer_text(plain) == "19 items"


@pytest.mark.parametrize(
    "content",
    [
        [{"type": "reasoning", "reasoning": "count"}, {"type": "text", "text": "19 items"}],
        [{"type": "thinking", "thinking": "count", "signature": "s"}, {"type": "text", "text": "19 items"}],
        [{"type": "text", "text": "<think>count</think>19 items"}],
    ],
    ids=["reasoning block", "thinking block", "think in a text block"],
)
def test_reasoning_blocks_are_no_answer_and_stay_on_the_message(content):
    reply = AIMessage(content=content)
    assert answer_text(reply) == "19 items"
    split = split_reasoning(reply)
    assert answer_text(split) == "19 items"
    kept = [b for b in split.content if b.get("type") in ("reasoning", "thinking")]
    assert kept == [b for b in content if b.get("type") in ("reasoning", "thinking")]


def test_a_call_in_the_reasoning_is_not_made_but_one_after_it_is():
    text = (
        '<think>maybe <tool_call>{"name": "search", "arguments": {"q": "snow"}}</tool_call>? no</think>'
        '<tool_call>{"name": "search", "arguments": {"q": "rain"}}</tool_call>'
    )
    reply = repair_tool_calls(split_reasoning(AIMessage(text)), ["search"])
    assert [c["args"] for c in reply.tool_calls] == [{"q": "rain"}]
    assert "snow" in reply.additional_kwargs["reasoning_content"]


def test_the_structured_loop_reads_and_quotes_no_reasoning():
    answer = {"raw": AIMessage("<think>long musing</think>plain words"), "parsed": None}
    assert reply_text(answer) == "plain words" and quoted(answer) == "plain words"
