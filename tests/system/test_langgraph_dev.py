"""The real ``langgraph dev`` server, started from the project's langgraph.json, driven with langgraph-sdk.

The graph's model (ChatOpenAI, built by ``replangraph.app.studio.make_graph``) talks to an
OpenAI-compatible server on 127.0.0.1 inside this test process (`openai_loopback`); nothing
leaves the machine. One server serves every test of the module. Each test tags its goal with
a fresh id, so the requests of its run can be told apart in the loopback's log. The scripted
model is `langgraph_dev_script`; the server's environment names no model (the loopback lists
one), and names tools and agent types ($REPLANGRAPH_TOOLS, $REPLANGRAPH_AGENTS).

The server (`langgraph_dev_server`) reads the project's langgraph.json with one graph added: docs/studio.md's own
factory (``tests/helpers/own_factory.py``), which calls ``chat_model_from_env()`` on the server's event loop.

The in-memory server keeps its data in ``.langgraph_api/`` under the folder it runs in (the
repository root, which git ignores); a folder this module's server created is removed afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from langgraph_dev_script import (
    ASK_MARK,
    COUNT_TASK,
    ENV_TOOL,
    FONT_QUESTION,
    HEADING_TASK,
    MODEL,
    QUESTION,
    REVERSE_TASK,
    RUNTIME_MARK,
    SPELLER,
    SPELLER_PROMPT,
    STYLE_MARK,
    STYLE_TASK,
    SYNTHESIS,
    WORK,
    custom_events,
    executor_requests,
    message_parts,
    requests_of,
    respond,
    system_text,
    tagged_goal,
    tool_names,
    updated_nodes,
)
from langgraph_dev_server import DEMO_GRAPH, GRAPH, OWN_GRAPH, langgraph_dev
from openai_loopback import MODELS_PATH, OpenAILoopback

from replangraph import events
from replangraph.app.demo import DEMO_GOAL, expected_products
from replangraph.config import AgentConfig
from replangraph.names import ASK_USER, EXECUTOR, FINALIZE, PLANNER, RUN_START, TOOLS
from replangraph.node_calls import NODE_CALL_TASK
from replangraph.nodes.human import QUESTION_ANSWERED
from replangraph.nodes.verification import GOAL_CHECKED, STEP_VERIFIED
from replangraph.nodes.verification.names import GOAL_CHECK, VERIFIER
from replangraph.plan_message import PLAN_MESSAGE_ID

pytestmark = pytest.mark.system  # a `langgraph dev` server, and a loopback model server for it

# ----------------------------------------------------------------------------- the servers


@pytest.fixture(scope="module")
def loopback() -> Iterator[OpenAILoopback]:
    with OpenAILoopback(respond, models=[MODEL]) as server:
        yield server


@pytest.fixture(scope="module")
def server(loopback: OpenAILoopback, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a ``langgraph dev`` server for the module, its model pointed at the loopback."""
    with langgraph_dev(loopback.base_url, tmp_path_factory.mktemp("langgraph-dev") / "server.log") as url:
        yield url


@pytest.fixture(autouse=True)
def no_refused_requests(loopback: OpenAILoopback) -> Iterator[None]:
    """Every model request of the test was answered: the script knew it and it kept the tool-message rules."""
    before = len(loopback.errors)
    yield
    assert loopback.errors[before:] == [], "the loopback refused requests"


@pytest.fixture(scope="module")
def client(server: str):
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=server, api_key=None, timeout=60)


def stream(client, thread_id: str, graph: str = GRAPH, **kwargs) -> list[tuple[str, object]]:
    """Every ``(event, data)`` of a streamed run; fails on an error event."""
    parts = [(p.event, p.data) for p in client.runs.stream(thread_id, graph, **kwargs)]
    errors = [data for event, data in parts if event == "error"]
    assert not errors, f"the run failed: {errors}"
    return parts


# ----------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("graph", [GRAPH, DEMO_GRAPH])
def test_schemas_are_served_for_each_graph(client, graph):
    found = client.assistants.search(graph_id=graph, metadata={"created_by": "system"})
    assert [a["graph_id"] for a in found] == [graph]
    schemas = client.assistants.get_schemas(found[0]["assistant_id"])
    for key in ("input_schema", "output_schema", "state_schema", "context_schema", "config_schema"):
        assert schemas[key], f"{key} is empty: {schemas[key]!r}"
    assert set(schemas["input_schema"]["properties"]) == {"messages", "goal"}
    assert {"messages", "goal", "tasks", "replans", "final_answer"} <= set(schemas["output_schema"]["properties"])
    assert "windows" not in schemas["output_schema"]["properties"]  # internal: state only
    assert {"windows", "tasks", "final_answer", "planner_calls"} <= set(schemas["state_schema"]["properties"])

    context = schemas["context_schema"]
    assert context["title"] == "AgentConfig"
    assert set(context["properties"]) == set(AgentConfig.model_fields)
    assert context["properties"] == AgentConfig.model_json_schema()["properties"]
    max_steps = context["properties"]["max_steps"]
    assert (max_steps["type"], max_steps["default"], max_steps["minimum"]) == ("integer", 1000, 1)
    verify = context["properties"]["verify_results"]
    assert (verify["type"], verify["default"]) == ("boolean", True)
    assert context["properties"]["step_timeout_s"]["default"] == 600.0
    assert {"type": "null"} in context["properties"]["step_timeout_s"]["anyOf"]

    # LangGraph derives the `configurable` schema from the context schema: the same AgentConfig
    # fields, which make_graph also reads from `configurable`. Its `model` key is not listed.
    config = schemas["config_schema"]
    assert config["properties"] == context["properties"]
    assert "model" not in config["properties"]


def test_streamed_run_sends_replangraph_events_and_node_updates(client, loopback):
    goal, tag = tagged_goal("Tell me the vowel count of 'replangraph' and spell it backwards.")
    thread = client.threads.create()
    parts = stream(
        client, thread["thread_id"], input={"messages": [{"role": "user", "content": goal}]},
        stream_mode=["updates", "custom"], context={"max_concurrency": 1},  # one subtask at a time: events in order
    )  # fmt: skip

    assert {event for event, _ in parts} == {"metadata", "updates", "custom"}
    found = custom_events(parts)
    names = [e["event"] for e in found]
    assert set(names) <= set(events.EVENT_NAMES)
    assert names == [
        events.PLAN_CREATED,
        events.STEP_STARTED,
        STEP_VERIFIED,  # the completion check is on by default
        events.STEP_COMPLETED,
        events.STEP_STARTED,
        STEP_VERIFIED,
        events.STEP_COMPLETED,
        GOAL_CHECKED,  # every result against the goal, once, before the final answer
        events.PLAN_COMPLETED,
    ]
    created = found[0]
    assert created["goal"] == goal
    assert [(t["id"], t["content"]) for t in created["tasks"]] == [("1", COUNT_TASK), ("2", REVERSE_TASK)]
    assert [e["task_id"] for e in found if e["event"] == events.STEP_STARTED] == ["1", "2"]
    completed = found[-1]
    assert completed["final_answer"].startswith(SYNTHESIS)
    assert completed["counts"]["completed"] == 2
    assert completed["stop_reason"] is None

    nodes = updated_nodes(parts)
    assert nodes[:2] == [RUN_START, PLANNER] and nodes[-1] == FINALIZE  # every input passes the run start first
    assert nodes.count(EXECUTOR) == 2
    ran = {RUN_START, PLANNER, EXECUTOR, TOOLS, VERIFIER, NODE_CALL_TASK, GOAL_CHECK, FINALIZE}  # a check's call
    assert set(nodes) <= ran
    final = next(data for event, data in parts if event == "updates" and FINALIZE in data)[FINALIZE]
    assert final["final_answer"] == completed["final_answer"]

    state = client.threads.get_state(thread["thread_id"])
    values = state["values"]
    assert values["final_answer"] == "\n".join([SYNTHESIS, WORK[COUNT_TASK], WORK[REVERSE_TASK]])
    assert {tid: t["status"] for tid, t in values["tasks"].items()} == {"1": "completed", "2": "completed"}
    assert state["next"] == []

    sent = requests_of(loopback, tag)
    # planner, two subtasks of one turn each, the goal check, finalizer (a subtask's check shows its instructions,
    # not the tagged goal)
    assert len(sent) == 5
    assert {r["model"] for r in sent} == {MODEL}
    assert not any(r.get("stream") for r in sent)  # no `messages` mode: ChatOpenAI does not stream


def test_ask_user_interrupts_and_the_answer_reaches_the_agent(client, loopback):
    goal, tag = tagged_goal(f"Write a report heading; ask me for the {ASK_MARK}.")
    thread_id = client.threads.create()["thread_id"]
    parts = stream(
        client, thread_id, input={"messages": [{"role": "user", "content": goal}]},
        stream_mode=["updates", "custom"],
    )  # fmt: skip

    pauses = [data["__interrupt__"] for event, data in parts if event == "updates" and "__interrupt__" in data]
    assert len(pauses) == 1 and len(pauses[0]) == 1
    asked = pauses[0][0]["value"]
    assert asked["kind"] == "question"
    assert asked["question"] == "Please confirm: " + QUESTION  # AgentConfig.question_prefix
    assert (asked["task_id"], asked["task"]) == ("1", HEADING_TASK)
    assert [e["event"] for e in custom_events(parts)] == [events.PLAN_CREATED, events.STEP_STARTED]
    assert client.threads.get(thread_id)["status"] == "interrupted"
    paused = client.threads.get_state(thread_id)
    assert [i["value"]["question"] for i in paused["interrupts"]] == [asked["question"]]
    assert paused["values"]["tasks"]["1"]["status"] == "in_progress"
    assert paused["values"]["final_answer"] == ""

    # Resume on the same thread; `messages-tuple` as well, so ChatOpenAI streams from the loopback.
    parts = stream(
        client, thread_id, command={"resume": "teal"}, stream_mode=["updates", "custom", "messages-tuple"],
    )  # fmt: skip
    found = custom_events(parts)
    assert [e["event"] for e in found] == [
        QUESTION_ANSWERED,
        STEP_VERIFIED,
        events.STEP_COMPLETED,
        GOAL_CHECKED,
        events.PLAN_COMPLETED,
    ]
    assert found[0]["question"] == QUESTION and found[0]["answer_preview"] == "teal"
    assert not any(event == "updates" and "__interrupt__" in data for event, data in parts)
    tokens = [chunk for event, (chunk, meta) in message_parts(parts) if meta["langgraph_node"] == EXECUTOR]
    assert len(tokens) > 1  # streamed in pieces
    assert "".join(t["content"] for t in tokens) == "RESULT heading colour: teal"

    first, second = executor_requests(loopback, tag)
    assert ASK_USER in tool_names(first) and not first.get("stream")
    assert second["stream"] is True
    asked_call = second["messages"][-2]["tool_calls"][0]
    assert asked_call["function"]["name"] == ASK_USER
    assert json.loads(asked_call["function"]["arguments"]) == {"question": QUESTION}
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": asked_call["id"], "content": "teal"}

    state = client.threads.get_state(thread_id)
    values = state["values"]
    assert values["final_answer"] == f"{SYNTHESIS}\nRESULT heading colour: teal"
    task = values["tasks"]["1"]
    assert task["status"] == "completed"
    assert task["clarifications"] == [{"question": QUESTION, "answer": "teal"}]
    assert state["next"] == [] and state["interrupts"] == []
    assert client.threads.get(thread_id)["status"] == "idle"


def test_a_runs_context_overrides_the_graphs_settings(client, loopback):
    # max_clarifications=0: ask_user is not offered, so the run does not pause.
    goal, tag = tagged_goal(f"Write a report heading; ask me for the {ASK_MARK}.")
    thread_id = client.threads.create()["thread_id"]
    parts = stream(
        client, thread_id, input={"messages": [{"role": "user", "content": goal}]},
        stream_mode=["updates"], context={"max_clarifications": 0},
    )  # fmt: skip
    assert not any("__interrupt__" in data for _, data in parts)
    (sent,) = executor_requests(loopback, tag)
    assert ASK_USER not in tool_names(sent)
    values = client.threads.get_state(thread_id)["values"]
    assert values["final_answer"] == f"{SYNTHESIS}\nRESULT heading colour: black (nobody to ask)"

    # max_steps=1: the first subtask spends the budget and the second is never run.
    goal, tag = tagged_goal("Tell me the vowel count of 'replangraph' and spell it backwards.")
    thread_id = client.threads.create()["thread_id"]
    stream(
        client, thread_id, input={"messages": [{"role": "user", "content": goal}]},
        stream_mode=["updates"], context={"max_steps": 1, "verify_results": False},
    )  # fmt: skip
    assert len(executor_requests(loopback, tag)) == 1
    values = client.threads.get_state(thread_id)["values"]
    assert {tid: t["status"] for tid, t in values["tasks"].items()} == {"1": "completed", "2": "skipped"}
    assert "the step budget max_steps=1 was used up" in values["final_answer"]
    assert WORK[COUNT_TASK] in values["final_answer"]  # the fallback report keeps the completed result


def test_a_token_budget_stops_the_served_run_cleanly(client, loopback):
    """The budget feature through the server: the run's context sets it, the loopback's usage counts, the
    second subtask never runs, the report names the budget, and the stream carries its event."""
    goal, tag = tagged_goal("Tell me the vowel count of 'replangraph' and spell it backwards.")
    thread_id = client.threads.create()["thread_id"]
    parts = stream(
        client, thread_id, input={"messages": [{"role": "user", "content": goal}]},
        stream_mode=["updates", "custom"],
        context={"token_budget": 1_000, "verify_results": False, "max_concurrency": 1},  # spent after subtask 1
    )  # fmt: skip
    values = client.threads.get_state(thread_id)["values"]
    reason = values["stop_reason"]
    assert reason.startswith("the token budget token_budget=1,000 was spent (")
    assert "approximately" not in reason  # the server's usage was counted
    assert len(executor_requests(loopback, tag)) == 1
    assert {tid: t["status"] for tid, t in values["tasks"].items()} == {"1": "completed", "2": "skipped"}
    assert WORK[COUNT_TASK] in values["final_answer"] and reason in values["final_answer"]
    (stopped,) = [e for e in custom_events(parts) if e["event"] == "budget_spent"]
    assert stopped["message"] == reason and values["budget_spent"]["calls"] == 2  # the plan and one turn


def test_a_tool_taking_langchains_runtime_and_the_trace_metadata_through_the_server(client, loopback):
    """A tool written as LangChain's docs write it (``runtime: ToolRuntime``) gets the subtask's state view and
    its call id; the model's streamed messages carry the node, task and plan metadata a trace groups by."""
    goal, tag = tagged_goal(f"Tell me {RUNTIME_MARK} you are.")
    thread_id = client.threads.create()["thread_id"]
    parts = stream(
        client, thread_id, input={"messages": [{"role": "user", "content": goal}]},
        stream_mode=["messages-tuple", "updates"],
    )  # fmt: skip
    values = client.threads.get_state(thread_id)["values"]
    answering = executor_requests(loopback, tag)[-1]  # the turn that read the tool's reply
    call_id = next(c["id"] for m in answering["messages"] for c in m.get("tool_calls") or [])
    assert values["tasks"]["1"]["result"] == f"RESULT task 1 asked by call {call_id}"
    executor = [meta for _, (_, meta) in message_parts(parts) if meta.get("langgraph_node") == EXECUTOR]
    assert executor and all(m["replangraph_task_id"] == "1" and m["replangraph_plan_id"] == "1" for m in executor)
    assert all("task:1" in m.get("tags", []) for m in executor)


def test_configurable_keys_still_pick_the_model_and_settings(client, loopback):
    """make_graph reads ``model`` and AgentConfig's fields from ``configurable`` (the server refuses a run
    that sets both ``configurable`` and ``context``)."""
    goal, tag = tagged_goal("Tell me the vowel count of 'replangraph' and spell it backwards.")
    thread_id = client.threads.create()["thread_id"]
    configurable = {"model": "loopback-other", "batch_size": 2}
    stream(
        client, thread_id, input={"messages": [{"role": "user", "content": goal}]},
        stream_mode=["updates"], config={"configurable": configurable},
    )  # fmt: skip
    sent = requests_of(loopback, tag)
    # planner, two turns, the goal check, finalizer (a subtask's check shows its instructions, not the tagged goal)
    assert len(sent) == 5
    assert {r["model"] for r in sent} == {"loopback-other"}
    for request in executor_requests(loopback, tag):
        rules = "\n".join(str(m.get("content")) for m in request["messages"])
        assert "More than 2 items: process one batch of at most 2" in rules
    values = client.threads.get_state(thread_id)["values"]
    assert values["final_answer"] == "\n".join([SYNTHESIS, WORK[COUNT_TASK], WORK[REVERSE_TASK]])


def test_the_model_tools_and_agent_types_come_from_the_environment(client, loopback):
    """$REPLANGRAPH_MODEL is unset: the model is the one the loopback lists, asked once (make_graph runs per
    run); $REPLANGRAPH_TOOLS and $REPLANGRAPH_AGENTS reach the served graph."""
    goal, tag = tagged_goal("Tell me the vowel count of 'replangraph' and spell it backwards.")
    thread_id = client.threads.create()["thread_id"]
    stream(client, thread_id, input={"messages": [{"role": "user", "content": goal}]}, stream_mode=["updates"])
    sent = requests_of(loopback, tag)
    assert {r["model"] for r in sent} == {MODEL}
    assert loopback.gets == [MODELS_PATH]

    (planner,) = [r for r in sent if "Plan" in tool_names(r)]
    (plan_tool,) = [t["function"] for t in planner["tools"] if t["function"]["name"] == "Plan"]
    assert SPELLER in json.dumps(plan_tool["parameters"])  # the agent_type enum
    first, second = executor_requests(loopback, tag)  # the two subtasks run at once: either may ask first
    spelling, counting = (first, second) if REVERSE_TASK in str(first["messages"]) else (second, first)
    assert ENV_TOOL in tool_names(counting) and ENV_TOOL in tool_names(spelling)
    assert REVERSE_TASK in str(spelling["messages"]) and system_text(spelling).startswith(SPELLER_PROMPT)
    assert not system_text(counting).startswith(SPELLER_PROMPT)
    values = client.threads.get_state(thread_id)["values"]
    assert values["tasks"]["2"]["agent_type"] == SPELLER


def test_the_demo_graph_answers_with_every_product(client):
    thread_id = client.threads.create()["thread_id"]
    values = client.runs.wait(thread_id, DEMO_GRAPH, input={"messages": [{"role": "user", "content": DEMO_GOAL}]})
    assert [name for name in expected_products(19) if name not in values["final_answer"]] == []
    assert {t["status"] for t in values["tasks"].values()} == {"completed"}


# ----------------------------------------------------------------------------- chat clients (agent-chat-ui)


def plan_message(values: dict) -> dict:
    (found,) = [m for m in values["messages"] if str(m.get("id") or "").startswith(PLAN_MESSAGE_ID)]
    return found


def test_a_chat_client_sees_the_plan_and_answers_with_a_hitl_decision(client, loopback):
    """What agent-chat-ui reads and sends: the plan message in the thread's values while the run waits, the
    interrupt in LangChain v1's HITL shape, and the ``{"decisions": [...]}`` its edit form resumes with."""
    goal, tag = tagged_goal(f"Write a report heading; ask me for the {ASK_MARK}.")
    thread_id = client.threads.create()["thread_id"]
    stream(client, thread_id, input={"messages": [{"type": "human", "content": goal}]}, stream_mode=["values"])
    paused = client.threads.get_state(thread_id)
    shown = plan_message(paused["values"])
    assert shown["type"] == "ai" and shown["content"].startswith("**Plan**: 0 of 1 done")
    assert f"- [ ] 1: {HEADING_TASK} — *waiting for your answer:* {QUESTION}" in shown["content"]
    (waiting,) = paused["interrupts"]
    (action,) = waiting["value"]["action_requests"]
    assert action["name"] == ASK_USER and action["args"] == {"question": "Please confirm: " + QUESTION, "answer": ""}
    assert waiting["value"]["review_configs"][0]["allowed_decisions"] == ["respond", "edit", "reject"]

    edited = {"name": ASK_USER, "args": {**action["args"], "answer": "teal"}}
    resume = {"decisions": [{"type": "edit", "edited_action": edited}]}
    stream(client, thread_id, command={"resume": resume}, stream_mode=["values"])
    values = client.threads.get_state(thread_id)["values"]
    assert values["tasks"]["1"]["clarifications"] == [{"question": QUESTION, "answer": "teal"}]
    done = plan_message(values)
    assert done["id"] == shown["id"] and done["content"] == f"**Plan**: 1 of 1 done\n\n- [x] 1: {HEADING_TASK}"
    assert [m["type"] for m in values["messages"]] == ["human", "ai", "ai"]
    assert values["messages"][-1]["content"] == f"{SYNTHESIS}\n\nRESULT heading colour: teal"  # Markdown paragraphs
    assert len([r for r in requests_of(loopback, tag) if "Plan" in tool_names(r)]) == 1


def test_a_message_sent_to_a_thread_waiting_on_a_question_answers_it(client, loopback):
    """agent-chat-ui's chat box sends a new run with a human message (content blocks), not a resume."""
    goal, tag = tagged_goal(f"Write a report heading; ask me for the {ASK_MARK}.")
    thread_id = client.threads.create()["thread_id"]
    stream(client, thread_id, input={"messages": [{"type": "human", "content": goal}]}, stream_mode=["values"])
    assert client.threads.get(thread_id)["status"] == "interrupted"
    answer = {"type": "human", "content": [{"type": "text", "text": "teal"}]}
    stream(client, thread_id, input={"messages": [answer]}, stream_mode=["values"])
    state = client.threads.get_state(thread_id)
    values = state["values"]
    assert state["interrupts"] == [] and client.threads.get(thread_id)["status"] == "idle"
    assert values["goal"] == goal and list(values["tasks"]) == ["1"]  # no new plan
    assert values["final_answer"] == f"{SYNTHESIS}\nRESULT heading colour: teal"
    assert len([r for r in requests_of(loopback, tag) if "Plan" in tool_names(r)]) == 1


def test_after_a_typed_answer_the_thread_ends_with_an_ai_message_under_which_the_next_form_shows(client, loopback):
    """agent-chat-ui draws an interrupt's form only under a last message of type ``ai``. Its chat box answers
    the first of two questions with a new run carrying a human message; the thread must then end with an AI
    message while the second question waits, in LangChain v1's HITL shape, for the form to answer it."""
    goal, tag = tagged_goal(f"Write a report heading; ask me for the {STYLE_MARK}.")
    thread_id = client.threads.create()["thread_id"]
    stream(client, thread_id, input={"messages": [{"type": "human", "content": goal}]}, stream_mode=["values"])
    first = client.threads.get_state(thread_id)
    assert [i["value"]["question"] for i in first["interrupts"]] == ["Please confirm: " + QUESTION]
    assert first["values"]["messages"][-1]["type"] == "ai"  # the plan message

    answer = {"type": "human", "content": [{"type": "text", "text": "teal"}]}
    stream(client, thread_id, input={"messages": [answer]}, stream_mode=["values"])
    state = client.threads.get_state(thread_id)
    messages = state["values"]["messages"]
    assert [m["type"] for m in messages[-2:]] == ["human", "ai"]
    assert messages[-1]["content"] == f'Your answer to "{QUESTION}" went to subtask 1 ({STYLE_TASK}); the run goes on.'
    assert not str(messages[-1].get("id") or "").startswith(PLAN_MESSAGE_ID)  # a message of its own, not the plan
    (waiting,) = state["interrupts"]
    value = waiting["value"]
    assert value["question"] == "Please confirm: " + FONT_QUESTION and value["task_id"] == "1"
    (action,) = value["action_requests"]
    assert action["name"] == ASK_USER and action["args"] == {"question": value["question"], "answer": ""}
    assert value["review_configs"] == [{"action_name": ASK_USER, "allowed_decisions": ["respond", "edit", "reject"]}]
    assert client.threads.get(thread_id)["status"] == "interrupted"

    resume = {"decisions": [{"type": "respond", "message": "serif"}]}  # the form's answer
    stream(client, thread_id, command={"resume": resume}, stream_mode=["values"])
    values = client.threads.get_state(thread_id)["values"]
    assert values["tasks"]["1"]["clarifications"] == [
        {"question": QUESTION, "answer": "teal"},
        {"question": FONT_QUESTION, "answer": "serif"},
    ]
    assert values["final_answer"] == f"{SYNTHESIS}\nRESULT heading style: teal, serif"
    assert len([r for r in requests_of(loopback, tag) if "Plan" in tool_names(r)]) == 1


def test_the_docs_own_factory_asks_for_the_model_off_the_event_loop(client, loopback):
    """``chat_model_from_env()`` in a factory the server calls on its loop, $OPENAI_BASE_URL set and no model
    named: the served model is asked for at the first request, in a worker thread (no BlockingError)."""
    goal, tag = tagged_goal("Tell me the vowel count of 'replangraph' and spell it backwards.")
    thread_id = client.threads.create()["thread_id"]
    stream(client, thread_id, OWN_GRAPH, input={"messages": [{"role": "user", "content": goal}]})
    values = client.threads.get_state(thread_id)["values"]
    assert values["final_answer"] == "\n".join([SYNTHESIS, WORK[COUNT_TASK], WORK[REVERSE_TASK]])
    assert {r["model"] for r in requests_of(loopback, tag)} == {MODEL}
