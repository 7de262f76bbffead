"""Chat clients (agent-chat-ui and other HITL clients): the plan message, LangChain v1's HITL interrupt
shape and decisions, and a message sent to a thread that waits for the user (scripted models, in memory)."""

from __future__ import annotations

from collections import Counter

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scripting import make_model, plan_of, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.plan_message import PLAN_MESSAGE_ID
from replangraph.testing import tool_call

ONE_TASK = plan_of({"id": "1", "content": "paint the door"})
TWO_STEPS = plan_of({"id": "1", "content": "step A"}, {"id": "2", "content": "step B", "depends_on": ["1"]})
BOTH_AT_ONCE = plan_of({"id": "1", "content": "paint the door"}, {"id": "2", "content": "paint the gate"})


def asking(request):
    """A subtask that asks which colour, then paints in the answer."""
    got = [m.text for m in request.tool_results if request.tool_name(m) == "ask_user"]
    return f"{subtask_of(request)} in {got[0]}" if got else tool_call("ask_user", {"question": "Which colour?"})


def graph_for(work, plan=ONE_TASK, calls: Counter | None = None, final=None, **settings):
    counted = (lambda r: calls.update([subtask_of(r)]) or work(r)) if calls is not None else work
    model = make_model(plan, counted, final=final)
    return build_graph(model, config=AgentConfig(**settings), checkpointer=InMemorySaver())


def start(graph, thread="t", goal="paint"):
    cfg = {"configurable": {"thread_id": thread}}
    return graph.invoke({"messages": [("user", goal)]}, cfg), cfg


def plan_messages(messages) -> list[AIMessage]:
    return [m for m in messages if str(m.id or "").startswith(PLAN_MESSAGE_ID)]


def decision(kind: str, **fields) -> dict:
    return {"decisions": [{"type": kind, **fields}]}


# ----------------------------------------------------------------------------- the plan message


def test_the_plan_message_shows_progress_and_the_question_and_is_updated_in_place():
    graph = graph_for(asking)
    out, cfg = start(graph)
    (shown,) = plan_messages(graph.get_state(cfg).values["messages"])
    assert (
        shown.content == "**Plan**: 0 of 1 done\n\n- [ ] 1: paint the door — *waiting for your answer:* Which colour?"
    )
    out = graph.invoke(Command(resume="green"), cfg)
    messages = out["messages"]
    assert [type(m).__name__ for m in messages] == ["HumanMessage", "AIMessage", "AIMessage"]
    (done,) = plan_messages(messages)
    assert done.id == shown.id and messages[1] is done  # replaced where it stood, not added
    assert done.content == "**Plan**: 1 of 1 done\n\n- [x] 1: paint the door"
    assert messages[-1].text.endswith("paint the door in green")  # the final answer is the last message


def test_a_new_goal_gets_a_plan_message_of_its_own_and_failures_say_why():
    def work(request):
        if "B" in subtask_of(request):
            return tool_call("replan_request_replan", {"reason": "B cannot be done"})
        return f"{subtask_of(request)} done"

    graph = graph_for(work, TWO_STEPS)
    first, cfg = start(graph)
    second = graph.invoke({"messages": [("user", "paint again")]}, cfg)
    plans = plan_messages(second["messages"])
    assert len(plans) == 2 and plans[0].id != plans[1].id
    assert plans[0].content == plans_text(first)
    assert "- [ ] 2: step B — *failed*" in plans[1].content


def plans_text(out) -> str:
    return plan_messages(out["messages"])[0].content


def test_the_final_answer_message_keeps_its_lines_as_markdown():
    graph = graph_for(lambda r: "done", final=lambda r: "line one\nline two\n- item\n  more of the item")
    out, _ = start(graph)
    assert out["final_answer"] == "line one\nline two\n- item\n  more of the item"  # the text as written
    assert out["messages"][-1].text == "line one\n\nline two\n\n- item  \n  more of the item"


# ----------------------------------------------------------------------------- HITL decisions


def test_a_question_is_answered_with_each_hitl_decision():
    replies = {
        "respond": (decision("respond", message="green"), "paint the door in green"),
        "edit": (
            decision("edit", edited_action={"name": "ask_user", "args": {"question": "x", "answer": "teal"}}),
            "paint the door in teal",
        ),
        "reject": (decision("reject", message="not now"), "The user declined to answer: not now."),
        "approve": ({"type": "approve"}, "The user gave no answer"),
    }
    for kind, (resume, expected) in replies.items():
        graph = graph_for(asking)
        out, cfg = start(graph, thread=kind)
        value = out["__interrupt__"][0].value
        assert value["action_requests"][0]["name"] == "ask_user"
        out = graph.invoke(Command(resume=resume), cfg)
        assert expected in out["final_answer"], kind


def test_the_plan_review_takes_hitl_decisions():
    graph = graph_for(lambda r: f"{subtask_of(r)} done", TWO_STEPS, approve_plan=True)
    out, cfg = start(graph)
    value = out["__interrupt__"][0].value
    (action,) = value["action_requests"]
    assert action["name"] == "approve_plan" and [t["id"] for t in action["args"]["tasks"]] == ["1", "2"]
    assert "- 2 (default): step B" in action["description"]
    assert value["review_configs"] == [
        {"action_name": "approve_plan", "allowed_decisions": ["approve", "edit", "reject"]}
    ]
    out = graph.invoke(Command(resume=decision("approve")), cfg)
    assert "step B done" in out["final_answer"]

    out, cfg = start(graph, thread="edit")
    edited = '[{"id": "x", "content": "step X"}]'  # a chat UI's text box sends JSON text
    out = graph.invoke(
        Command(resume=decision("edit", edited_action={"name": "approve_plan", "args": {"tasks": edited}})), cfg
    )
    assert set(out["tasks"]) == {"x"} and "step X done" in out["final_answer"]

    out, cfg = start(graph, thread="bad-edit")
    bad = decision(
        "edit", edited_action={"name": "approve_plan", "args": {"tasks": [{"id": "a", "depends_on": ["a"]}]}}
    )
    out = graph.invoke(Command(resume=bad), cfg)
    again = out["__interrupt__"][0].value
    assert again["error"] and again["error"] in again["action_requests"][0]["description"]

    out, cfg = start(graph, thread="reject")
    out = graph.invoke(Command(resume=decision("reject", message="wrong plan")), cfg)
    assert {t["status"] for t in out["tasks"].values()} == {"skipped"}
    assert graph.get_state(cfg).values["plan_review"] == "cancelled"


# ----------------------------------------------------------------------------- a message to a waiting thread


def test_a_message_sent_while_a_question_waits_answers_it():
    calls = Counter()
    graph = graph_for(asking, calls=calls)
    out, cfg = start(graph)
    out = graph.invoke({"messages": [{"role": "user", "content": [{"type": "text", "text": "green"}]}]}, cfg)
    assert "__interrupt__" not in out
    assert out["final_answer"].endswith("paint the door in green") and list(out["tasks"]) == ["1"]
    assert out["tasks"]["1"]["clarifications"] == [{"question": "Which colour?", "answer": "green"}]
    assert calls["paint the door"] == 2  # the turn that asked, the turn that answered: none again
    kinds = ["HumanMessage", "AIMessage", "HumanMessage", "AIMessage", "AIMessage"]  # goal, plan, answer, ack, final
    assert [type(m).__name__ for m in out["messages"]] == kinds
    assert out["messages"][3].text == (
        'Your answer to "Which colour?" went to subtask 1 (paint the door); the run goes on.'
    )


def test_a_typed_answer_leaves_an_ai_message_last_while_the_next_question_waits():
    """agent-chat-ui draws an interrupt's form only under a last message that is an AI message."""

    def two_questions(request):
        got = [m.text for m in request.tool_results if request.tool_name(m) == "ask_user"]
        if len(got) < 2:
            return tool_call("ask_user", {"question": ["Which colour?", "Which finish?"][len(got)]})
        return f"door in {got[0]}, {got[1]}"

    graph = graph_for(two_questions)
    out, cfg = start(graph)
    out = graph.invoke({"messages": [("user", "green")]}, cfg)
    assert [i.value["question"] for i in out["__interrupt__"]] == ["Please confirm: Which finish?"]
    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and not str(last.id).startswith(PLAN_MESSAGE_ID)
    assert "subtask 1" in last.text and graph.get_state(cfg).interrupts  # the form's interrupt is pending
    assert out["messages"][-2].text == "green"
    out = graph.invoke({"messages": [("user", "matte")]}, cfg)
    assert "__interrupt__" not in out and out["final_answer"].endswith("door in green, matte")


def test_a_message_sent_while_two_questions_wait_is_refused_and_they_are_asked_again():
    graph = graph_for(asking, BOTH_AT_ONCE, max_concurrency=2)
    out, cfg = start(graph)
    assert len(out["__interrupt__"]) == 2
    out = graph.invoke({"messages": [("user", "green")]}, cfg)
    reply = out["messages"][-1]
    assert isinstance(reply, AIMessage) and reply.text.startswith("Your message was not used as an answer")
    assert 'an answer to 1: "Which colour?"' in reply.text and 'an answer to 2: "Which colour?"' in reply.text
    assert len(out["__interrupt__"]) == 2  # asked again
    assert out["goal"] == "paint" and out["tasks"]["1"]["status"] == "in_progress"
    out = graph.invoke(Command(resume={i.id: "red" for i in out["__interrupt__"]}), cfg)
    assert "paint the door in red" in out["final_answer"] and "paint the gate in red" in out["final_answer"]


def test_a_message_sent_while_the_plan_waits_is_the_decision():
    graph = graph_for(lambda r: f"{subtask_of(r)} done", TWO_STEPS, approve_plan=True)
    out, cfg = start(graph)
    out = graph.invoke({"messages": [("user", "looks nice")]}, cfg)
    error = out["__interrupt__"][0].value["error"]
    assert "'looks nice' is not a decision" in error
    assert isinstance(out["messages"][-1], AIMessage) and out["messages"][-1].text == error  # the form shows under it
    out = graph.invoke({"messages": [("user", "approve")]}, cfg)
    assert "step B done" in out["final_answer"] and out["goal"] == "paint"
    typed = next(n for n, m in enumerate(out["messages"]) if m.text == "approve")
    assert isinstance(out["messages"][typed], HumanMessage)
    assert out["messages"][typed + 1].text == "Plan approved; the run goes on."


def test_a_plan_edit_typed_into_the_chat_is_acknowledged_before_a_question_waits():
    graph = graph_for(asking, TWO_STEPS, approve_plan=True)
    out, cfg = start(graph)
    out = graph.invoke({"messages": [("user", '[{"id": "x", "content": "paint the door"}]')]}, cfg)
    assert [i.value["question"] for i in out["__interrupt__"]] == ["Please confirm: Which colour?"]
    assert set(out["tasks"]) == {"x"} and out["messages"][-1].text == "Plan edited (1 subtask); the run goes on."


def test_a_message_to_a_thread_that_waits_for_nothing_is_a_new_goal():
    graph = graph_for(lambda r: f"{subtask_of(r)} done")
    start(graph)
    out = graph.invoke({"messages": [("user", "paint the fence")]}, {"configurable": {"thread_id": "t"}})
    assert out["goal"] == "paint the fence"
