"""The rare ends of a subtask's turn: an opening window over budget (`too_small`), an answer cut at the output limit
(`with_cut_note`), a call left unrun, stopped by the deadline or answered by no one (`not_run`, `unfinished`,
`no_reply`), a refused call repeated (`repeated_refusal`), and what a turn that ended its subtask adds to the result
(`turn_record`, `with_more_result`). A turn that goes well runs nothing here; a model call that raised is the
executor's (`replangraph.nodes.execution.executor.turn_failure`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from replangraph.context.outcomes import completed, ending_result, failed, merge_updates
from replangraph.context.results import result_fields
from replangraph.events import ANSWER_CUT, emit
from replangraph.llm.bounds import cut_note
from replangraph.llm.reading import answer_text, message_text, with_text
from replangraph.names import ASK_USER
from replangraph.queue.tasks import preview
from replangraph.state import StateUpdate
from replangraph.tools.replan_toolkit.toolkit import STILL_YOURS, sent_summary


def not_run(call: dict, why: str) -> ToolMessage:
    """Answer for a tool call that was not run (``why``: a sentence saying why)."""
    return ToolMessage(f"Not run: {why}", tool_call_id=call.get("id") or "", name=call.get("name", ""), status="error")


NOT_ASKED = (
    "the subtask ended in the same turn (a hand-off, a replan request or a timeout), so nobody waits for the "
    "answer; the question is kept in its result."
)


TURN_KEPT = "The message of the turn that ended this subtask, with its calls' whole arguments, is kept as output {id}."


def turn_record(message: AnyMessage | None, turn: Sequence[dict]) -> str:
    """The ending turn's message in full: its text, then each call with its whole arguments."""
    said = answer_text(message) if message is not None else ""
    calls = [f"{c.get('name', '')} {json.dumps(c.get('args'), default=str, ensure_ascii=False)}" for c in turn]
    return "\n".join([said, *calls] if said else calls)


def repeated_refusal(task: Mapping[str, Any], call: dict, reply: ToolMessage, calls: int) -> StateUpdate:
    """The end of a subtask whose agent repeated a refused toolkit or ask_user call: it will not get
    past it alone. What it sent as summary is its result (later tasks may build on it); the rest of
    its work goes to the replanner."""
    refusal = message_text(reply).replace(STILL_YOURS, "").strip()
    error = f"the agent repeated a refused {reply.name} call: {preview(refusal, 300)}"
    request = {"trigger": "failure", "reason": error}
    summary = sent_summary(call.get("args")) if reply.name != ASK_USER else ""
    if not summary:
        return failed(task, error, calls, replan_request=request)
    update = completed(task, summary, calls)
    update["tasks"][task["id"]]["replan_request"] = request
    return update


def too_small(task: Mapping[str, Any], needed: int, budget: int, calls: int) -> StateUpdate:
    """A subtask whose opening window (``needed`` tokens, every input an excerpt) exceeds ``budget``."""
    return failed(
        task,
        f"context window too small for this subtask: its prompt, instructions and tool schemas "
        f"need {needed} tokens with the goal and every input shown as an excerpt, "
        f"budget {budget}",
        calls,
    )


def unfinished(call: dict, timeout: str) -> ToolMessage:
    """The reply to the call the step's deadline stopped (``timeout``: why)."""
    name = call.get("name", "")
    return ToolMessage(
        f"Error: {timeout}; it did not finish.", tool_call_id=call.get("id") or "", name=name, status="error"
    )


def no_reply(call: dict) -> ToolMessage:
    """The reply to a call a middleware answered with nothing (the call still needs a reply)."""
    name = call.get("name", "")
    text = f"Error: no reply came back for this {name} call (a middleware returned none)."
    return ToolMessage(text, tool_call_id=call.get("id") or "", name=name, status="error")


def with_cut_note(reply: AIMessage, text: str, limit: int | None, task_id: str) -> tuple[str, AIMessage]:
    """``(text, reply)`` of an answer the output limit cut, ending in a note that says so (`cut_note`)."""
    text = f"{text}\n\n{cut_note(limit)}"
    reply = reply.model_copy(update={"content": with_text(reply.content, text)})
    emit(ANSWER_CUT, task_id=task_id, part="result", limit=limit)
    return text, reply


def with_more_result(update: StateUpdate, task: Mapping[str, Any], more: str) -> StateUpdate:
    """``update`` (one that ends ``task``) with ``more`` after the result it keeps; ``more`` is the
    result when it keeps none (a failed subtask's partial result)."""
    head = ending_result(update, task)
    fields, entries = result_fields(task, f"{head}\n\n{more}" if head else more)
    return merge_updates([update, {"tasks": {task["id"]: fields}}, entries])  # the same slots: these win


NUDGE = (
    "Your last reply says what you will do next but makes no tool call, so nothing was done. Make the call now, "
    "as a tool call. If the subtask is finished, reply with its result instead."
)
"""What an agent that announced a tool call instead of making it is told, once (`nudged`)."""


def nudged(task: Mapping[str, Any], window: Sequence[AnyMessage], reply: AIMessage, calls: int) -> StateUpdate:
    """The update that answers an announcement (a reply that says it will call a tool and calls none) with one
    nudge in the same conversation, instead of taking it as the subtask's result."""
    change = {"status": "in_progress", "model_calls": calls, "started_at": task.get("started_at") or time.time()}
    return {"tasks": {task["id"]: change}, "windows": {task["id"]: [*window, reply, HumanMessage(NUDGE)]}}


def was_nudged(window: Sequence[AnyMessage]) -> bool:
    """Whether the window's last message is the nudge: the reply after it is taken as it is."""
    return bool(window) and isinstance(window[-1], HumanMessage) and message_text(window[-1]) == NUDGE
