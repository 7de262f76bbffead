"""What the console script prints: one line per event, flushed, and its exit codes."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any, TextIO

from replangraph.events import (
    COMMAND_ANSWERED,
    CONTEXT_COMPRESSED,
    DYNAMIC_TASKS_ADDED,
    PLAN_COMPLETED,
    PLAN_CREATED,
    PLAN_REVIEWED,
    QUESTION_ANSWERED,
    REPLANNING,
    STEP_COMPLETED,
    STEP_FAILED,
    STEP_STARTED,
    STEP_VERIFIED,
)
from replangraph.queue import plan_summary, preview

QUEUE_CHANGES = {PLAN_CREATED, DYNAMIC_TASKS_ADDED, REPLANNING}

EXIT_DONE = 0
"""The run ended with every subtask completed."""
EXIT_REPORT = 1
"""The run ended with the fallback report: subtasks failed or were skipped, or the user cancelled."""
EXIT_USAGE = 2
"""Bad arguments, no model configured, a database that cannot be opened, an unknown thread."""
EXIT_WAITING = 3
"""The run waits for an answer and there is no terminal to ask on: ``replangraph resume --answer``."""
EXIT_INTERRUPTED = 130
"""Ctrl-C: the checkpoint keeps the run."""


def say(out: TextIO, text: str = "") -> None:
    """Print one line (or block) and flush, so a long run shows its progress as it goes."""
    print(text, file=out, flush=True)


def describe(event: Mapping[str, Any]) -> str:
    """One line for a custom stream event."""
    name = event["event"]
    if name == PLAN_CREATED:
        note = f" (fallback: {event['fallback_reason']})" if event.get("fallback_reason") else ""
        notes = "".join(f"; note: {n}" for n in event.get("notes") or ())
        return f"plan created with {len(event['tasks'])} task(s){note}{notes}"
    if name == STEP_STARTED:
        return f"{event['task_id']} started ({event['agent_type']}): {preview(event['content'], 70)}"
    if name == STEP_COMPLETED:
        return f"{event['task_id']} completed: {preview(event['result_preview'], 70)}"
    if name == STEP_FAILED:
        return f"{event['task_id']} failed: {preview(event['error'], 100)}"
    if name == STEP_VERIFIED:
        verdict = "complete" if event["complete"] else "incomplete"
        why = f" ({preview(event['reason'], 70)})" if event.get("reason") else ""
        queued = f"; queued {', '.join(event['follow_up_ids'])}" if event.get("follow_up_ids") else ""
        trouble = f"; {preview(event['error'], 80)}" if event.get("error") else ""
        return f"{event['task_id']} checked: {verdict}{why}{queued}{trouble}"
    if name == DYNAMIC_TASKS_ADDED:
        if event.get("source") == "verifier":
            return f"{event['parent_id']}: the check added {', '.join(event['task_ids'])}"
        return f"{event['parent_id']} handed off work: added {', '.join(event['task_ids'])}"
    if name == REPLANNING:
        new = f", new tasks {', '.join(event['new_task_ids'])}" if event["new_task_ids"] else ""
        why = f"{event['trigger']}: {preview(event['reason'], 60)}"
        return f"replanning after {event['task_id']} ({why}): {event['outcome']}{new}"
    if name == CONTEXT_COMPRESSED:
        return f"{event['task_id']} context compressed: {event['tokens_before']} -> {event['tokens_after']} tokens"
    if name == PLAN_COMPLETED:
        return "plan completed: " + ", ".join(f"{k} {v}" for k, v in event["counts"].items() if v)
    if name == PLAN_REVIEWED:
        notes = "".join(f"; note: {n}" for n in event.get("notes") or ())
        return f"plan {event['decision']} ({len(event['tasks'])} task(s)){notes}"
    if name == QUESTION_ANSWERED:
        return f"{event['task_id']} asked {preview(event['question'], 60)!r}: {preview(event['answer_preview'], 60)}"
    if name == COMMAND_ANSWERED:
        return f"{event['command']}: {preview(event['reply'], 100)}"
    return f"{name}: {dict(event)}"


def watch(
    graph: Any, inputs: Any, config: dict, out: TextIO, quiet: Collection[str] = (), events: list | None = None
) -> dict:
    """Stream a run, printing each event (except those named in ``quiet``) and the queue whenever it changes;
    returns the final state. ``events``, when given, receives every event."""
    state: dict = {}
    stream: Iterator = graph.stream(inputs, config, stream_mode=["custom", "values"])
    pending_queue_print = False
    for mode, chunk in stream:
        if mode == "values":
            state = chunk
            if pending_queue_print and state.get("tasks"):
                say(out, "  " + plan_summary(state["tasks"]).replace("\n", "\n  "))
                pending_queue_print = False
            continue
        if events is not None:
            events.append(chunk)
        if chunk["event"] not in quiet:
            say(out, f"- {describe(chunk)}")
        pending_queue_print = pending_queue_print or chunk["event"] in QUEUE_CHANGES
    return state
