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

from replangraph.context.carried import call_label, known_reads, made_progress, with_reads
from replangraph.context.kept import (
    announced,
    completed,
    ending_result,
    failed,
    failed_with_window,
    full_result,
    merge_updates,
    result_fields,
    window_reads,
    with_read_digests,
)
from replangraph.llm.calls import cut_note
from replangraph.llm.reading import answer_text, message_text, with_text
from replangraph.names import ASK_USER, BUILT_IN_TOOLS
from replangraph.queue.plans import LimitReached, limit_hit, split_task
from replangraph.queue.tasks import Continued, QueueError, is_continuation, is_follow_up, preview
from replangraph.state import ANSWER_CUT, DYNAMIC_TASKS_ADDED, StateUpdate, emit, event
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


# --------------------------------------------------------------------------- a limit stopped the subtask

CALLS_LISTED = 20
"""Most tool calls a continuation's instructions list (the latest ones; the rest are counted)."""
CONTINUATION = (
    "{instructions}\n\n(This continues subtask {parent}, which stopped before it finished: {why}. Its tool calls so "
    "far, whose outputs are kept in its result: {calls}. Do the rest of the work, without repeating them.)"
)


def continuation_spec(task: Mapping[str, Any], window: Sequence[AnyMessage], why: str) -> dict[str, Any]:
    """The follow-up that goes on with ``task``'s work after a limit stopped it: the chain's instructions, and the
    tool calls the chain made so far (the latest `CALLS_LISTED`), so that its agent does not repeat them."""
    before = task.get("continued") or {}
    instructions = before.get("instructions") or task["content"]
    made = [
        call_label(c)
        for m in window
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c.get("name") not in BUILT_IN_TOOLS
    ]
    calls = [*before.get("calls", []), *made]
    earlier = before.get("earlier", 0) + max(len(calls) - CALLS_LISTED, 0)
    calls = calls[-CALLS_LISTED:]
    listed = "; ".join(calls) or "none"
    if earlier:
        listed = f"(… and {earlier} earlier calls) {listed}"
    content = CONTINUATION.format(instructions=instructions, parent=task["id"], why=why, calls=listed)
    return {"content": content, "continued": Continued(instructions=instructions, calls=calls, earlier=earlier)}


def stopped_at_limit(
    task: Mapping[str, Any],
    tasks: Mapping[str, Mapping[str, Any]],
    window: Sequence[AnyMessage],
    why: str,
    calls: int,
    config: Any,
    agent_types: Sequence[str],
) -> StateUpdate:
    """The end of a subtask a limit stopped (``max_step_iterations``, ``step_timeout_s``; ``why`` says which),
    as if its agent had handed off: when it made progress (its own tools read something new), what it read is
    its result and the rest is queued as a continuation. One that made no progress fails; so does one whose
    continuation cannot be queued (a limit, or the single-agent fallback), keeping what it read as its partial
    result."""
    reads = window_reads(task, window)
    parent = tasks.get(task.get("parent_id") or "")
    before = full_result(parent) if parent is not None and is_continuation(task) else None
    known = known_reads(tasks, task["id"]) if is_follow_up(task) else ()
    if not reads or not made_progress("\n".join(r.text for r in reads), reads, parent, before, known):
        return failed_with_window(task, window, why, calls)
    message = next((m for m in reversed(window) if isinstance(m, AIMessage)), None)
    result = with_reads(answer_text(message) if message is not None else "", reads)
    try:
        created = split_task(
            tasks,
            task["id"],
            [continuation_spec(task, window, why)],
            agent_types=agent_types,
            max_tasks=config.max_tasks,
            max_split_depth=config.max_split_depth,
            kind="continuation",
            by="limit",
        )
    except QueueError as exc:
        hit = limit_hit(task, exc if isinstance(exc, LimitReached) else None)
        return failed_with_window(task, window, f"{why}; the rest could not be queued: {exc}", calls, **hit)
    added = event(DYNAMIC_TASKS_ADDED, parent_id=task["id"], task_ids=list(created), source="limit", notes=[why])
    update = announced([added], completed(task, result, calls, handed_off=list(created)))
    update["tasks"].update(created)
    return with_read_digests(update, task, window)


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
