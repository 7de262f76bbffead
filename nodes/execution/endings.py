"""The rare ends of a subtask's turn: a model call that raised (`turn_failure`, `overflowed`), an opening window
over budget (`too_small`), an answer cut at the output limit (`with_cut_note`), a call left unrun, stopped by the
deadline or answered by no one (`not_run`, `unfinished`, `no_reply`), a refused call repeated
(`repeated_refusal`), and what a turn that ended its subtask adds to the result (`turn_record`,
`with_more_result`). A turn that goes well runs nothing here."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from replangraph.context.carried import call_label, made_progress, with_reads
from replangraph.context.fitting import approximate_tokens
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
from replangraph.llm.calls import StepClock, cut_note, paused_if_down
from replangraph.llm.errors import StepTimeout, is_server_down, server_url
from replangraph.llm.reading import answer_text, message_text, with_text
from replangraph.names import ASK_USER, BUILT_IN_TOOLS
from replangraph.nodes.execution.middleware import ContextOverflow, StepFailed
from replangraph.queue.plans import LimitReached, limit_hit, split_task
from replangraph.queue.tasks import Continued, QueueError, is_continuation, preview
from replangraph.state import ANSWER_CUT, DYNAMIC_TASKS_ADDED, StateUpdate, emit, event
from replangraph.tools.replan_toolkit.toolkit import STILL_YOURS, sent_summary
from replangraph.tracing import task_label

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from replangraph.nodes.execution.executor import Executor


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


def turn_failure(
    executor: Executor,
    task: Mapping[str, Any],
    window: list,
    started: float,
    calls: int,
    exc: Exception,
    clock: StepClock,
) -> StateUpdate:
    """The update for a model turn that raised ``exc`` (``calls``: the model calls spent, tries included);
    `ModelServerDown` when the server stopped answering and the run pauses for that."""
    paused_if_down(exc, executor.config)
    if isinstance(exc, StepTimeout):  # the tools node ends it: with a continuation when it made progress
        why = f"step exceeded step_timeout_s={clock.limit_s}"
        change = {"status": "in_progress", "model_calls": calls, "started_at": started, "limit_reached": why}
        return {"tasks": {task["id"]: change}, "windows": {task["id"]: window}}
    if isinstance(exc, StepFailed):
        return executor.fail(task, window, str(exc), calls)
    if isinstance(exc, ContextOverflow):
        return overflowed(executor, task, window, started, calls, exc.__cause__ or exc)
    calls = max(calls, task.get("model_calls", 0) + 1)  # the call was made, even if it never answered
    if isinstance(exc, RecursionError):  # the client could not even read the reply
        return executor.fail(task, window, "model call failed: its reply nests too deeply to be read", calls)
    url = server_url(exc) if is_server_down(exc) else None
    where = f" (the model server at {url} did not answer)" if url else ""
    return executor.fail(task, window, f"model call failed: {type(exc).__name__}: {exc}{where}", calls)


def overflowed(
    executor: Executor, task: Mapping[str, Any], window: list, started: float, calls: int, exc: Exception
) -> StateUpdate:
    """The provider refused the request as too long: compress and try once more, else fail the step."""
    if (task.get("context_overflow") or {}).get("compressed"):
        return executor.fail(
            task,
            window,
            f"the request exceeds the model's context window even after compression: {exc}",
            calls,
        )
    tools = executor.tool_schemas[task["agent_type"]]
    # The window (and the size) the error names are learned; the compressor then fits the real window.
    learned = executor.monitor.learn_overflow(exc, approximate_tokens(window, tools))
    # Usage figures may come from a server that counts differently: take the larger count.
    tokens = max(executor.monitor.tokens(window, tools), executor.monitor.counter(window, tools))
    logger.info(
        "the model refused the window of %s as too long for its context window (%d tokens by our count); "
        "the compressor refits it",
        task_label(task),
        tokens,
    )
    record = {"tokens": tokens, "compressed": False, "error": str(exc)[:300]}
    if learned:
        record["window"] = executor.monitor.context_window
    change = {"status": "in_progress", "model_calls": calls, "started_at": started, "context_overflow": record}
    return {"tasks": {task["id"]: change}, "windows": {task["id"]: window}}


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
    if not reads or not made_progress("\n".join(r.text for r in reads), reads, parent, before):
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
