"""ask node: pauses the run with one subtask's question; the user's answer becomes the reply to its ask_user call.

The interrupt's value carries LangChain v1's HITL request too (an ``ask_user`` action whose ``answer``
field is the reply box), and the answer may come as a HITL decision. A message sent to the thread
instead reaches the node as the payload's ``reply``: then there is no interrupt, and the node answers the
message with an AI message, so the thread ends with one (agent-chat-ui draws a waiting question's form
only under an AI message).

Its first step is ``interrupt()``: a resumed node re-runs from its start, and nothing
before the interrupt may run twice (the model turn and the other tool calls ran in
earlier nodes). The router sends one ask branch per waiting subtask, so questions
asked at once pause together, each with its own interrupt id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from replangraph.config import AgentConfig
from replangraph.events import emit
from replangraph.llm.reading import as_text, waiting_questions
from replangraph.names import ASK_USER
from replangraph.nodes.human.interrupts import (
    edited_args,
    hitl_decision,
    hitl_request,
    is_cancel,
    pause_for_user,
    slash_command,
    unwrapped,
)
from replangraph.nodes.human.names import QUESTION_ANSWERED
from replangraph.nodes.human.prompts import ANSWER_TAKEN, DECLINED
from replangraph.nodes.human.questions import answer_text, question_of
from replangraph.queue.tasks import preview
from replangraph.run_config import Configured
from replangraph.state import StateUpdate


def question_request(payload: Mapping[str, Any], call: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The interrupt's value: what the user sees, and where it comes from."""
    task = payload["task"]
    question = prefix + question_of(call)
    described = f"{question}\n\nAsked by subtask {task['id']}: {task['content']}"
    return {
        "kind": "question",
        "question": question,
        "task_id": task["id"],
        "task": task["content"],
        "agent_type": task["agent_type"],
        "tool_call_id": call.get("id") or "",
        # A reply box in HITL clients: ``respond`` (LangChain's ask-user decision), or ``edit`` with ``answer``.
        **hitl_request(ASK_USER, {"question": question, "answer": ""}, described, ["respond", "edit", "reject"]),
    }


def reply_of(answer: Any, question: str) -> Any:
    """The user's answer in a resume value: a HITL decision (``respond``'s message, ``edit``'s ``answer``
    (or its question field when that alone was changed), ``reject`` as a refusal, ``approve`` as no
    answer), else the value as `unwrapped` reads it."""
    decision = hitl_decision(answer)
    if decision is None:
        return unwrapped(answer)
    kind, message = decision["type"], as_text(decision.get("message")).strip()
    if kind == "respond":
        return message
    if kind == "edit":
        args = edited_args(decision)
        typed = as_text(args.get("answer")).strip()
        asked = as_text(args.get("question")).strip()
        return typed or (asked if asked and asked != question else "")
    if kind == "reject":
        return DECLINED.format(reason=f": {message}" if message else "")
    return ""


class AskUser(Configured):
    """Asks the first waiting question of the subtask in the payload (a `SubtaskInput`).

    The answer goes to the agent as the call's result and onto the task's
    ``clarifications``; an answer typed into the chat is acknowledged with an AI message.
    The cancel word cancels the run; a slash command is answered by the commands node,
    after which the question is asked again.

    Computes only (no model call), so it has no ``acall``: under ``ainvoke`` it runs in replangraph's pool
    (``both_paths``), and ``interrupt()`` pauses the run from there as well (the thread has the run's context).
    """

    def __init__(self, config: AgentConfig):
        self.base_config = config

    def __call__(self, payload: Mapping[str, Any]) -> StateUpdate:
        window = list(payload.get("window") or [])
        call = waiting_questions(window)[0]
        request = question_request(payload, call, self.config.question_prefix)
        sent = payload.get("reply")  # a message sent to the waiting thread (see the feature's entry)
        answer = sent if sent is not None else reply_of(pause_for_user(request, ASK_USER), request["question"])
        if is_cancel(answer, self.config):
            return {"cancelled": True}
        command = slash_command(answer)
        if command is not None:
            return {"messages": [HumanMessage(command)]}
        task = payload["task"]
        question, text = question_of(call), answer_text(answer)
        emit(QUESTION_ANSWERED, task_id=task["id"], question=question, answer_preview=preview(text, 200))
        asked = [*(task.get("clarifications") or []), {"question": question, "answer": text}]
        reply = ToolMessage(text, tool_call_id=call.get("id") or "", name=ASK_USER)
        update: StateUpdate = {
            "tasks": {task["id"]: {"clarifications": asked}},
            "windows": {task["id"]: [*window, reply]},
            "answers": 1,
        }
        if sent is not None:  # typed into the chat: the thread must not end with it while the next question waits
            taken = ANSWER_TAKEN.format(
                question=preview(question, 120), task_id=task["id"], task=preview(task["content"])
            )
            update["messages"] = [AIMessage(taken, name="replangraph")]
        return update
