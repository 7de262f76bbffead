"""replangraph.temporal's data converter, without a server: what a run's state and input hold crosses an activity
or workflow boundary as itself (LangChain messages as messages, a subtask as the same dict, an `AgentConfig` as
the fields it sets), where Temporal's default converter gives plain dicts. Skipped without the temporal extra."""

from __future__ import annotations

import importlib

import pytest

pytest.importorskip("temporalio.langgraph", reason='needs the temporal extra: pip install "replangraph[temporal]"')

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402
from temporalio.converter import DataConverter  # noqa: E402

from replangraph import AgentConfig  # noqa: E402
from replangraph.queue.tasks import new_task  # noqa: E402
from replangraph.temporal import RunRequest, data_converter  # noqa: E402


def crossed(value, type_hint=None, converter=data_converter):
    """``value`` after one trip through ``converter``'s payload converter (what an activity's argument does)."""
    payload_converter = converter.payload_converter
    return payload_converter.from_payload(payload_converter.to_payload(value), type_hint)


AI = AIMessage(
    "Looking it up.",
    id="m1",
    name="executor",
    tool_calls=[{"name": "rainfall", "args": {"city": "Oslo"}, "id": "call_1", "type": "tool_call"}],
    usage_metadata={"input_tokens": 12, "output_tokens": 3, "total_tokens": 15},
    response_metadata={"model_name": "scripted"},
    additional_kwargs={"reasoning": "one city at a time"},
)
TOOL = ToolMessage("Oslo: 763 mm", tool_call_id="call_1", name="rainfall", id="m2", status="success")
HUMAN = HumanMessage("Look up the yearly rainfall of seven cities.", id="m0")
SYSTEM = SystemMessage("You are the planner.", id="s0")


@pytest.mark.parametrize("message", [AI, TOOL, HUMAN, SYSTEM], ids=lambda m: type(m).__name__)
def test_a_message_crosses_as_itself(message):
    back = crossed(message)
    assert type(back) is type(message)
    assert back == message


def test_an_ai_message_keeps_its_tool_calls():
    back = crossed(AI)
    assert back.tool_calls == AI.tool_calls
    assert back.usage_metadata == AI.usage_metadata
    assert back.id == "m1"


@pytest.mark.filterwarnings("ignore")  # Temporal's and pydantic's: the default converter meets a pydantic model
def test_the_default_converter_gives_plain_dicts():
    """Why replangraph has its own: the next node would read ``AttributeError: 'dict' object has no
    attribute 'id'``."""
    back = crossed(AI, converter=DataConverter.default)
    assert isinstance(back, dict)


def test_a_state_crosses_with_messages_and_tasks_in_place():
    task = new_task("1_dyn_0", "Rainfall of: Cairo, Quito", position=[0, 1], parent_id="1", depth=1, origin="split")
    state = {
        "messages": [SYSTEM, HUMAN, AI, TOOL],
        "tasks": {"1_dyn_0": task},
        "windows": {"1_dyn_0": [AI, TOOL]},
        "final_answer": None,
    }
    back = crossed(state)
    assert back == state
    assert [type(m) for m in back["messages"]] == [SystemMessage, HumanMessage, AIMessage, ToolMessage]
    assert [type(m) for m in back["windows"]["1_dyn_0"]] == [AIMessage, ToolMessage]
    assert back["tasks"]["1_dyn_0"] == task


def test_an_agent_config_crosses_as_the_fields_it_sets():
    """A run's context overrides only the fields it sets (`context_settings` reads ``model_fields_set``): all
    33 fields on the other side would override the graph's own settings with defaults."""
    context = AgentConfig(batch_size=3, step_timeout_s=5)
    back = crossed(context)
    assert isinstance(back, AgentConfig)
    assert back == context
    assert back.model_fields_set == {"batch_size", "step_timeout_s"}


def test_a_run_request_crosses_typed():
    request = RunRequest(input={"messages": [HUMAN]}, config={"recursion_limit": 99}, context=AgentConfig(max_steps=4))
    back = crossed(request, RunRequest)
    assert isinstance(back, RunRequest)
    assert back.input == {"messages": [HUMAN]}
    assert isinstance(back.input["messages"][0], HumanMessage)
    assert back.config == {"recursion_limit": 99}
    assert isinstance(back.context, AgentConfig)
    assert back.context.model_fields_set == {"max_steps"}
    assert back.graph == "replangraph"


def test_json_values_stay_as_they_are():
    value = {"lc_like": {"lc": 2, "type": "not LangChain's"}, "n": 1, "xs": [1.5, "a", None, True]}
    assert crossed(value) == value


def test_text_that_looks_like_a_marker_stays_text():
    # A tool's output may quote what the converter writes; only the objects themselves are revived.
    quoted = '{"lc": 1, "type": "constructor"} and {"__replangraph_agent_config__": {"max_steps": 3}}'
    value = {"output": quoted, "messages": [ToolMessage(quoted, tool_call_id="c1", id="t1")]}
    back = crossed(value)
    assert back["output"] == quoted
    assert isinstance(back["messages"][0], ToolMessage) and back["messages"][0].content == quoted


def test_a_payload_with_no_marker_is_read_without_a_walk(monkeypatch):
    converter = importlib.import_module("replangraph.temporal.converter")  # the package exports a function so named
    walked = []
    real = converter._revived
    monkeypatch.setattr(converter, "_revived", lambda obj, lc, ours: walked.append((lc, ours)) or real(obj, lc, ours))
    assert crossed({"results": ["x" * 100] * 3}) == {"results": ["x" * 100] * 3}
    assert walked == []
    back = crossed({"config": AgentConfig(batch_size=3), "m": HUMAN})
    assert walked[0] == (True, True) and back == {"config": AgentConfig(batch_size=3), "m": HUMAN}
