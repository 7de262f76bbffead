"""What the console script prints, and its exit codes. An `Output` shows a run: `PlainOutput` one line per
event, flushed (a pipe, a file, a terminal without rich); `JsonOutput` one JSON object per line (``--json``);
``live.LiveOutput`` a live view of the queue on a terminal."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Collection, Iterator, Mapping
from typing import Any, TextIO

from langchain_core.callbacks import BaseCallbackHandler

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
EXIT_CONNECTION = 4
"""The model server did not answer: before the run (nothing ran), or during it (every failure a connection error)."""
EXIT_CRASHED = 5
"""The run stopped on an unexpected error (a bug, a lost database): its traceback is saved to a file, the steps
checkpointed before it are kept, and ``replangraph resume`` goes on once the cause is fixed."""
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


def json_line(obj: Mapping[str, Any]) -> str:
    """One JSON object on one line; what JSON cannot hold (messages, paths) is written as its ``str``."""
    return json.dumps(obj, default=str, ensure_ascii=False)


class UsageCounter(BaseCallbackHandler):
    """Sums the tokens each model call of a run reports (``usage_metadata``); passed as a run callback, it sees
    every call (planner, subtasks, checks, the final answer), retries that got an answer included."""

    def __init__(self) -> None:
        self.total: int | None = None
        """Tokens reported so far; None while no call reported any."""
        self._lock = threading.Lock()  # parallel subtasks report from their own threads

    def add(self, usage: Mapping[str, Any] | None) -> None:
        if not usage:
            return
        tokens = usage.get("total_tokens") or (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
        with self._lock:
            self.total = (self.total or 0) + int(tokens)

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        for generations in getattr(response, "generations", None) or []:
            for generation in generations:
                self.add(getattr(getattr(generation, "message", None), "usage_metadata", None))

    def label(self) -> str:
        return "n/a" if self.total is None else f"{self.total:,}"


class Output:
    """Where a command shows a run: its events as they stream, its notes, and how it ended.

    `PlainOutput` by default; `JsonOutput` keeps stdout for JSON and sends notes to stderr."""

    interactive = True
    """Whether questions may be asked inline (a terminal is still needed)."""

    def __init__(self, out: TextIO):
        self.out = out
        self.usage = UsageCounter()
        self.max_steps: int | None = None

    def note(self, text: str = "") -> None:
        """A line for people: the thread, the final answer, how to resume."""
        say(self.out, text)

    def result(self, obj: Mapping[str, Any]) -> None:
        """How the command ended, for programs (``--json``); the notes say it for people."""

    def stream(
        self, graph: Any, inputs: Any, config: dict, quiet: Collection[str] = (), events: list | None = None
    ) -> dict:
        """Stream a run, showing it; returns the final state. ``events``, when given, receives every event."""
        return watch(graph, inputs, self.config(config), self.out, quiet, events)

    def config(self, config: dict) -> dict:
        """The run config with the token counter among its callbacks."""
        callbacks = list(config.get("callbacks") or [])
        return {**config, "callbacks": [*callbacks, self.usage]}


class PlainOutput(Output):
    """One plain line per event, flushed, and the queue whenever it changes (a pipe, a file, a terminal without
    rich)."""


class JsonOutput(Output):
    """``--json``: one JSON object per line on stdout (each custom event as it is, then how the command ended);
    notes go to stderr, and nothing is asked inline."""

    interactive = False

    def note(self, text: str = "") -> None:
        print(text, file=sys.stderr, flush=True)

    def result(self, obj: Mapping[str, Any]) -> None:
        say(self.out, json_line(obj))

    def stream(
        self, graph: Any, inputs: Any, config: dict, quiet: Collection[str] = (), events: list | None = None
    ) -> dict:
        state: dict = {}
        for mode, chunk in graph.stream(inputs, self.config(config), stream_mode=["custom", "values"]):
            if mode == "values":
                state = chunk
                continue
            if events is not None:
                events.append(chunk)
            say(self.out, json_line(chunk))
        return state
