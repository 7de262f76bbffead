"""The one structured-output loop (`structured_steps`, driven by `run_steps` as the nodes drive it): reading the
answer, asking again with what was wrong, counting calls, and what ends the asking."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.errors import GraphInterrupt
from pydantic import BaseModel

from replangraph import AgentConfig
from replangraph.llm.answers import Provisional, bind_schema, read_arguments
from replangraph.llm.calls import run_steps
from replangraph.llm.reading import UnreadableInput
from replangraph.llm.structured import structured_steps
from replangraph.testing import ScriptedChatModel, tool_call

CONFIG = AgentConfig(retry_backoff_s=0, model_retries=2)
RETRY = "Could not use it: {error}\nPrevious answer: {previous}\nCall the Answer tool."
ASK = [HumanMessage("What is 6 x 7?")]


class Answer(BaseModel):
    """The number asked for."""

    value: int


def read_value(answer) -> int:
    """The ``value`` of an `Answer`, read leniently; UnreadableInput when it is not a number."""
    args = read_arguments(answer, "Answer")
    if not isinstance(args, dict) or not isinstance(args.get("value"), int):
        raise UnreadableInput("no whole number under 'value'")
    return args["value"]


def asking(respond, retries: int = 1, read=read_value):
    """The answer of a scripted model replying ``respond(request)``, and the requests it saw."""
    seen = []

    def recorded(request):
        seen.append(request)
        return respond(request)

    structured = bind_schema(ScriptedChatModel(respond=recorded), Answer)
    answer = run_steps(structured_steps(structured, ASK, read, retries=retries, config=CONFIG, retry_prompt=RETRY))
    return answer, seen


@pytest.mark.parametrize(
    "reply",
    [
        tool_call("Answer", {"value": 42}),
        '{"value": 42}',
        'Here it is:\n```json\n{"value": 42}\n```',
        '<think>Maybe {"value": 41}? No.</think>{"value": 42}',
        AIMessage(content=[{"type": "text", "text": '{"value": 42}'}]),
        '<tool_call>\n{"name": "Answer", "arguments": {"value": 42}}\n</tool_call>',
        'Sure.\n[TOOL_CALLS] [{"name": "Answer", "arguments": {"value": 42}}]',
        '<|python_tag|>{"name": "Answer", "parameters": {"value": 42}}',
        '<function=Answer>{"value": 42}</function>',
        '<think>{"value": 41}?</think>{"name": "answer", "arguments": {"value": 42}}',
        AIMessage(
            content=[{"type": "reasoning", "reasoning": '{"value": 41}'}, {"type": "text", "text": '{"value": 42}'}]
        ),
    ],
    ids=[
        "tool call",
        "JSON text",
        "fenced JSON",
        "think then JSON",
        "content blocks",
        "tool_call tags",
        "mistral",
        "llama python_tag",
        "llama function",
        "think then bare call",
        "reasoning block",
    ],
)
def test_the_answer_is_read_however_it_comes(reply):
    answer, seen = asking(lambda r: reply)
    assert (answer.value, answer.calls, answer.error) == (42, 1, "")
    assert seen[0].tool_names == ("Answer",)  # the schema is bound as a tool


def test_an_unreadable_answer_is_asked_about_again_with_the_reason_and_the_answer_quoted():
    def respond(request):
        return '{"value": 42}' if "Could not use it" in request.prompt else "forty-two"

    answer, seen = asking(respond)
    assert (answer.value, answer.calls) == (42, 2)
    retry = seen[1].messages[-1].content
    assert "not valid JSON" in retry and "Previous answer: forty-two" in retry
    assert seen[1].messages[0].content == ASK[0].content  # the request is repeated, the retry added


def test_an_answer_unreadable_every_time_gives_no_value_and_the_last_reason():
    answer, seen = asking(lambda r: tool_call("Answer", {"value": "lots"}), retries=1)
    assert answer.value is None and answer.calls == 2 and len(seen) == 2
    assert answer.error == "no whole number under 'value'"
    assert not answer.unanswered and answer.failure is None


def test_no_retries_asks_once():
    answer, seen = asking(lambda r: "no idea", retries=0)
    assert answer.value is None and answer.calls == 1 and "not valid JSON" in answer.error


def test_transient_errors_are_retried_inside_an_ask_and_counted():
    failures = []

    def respond(request):
        if len(failures) < 2:
            failures.append(1)
            raise ConnectionError("flaky")
        return tool_call("Answer", {"value": 42})

    answer, seen = asking(respond)
    assert (answer.value, answer.calls) == (42, 3)


def test_a_model_that_stays_down_ends_the_asking_with_its_attempts_counted():
    def respond(request):
        raise ConnectionError("down")

    answer, seen = asking(respond, retries=3)
    assert answer.value is None and answer.calls == 3 and len(seen) == 3  # model_retries=2: no further asks
    assert answer.unanswered and isinstance(answer.failure, ConnectionError)
    assert answer.error == "model call failed: ConnectionError: down"


def test_a_permanent_error_ends_the_asking_at_once():
    def respond(request):
        raise ValueError("bad request")

    answer, seen = asking(respond)
    assert answer.value is None and answer.calls == 1 and not answer.unanswered


def test_a_graph_bubble_up_is_re_raised():
    def respond(request):
        raise GraphInterrupt(())

    with pytest.raises(GraphInterrupt):
        asking(respond)


def test_a_provisional_answer_is_asked_about_again_and_kept_when_no_better_one_comes():
    def read(answer):
        value = read_value(answer)
        if value != 42:
            raise Provisional(f"{value} is close; check it", value)
        return value

    answer, seen = asking(lambda r: tool_call("Answer", {"value": 41}), read=read)
    assert (answer.value, answer.calls, answer.error) == (41, 2, "")
    assert "41 is close" in seen[1].messages[-1].content


def test_a_provisional_answer_is_kept_when_the_model_fails_later():
    def respond(request):
        if "Could not use it" in request.prompt:
            raise ValueError("gone")
        return tool_call("Answer", {"value": 41})

    def read(answer):
        raise Provisional("check it", read_value(answer))

    answer, seen = asking(respond, read=read)
    assert (answer.value, answer.calls) == (41, 2)


def test_a_long_reason_is_cut_in_the_retry_message():
    def read(answer):
        raise UnreadableInput("x" * 5_000)

    answer, seen = asking(lambda r: "?", read=read)
    assert len(answer.error) == 2_000 and answer.error.endswith("…")


def test_a_cut_answer_is_asked_again_with_a_reason_that_says_it_was_cut():
    cut = AIMessage('{"value": 4', response_metadata={"finish_reason": "length"})

    def respond(request):
        return tool_call("Answer", {"value": 42}) if "cut off" in request.prompt else cut

    answer, seen = asking(respond)
    assert (answer.value, answer.calls) == (42, 2)
    assert "shorter" in seen[1].prompt


def test_a_complete_looking_call_the_output_limit_ended_is_not_read():
    limited = AIMessage(
        "", tool_calls=[tool_call("Answer", {"value": 4})], response_metadata={"finish_reason": "length"}
    )
    answer, _ = asking(lambda r: limited, retries=0)
    assert answer.value is None and "cut off" in answer.error
