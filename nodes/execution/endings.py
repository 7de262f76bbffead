"""The rare ends of a subtask's turn: a model call that raised (`turn_failure`, `overflowed`), an opening window
over budget (`too_small`), an answer cut at the output limit (`with_cut_note`), a call left unrun, stopped by the
deadline or answered by no one (`not_run`, `unfinished`, `no_reply`), a refused call repeated
(`repeated_refusal`), and what a turn that ended its subtask adds to the result (`turn_record`,
`with_more_result`). A turn that goes well runs nothing here."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from replangraph.context.fitting import approximate_tokens
from replangraph.context.kept import WORKSPACE, completed, failed, merge_updates, result_fields, result_slot
from replangraph.llm.calls import StepClock, cut_note, paused_if_down
from replangraph.llm.errors import StepTimeout, is_server_down, server_url
from replangraph.llm.reading import answer_text, message_text, with_text
from replangraph.names import ASK_USER
from replangraph.nodes.execution.middleware import ContextOverflow, StepFailed
from replangraph.queue.tasks import preview
from replangraph.state import ANSWER_CUT, StateUpdate, emit
from replangraph.tools.replan_toolkit.toolkit import STILL_YOURS, sent_summary

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
    if isinstance(exc, StepTimeout):
        return executor.fail(task, window, f"step exceeded step_timeout_s={clock.limit_s}", calls)
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


def ending_result(update: StateUpdate, task: Mapping[str, Any]) -> str | None:
    """The whole result an update that ends ``task`` keeps (None: it keeps none)."""
    step, rest = result_slot(task)
    entry = ((update.get(WORKSPACE) or {}).get(step) or {}).get(rest)
    own = (update.get("tasks") or {}).get(task["id"]) or {}
    return str(entry["content"]) if entry and "content" in entry else own.get("result")


def with_more_result(update: StateUpdate, task: Mapping[str, Any], more: str) -> StateUpdate:
    """``update`` (one that ends ``task``) with ``more`` after the result it keeps; ``more`` is the
    result when it keeps none (a failed subtask's partial result)."""
    head = ending_result(update, task)
    fields, entries = result_fields(task, f"{head}\n\n{more}" if head else more)
    return merge_updates([update, {"tasks": {task["id"]: fields}}, entries])  # the same slots: these win
