"""The executor's model-call wrappers, each on its own (replangraph.nodes.execution.middleware)."""

from __future__ import annotations

import time

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from replangraph import AgentConfig
from replangraph.llm.errors import StepTimeout
from replangraph.llm.time_limits import StepClock
from replangraph.nodes.execution.middleware import ModelRequest, ModelResponse, chain_model_calls
from replangraph.nodes.execution.model_wrappers import (
    BoundModels,
    ContextOverflow,
    OfferReadOutput,
    RepairToolCalls,
    Retries,
    StepDeadline,
    refit_overflow,
)
from replangraph.nodes.human.hooks import OfferAskUser
from replangraph.testing import ScriptedChatModel
from replangraph.tools.read_output import read_output_tool
from replangraph.tools.replan_toolkit.toolkit import split_replan_marker


def request(**state) -> ModelRequest:
    model = ScriptedChatModel(respond=lambda r: "hi")
    return ModelRequest(model=model, messages=[HumanMessage("h")], state={"task": {}, "attempts": 0, **state})


def answer(reply):
    return lambda req: ModelResponse([reply])


def test_override_returns_a_changed_copy():
    first = request()
    second = first.override(tools=["t"], system_prompt="s")
    assert first.tools == [] and second.tools == ["t"] and second.system_prompt == "s"


def test_chain_puts_the_first_outermost_and_accepts_bare_messages():
    order = []

    def note(label):
        def wrap(req, handler):
            order.append(label)
            return handler(req)

        return wrap

    handler = chain_model_calls([note("a"), note("b")], lambda req: AIMessage("x"))
    assert handler(request()).result[0].content == "x" and order == ["a", "b"]


def test_step_deadline_stops_a_slow_call():
    clock = StepClock(0.0, 0.2)
    with pytest.raises(StepTimeout):
        StepDeadline(clock)(request(), lambda req: time.sleep(2))
    assert StepDeadline(StepClock(0.0, None))(request(), lambda req: "ok") == "ok"


def test_overflow_refit_marks_overflows_only():
    def overflow(req):
        raise ContextOverflowError("too long")

    with pytest.raises(ContextOverflow):
        refit_overflow(request(), overflow)
    with pytest.raises(KeyError):
        refit_overflow(request(), lambda req: {}["x"])


def test_retries_repeat_transient_errors(monkeypatch):
    monkeypatch.setattr("replangraph.clock.wait", lambda s: None)
    tries = []

    def flaky(req):
        tries.append(1)
        if len(tries) < 3:
            raise ConnectionError("again")
        return ModelResponse([AIMessage("ok")])

    config = AgentConfig(model_retries=3)
    assert Retries(config, StepClock(0.0, None))(request(), flaky).result[0].content == "ok"
    assert len(tries) == 3


def test_repair_reads_calls_written_as_text():
    text = AIMessage('{"name": "look", "arguments": {"name": "x"}}')
    repaired = RepairToolCalls(["look"])(request(), answer(text)).result[0]
    assert [c["name"] for c in repaired.tool_calls] == ["look"]


def test_bound_models_counts_calls_and_binds_once():
    seen = []
    model = ScriptedChatModel(respond=lambda r: seen.append(r) or "ok")
    call = BoundModels()
    req = ModelRequest(model=model, messages=[HumanMessage("h")], system_message=SystemMessage("s"), state={})
    assert call(req).result[0].content == "ok" and call(req).result[0].content == "ok"
    assert req.state["attempts"] == 2 and len(call.bound) == 1
    assert isinstance(seen[0].messages[0], SystemMessage)


def test_ask_user_is_offered_while_questions_are_left():
    offer = OfferAskUser(AgentConfig(max_clarifications=1))
    names = lambda req: [t.name for t in req.tools]  # noqa: E731
    assert offer(request(task={"clarifications": []}), names) == ["ask_user"]
    assert offer(request(task={"clarifications": [{"question": "q", "answer": "a"}]}), names) == []


def test_read_output_is_offered_once_the_window_points_at_kept_text():
    offer = OfferReadOutput(read_output_tool(lambda _: None, list, 1000))
    names = lambda req: [t.name for t in req.tools]  # noqa: E731
    assert offer(request(messages=[HumanMessage("plain")]), names) == []
    kept = HumanMessage("[... the rest: read_output(output_id='1/x') ...]")
    assert offer(request(messages=[kept]), names) == ["read_output"]


def test_a_binding_is_never_reused_for_a_tool_built_anew():
    """Middleware may build a tool per call: each list gets its own binding, however ids are reused."""
    from langchain_core.tools import StructuredTool

    from replangraph.nodes.execution.model_wrappers import BOUND_MODELS_KEPT, BoundModels

    seen = []
    model = ScriptedChatModel(respond=lambda r: seen.append(r.tool_names) or "ok")
    models = BoundModels()
    for n in range(200):

        def fn() -> str:
            return "x"

        tool = StructuredTool.from_function(fn, name=f"tool_{n}", description="a tool")
        models(ModelRequest(model=model, messages=[HumanMessage("hi")], tools=[tool], state={}))
    assert seen == [(f"tool_{n}",) for n in range(200)]
    assert len(models.bound) <= BOUND_MODELS_KEPT


def test_repair_takes_reasoning_out_of_the_reply_and_keeps_it_on_the_message():
    reply = AIMessage('<think>I should look x up</think>\n<tool_call>{"name": "look", "arguments": {"name": "x"}}')
    repaired = RepairToolCalls(["look"])(request(), answer(reply)).result[0]
    assert [(c["name"], c["args"]) for c in repaired.tool_calls] == [("look", {"name": "x"})]
    assert repaired.content == "" and repaired.additional_kwargs["reasoning_content"] == "I should look x up"
    final = RepairToolCalls(["look"])(request(), answer(AIMessage("<think>done?</think>All 19 items."))).result[0]
    assert final.content == "All 19 items." and not final.tool_calls


@pytest.mark.parametrize(
    "text, marker",
    [
        ("got nothing [REPLAN] the shop page needs a login", ("got nothing", "the shop page needs a login")),
        ("[REPLAN] still blocked", ("", "still blocked")),
        (
            "Items 1-4: a, b\n\n[REPLAN] still missing:\n- items 5-8\n- items 9-12",
            ("Items 1-4: a, b", "still missing:\n- items 5-8\n- items 9-12"),
        ),
        ("Items 1-4:\na\nb\n- [REPLAN] the site blocks page 2", ("Items 1-4:\na\nb", "the site blocks page 2")),
        (
            "**[REPLAN]** the data does not exist\nI searched three sources.",
            ("", "the data does not exist\nI searched three sources."),
        ),
        ("The rules say to reply with [REPLAN] and the reason.\nBut here are all 19 items:\na\nb", None),
        ("All 19 items are below; no need for [REPLAN] here.\na\nb", None),
        ('Done: a, b, c. (I did not write "[REPLAN]".)', None),
        ("Done: a, b, c. The prompt's `[REPLAN]` was not needed.", None),
        ("a, b, c", None),
    ],
)
def test_replan_marker_counts_only_as_the_answers_own(text, marker):
    assert split_replan_marker(text) == marker


def test_bound_models_cap_the_openai_clients_timeout_at_the_requests_client_timeout(monkeypatch):
    from langchain_openai import ChatOpenAI

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = ChatOpenAI(model="m", api_key="k", base_url="http://h/v1", max_retries=0)
    models = BoundModels()

    def bound(**state):
        return models.bind(ModelRequest(model=model, messages=[HumanMessage("h")], state=state)).bound

    assert bound(client_timeout=2.0).root_client.timeout == bound(client_timeout=2.0).root_async_client.timeout == 2.0
    assert bound(client_timeout=5.0).root_client.timeout == 5.0 and len(models.bound) == 2  # keyed by it
    assert bound().root_client.timeout is None and bound() is model  # no step limit: the client's own
