"""The tools node's wrappers, each on its own (replangraph.nodes.execution.middleware, nodes.human.ask_user)."""

from __future__ import annotations

import time

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.types import Command

from replangraph import AgentConfig
from replangraph.llm.errors import StepTimeout
from replangraph.llm.formats import invalid_call
from replangraph.llm.time_limits import StepClock
from replangraph.nodes.execution.middleware import ToolCallRequest, chain_tool_calls
from replangraph.nodes.execution.model_wrappers import StepDeadline
from replangraph.nodes.execution.tool_wrappers import (
    OutputOffload,
    RefusalGuard,
    ToolkitInline,
    errors_as_replies,
    invoke_tool,
)
from replangraph.nodes.execution.tools_node import is_repeated_refusal
from replangraph.nodes.human.hooks import ScreenQuestions
from replangraph.testing import tool_call


@tool
def look(name: str) -> str:
    """Looks a thing up."""
    return f"about {name}"


def request(name="look", args=None, tool_=look, messages=(), task=None) -> ToolCallRequest:
    state = {"messages": list(messages), "task": task or {"id": "1", "clarifications": []}}
    return ToolCallRequest(tool_call(name, args or {"name": "x"}), tool_, state, None)


def reply(text, name="look", status="success"):
    return lambda req: ToolMessage(text, tool_call_id=req.tool_call["id"], name=name, status=status)


def test_chain_puts_the_first_outermost():
    order = []

    def note(label):
        def wrap(req, handler):
            order.append(label)
            return handler(req)

        return wrap

    assert chain_tool_calls([note("a"), note("b")], reply("r"))(request()).content == "r"
    assert order == ["a", "b"]


def test_invoke_tool_runs_the_tool_and_names_unknown_ones():
    call = invoke_tool(lambda: ["look"])
    assert call(request()).content == "about x"
    unknown = call(request("nope", tool_=None))
    assert unknown.status == "error" and "no tool named 'nope'. Available: look" in unknown.content


def test_errors_become_error_replies():
    def crash(req):
        raise ValueError("bad")

    out = errors_as_replies(request(), crash)
    assert out.status == "error" and out.content == "Error: ValueError: bad"


def test_step_deadline_stops_a_slow_tool():
    with pytest.raises(StepTimeout):
        StepDeadline(StepClock(0.0, 0.2))(request(), lambda req: time.sleep(2))


def test_toolkit_calls_skip_the_inner_wrappers():
    inline = ToolkitInline(reply("toolkit"))
    assert inline(request("replan_review_context", {}), reply("pool")).content == "toolkit"
    assert inline(request(), reply("pool")).content == "pool"


def test_refusal_guard_notes_a_refusal_repeated_word_for_word():
    refuse = reply("Error: no.", name="replan_review_context", status="error")
    guard = RefusalGuard(is_repeated_refusal)
    first = guard(request("replan_review_context", {}), refuse)
    assert guard.refused is None
    guard(request("replan_review_context", {}, messages=[first]), refuse)
    assert guard.refused is not None and guard.refused[1].content == "Error: no."


def test_offload_cuts_long_replies_and_hands_their_text_to_the_tools_node():
    cut: dict[str, str] = {}
    offload = OutputOffload({"id": "1"}, 100, lambda key: False, cut)
    short = offload(request(), reply("short"))
    assert short.content == "short" and not cut
    long = offload(request(), reply("x" * 1000))
    assert len(long.content) < 1000 and list(cut.values()) == ["x" * 1000]
    assert next(iter(cut)) in long.content  # the note names the key the text is kept under


def test_offload_cuts_the_reply_inside_a_command():
    offload = OutputOffload({"id": "1"}, 100, lambda key: False, {})

    def command(req):
        message = ToolMessage("y" * 1000, tool_call_id=req.tool_call["id"], name="look")
        return Command(update={"messages": [message], "tasks": {}})

    out = offload(request(), command)
    assert isinstance(out, Command) and len(out.update["messages"][0].content) < 1000


def test_screening_answers_what_the_user_need_not_see_and_leaves_the_rest_pending():
    screen = ScreenQuestions(AgentConfig(max_clarifications=1))
    assert screen(request("ask_user", {"question": "which?"}), reply("never")) is None
    empty = screen(request("ask_user", {"question": ""}), reply("never"))
    assert empty.status == "error" and "needs `question`" in empty.content
    assert screen(request(), reply("other")).content == "other"
    assert [t.name for t in screen.answered_tools()] == ["ask_user"]


def test_a_tool_update_with_malformed_effects_is_refused_to_that_agent_only():
    from replangraph.nodes.execution.tool_returns import command_reply

    call = {"name": "bad", "id": "c1", "args": {}}
    events = Command(update={"events": [{"not_event": 1}]})
    reply, change = command_reply(events, call, "1", {})
    assert reply.status == "error" and "events" in reply.content and change == {}
    entries = Command(update={"workspace": {"plan:1:step:1": "text"}})
    reply, change = command_reply(entries, call, "1", {})
    assert reply.status == "error" and "workspace" in reply.content and change == {}
    fine = Command(update={"events": [{"event": "custom", "x": 1}]})
    reply, change = command_reply(fine, call, "1", {})
    assert reply.status != "error" and change == {"events": [{"event": "custom", "x": 1}]}


def test_a_cut_call_is_answered_with_an_error_that_says_it_was_cut():
    cut = invalid_call("look", "(cut off)", "c1")
    answer = invoke_tool(lambda: ["look"])(ToolCallRequest(cut, look, {"messages": [], "task": {"id": "1"}}, None))
    assert answer.status == "error" and answer.tool_call_id == "c1"
    assert "cut off by the output limit" in answer.content and "shorter arguments" in answer.content
