"""What the console script prints, and its exit codes. An `Output` shows a run: `PlainOutput` one line per
event, flushed (a pipe, a file, a terminal without rich); `JsonOutput` one JSON object per line (``--json``);
``live.LiveOutput`` a live view of the queue on a terminal."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Collection, Iterator, Mapping
from contextlib import closing, contextmanager, redirect_stdout
from typing import Any, TextIO

from langchain_core.callbacks import BaseCallbackHandler

from replangraph.app.feature_cli import feature_clis
from replangraph.events import (
    ANSWER_COMPLETED,
    ANSWER_CUT,
    CONTEXT_COMPRESSED,
    DYNAMIC_TASKS_ADDED,
    PLAN_COMPLETED,
    PLAN_CREATED,
    REPLANNING,
    STEP_COMPLETED,
    STEP_FAILED,
    STEP_STARTED,
)
from replangraph.queue import plan_summary, preview, spent_model_calls, status_counts

QUEUE_CHANGES = {
    PLAN_CREATED,
    DYNAMIC_TASKS_ADDED,
    REPLANNING,
    *(e for cli in feature_clis() for e in cli.queue_events),
}

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
EXIT_BUSY = 6
"""Another process is running the thread (it holds the thread's lease): nothing ran."""
EXIT_INTERRUPTED = 130
"""Ctrl-C: the checkpoint keeps the run."""
EXIT_PIPE = 141
"""Whoever read the output stopped reading (``| head``): 128 + SIGPIPE, as other Unix tools end."""


def say(out: TextIO, text: str = "") -> None:
    """Print one line (or block) and flush, so a long run shows its progress as it goes."""
    print(text, file=out, flush=True)


def is_tty(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (False for a closed, missing or replaced one)."""
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def run_finished(code: int, thread: str, values: Mapping[str, Any], tokens: int | None, **extra: Any) -> dict:
    """The ``run_finished`` result: how a run ended, for ``--json``."""
    return {
        "event": "run_finished",
        "exit_code": code,
        "thread": thread,
        "final_answer": values.get("final_answer", ""),
        "counts": status_counts(values.get("tasks") or {}),
        "steps": spent_model_calls(values),
        "tokens": tokens,
        **extra,
    }


def describe(event: Mapping[str, Any]) -> str:
    """One line for a custom stream event: the engine's line, as each feature's ``describe`` words or adds to it
    (`replangraph.app.flags`); an event no one words prints its ``message``, else its payload."""
    line = engine_line(event)
    for cli in feature_clis():
        if cli.describe is not None and (own := cli.describe(event, line)) is not None:
            line = own
    if line is not None:
        return line
    if event.get("message"):  # a feature's event that says itself (the budget's)
        return f"{event['event']}: {preview(str(event['message']), 200)}"
    return f"{event['event']}: {dict(event)}"


def engine_line(event: Mapping[str, Any]) -> str | None:
    """The line for one of the engine's events, or None for a feature's."""
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
    if name == DYNAMIC_TASKS_ADDED:
        added = ", ".join(event["task_ids"])
        if event.get("source") == "limit":
            return f"{event['parent_id']} stopped at a limit: the rest continues in {added}"
        return f"{event['parent_id']} handed off work: added {added}"
    if name == ANSWER_COMPLETED:
        return f"the final answer left out {event['items']} items of the results: added after it"
    if name == REPLANNING:
        new = f", new tasks {', '.join(event['new_task_ids'])}" if event["new_task_ids"] else ""
        why = f"{event['trigger']}: {preview(event['reason'], 60)}"
        return f"replanning after {event['task_id']} ({why}): {event['outcome']}{new}"
    if name == CONTEXT_COMPRESSED:
        return f"{event['task_id']} context compressed: {event['tokens_before']} -> {event['tokens_after']} tokens"
    if name == PLAN_COMPLETED:
        return "plan completed: " + ", ".join(f"{k} {v}" for k, v in event["counts"].items() if v)
    if name == ANSWER_CUT:
        whose = f"{event['task_id']} " if event.get("task_id") else ""
        limit = f" of {event['limit']} tokens" if event.get("limit") else ""
        return f"{whose}{event['part']} cut at the output limit{limit} (max_output_tokens)"
    return None


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

    `stream` is one loop for every output: each chunk of the graph's stream goes to the hooks (`on_values`,
    `on_event`, `on_update`), which subclasses fill in. `PlainOutput` by default; `JsonOutput` keeps stdout
    for JSON and sends notes to stderr."""

    interactive = True
    """Whether questions may be asked inline (a terminal is still needed)."""
    modes: tuple[str, ...] = ("custom", "values")
    """The stream modes `stream` asks the graph for."""

    def __init__(self, out: TextIO):
        self.out = out
        self.usage = UsageCounter()

    def note(self, text: str = "") -> None:
        """A line for people: the thread, the final answer, how to resume."""
        say(self.out, text)

    def result(self, obj: Mapping[str, Any]) -> None:
        """How the command ended, for programs (``--json``); the notes say it for people."""

    def stream(
        self,
        graph: Any,
        inputs: Any,
        config: dict,
        quiet: Collection[str] = (),
        events: list | None = None,
        max_steps: int | None = None,
    ) -> dict:
        """Stream a run, showing it (except the events named in ``quiet``); returns the final state. ``events``,
        when given, receives every event; ``max_steps`` is the run's budget of model calls, for the view.

        The stream is closed however the loop ends (a closed pipe, Ctrl-C): LangGraph then waits for the steps
        in flight and stops its worker threads, before the database they write to is closed."""
        state: dict = {}
        with (
            self.showing(max_steps),
            closing(graph.stream(inputs, self.config(config), stream_mode=list(self.modes))) as chunks,
        ):
            for mode, chunk in chunks:
                if mode == "values":
                    state = chunk
                    self.on_values(chunk)
                elif mode == "custom":
                    if events is not None:
                        events.append(chunk)
                    self.on_event(chunk, chunk["event"] not in quiet)
                else:
                    self.on_update(chunk)
        return state

    @contextmanager
    def showing(self, max_steps: int | None) -> Iterator[None]:
        """Around one stream (the live view draws during it)."""
        yield

    def on_values(self, state: Mapping[str, Any]) -> None:
        """The whole state, after each step."""

    def on_event(self, event: Mapping[str, Any], shown: bool) -> None:
        """A custom event; ``shown``: not one of those the caller quieted."""

    def on_update(self, chunk: Mapping[str, Any]) -> None:
        """What one step's nodes wrote (``updates``, when `modes` asks for them)."""

    def config(self, config: dict) -> dict:
        """The run config with the token counter among its callbacks."""
        callbacks = list(config.get("callbacks") or [])
        return {**config, "callbacks": [*callbacks, self.usage]}


class PlainOutput(Output):
    """One plain line per event, flushed, and the queue whenever it changes (a pipe, a file, a terminal without
    rich)."""

    def __init__(self, out: TextIO):
        super().__init__(out)
        self.queue_changed = False

    def on_values(self, state: Mapping[str, Any]) -> None:
        if self.queue_changed and state.get("tasks"):
            say(self.out, "  " + plan_summary(state["tasks"]).replace("\n", "\n  "))
            self.queue_changed = False

    def on_event(self, event: Mapping[str, Any], shown: bool) -> None:
        if shown:
            say(self.out, f"- {describe(event)}")
        self.queue_changed = self.queue_changed or event["event"] in QUEUE_CHANGES


class JsonOutput(Output):
    """``--json``: one JSON object per line on stdout (each custom event as it is, then how the command ended);
    notes go to stderr, and nothing is asked inline. While a run streams, what its tools print goes to stderr,
    so stdout holds JSON only."""

    interactive = False

    def note(self, text: str = "") -> None:
        print(text, file=sys.stderr, flush=True)

    def result(self, obj: Mapping[str, Any]) -> None:
        say(self.out, json_line(obj))

    @contextmanager
    def showing(self, max_steps: int | None) -> Iterator[None]:
        if self.out is not sys.stdout:
            yield
            return
        with redirect_stdout(sys.stderr):  # sys.stdout is one for all threads: the tools' workers too
            yield

    def on_event(self, event: Mapping[str, Any], shown: bool) -> None:
        say(self.out, json_line(event))
