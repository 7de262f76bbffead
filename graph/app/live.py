"""The live view of a run on a terminal (needs rich: ``pip install 'replangraph[cli]'``).

`QueueView` holds what the view shows and is fed the graph's stream chunks (``values``, ``updates``, ``custom``);
`QueueView.render` draws it. `LiveOutput` streams a run under ``rich.live.Live``, printing each event above the
view. The view stops when the stream ends, so questions are asked on a quiet terminal.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from langchain_core.messages import AIMessage
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text
from rich.tree import Tree

from replangraph.app.console import Output, UsageCounter, describe
from replangraph.events import PLAN_COMPLETED, PLAN_CREATED
from replangraph.queue import RESET, ordered, preview, spent_model_calls

STATUS_LOOK = {
    "pending": ("○", "dim", "pending"),
    "in_progress": ("▶", "bold yellow", "running"),
    "completed": ("✔", "green", "completed"),
    "failed": ("✘", "bold red", "failed"),
    "skipped": ("⊘", "dim", "skipped"),
}
"""Status: (symbol, style, word)."""
WAITING = "waiting for an answer"
MAX_ROWS = 30
"""Tasks a long queue shows at most (running and failed ones always)."""


def call_label(call: Mapping[str, Any], limit: int = 70) -> str:
    """``name(arg=value, ...)`` for a tool call, cut to ``limit`` characters."""
    args = call.get("args") if isinstance(call.get("args"), Mapping) else {}
    shown = ", ".join(f"{k}={json.dumps(v, default=str, ensure_ascii=False)}" for k, v in args.items())
    return preview(f"{call.get('name', '?')}({shown})", limit)


def calls_in_flight(window: Any) -> list[str] | None:
    """The tool calls a subtask's window waits on: those of its last message when that is a model turn that
    called tools; None otherwise (no window, or the calls were answered)."""
    if not isinstance(window, Sequence) or not window:
        return None
    last = window[-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        return [call_label(c) for c in last.tool_calls]
    return None


def line_text(text: str, style: str = "") -> Text:
    """One line of the view: cut with an ellipsis where the terminal ends, never wrapped, so the view keeps
    its height as rows change."""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


class QueueView:
    """What the live view shows: the queue (from ``values``), the tool calls in flight per subtask (from
    ``updates``: a model turn that called tools, until the update that answers them), steps used and tokens."""

    def __init__(self, max_steps: int | None = None, usage: UsageCounter | None = None):
        self.max_steps = max_steps
        self.usage = usage or UsageCounter()
        self.goal = ""
        self.tasks: dict[str, Any] = {}
        self.steps = 0
        self.calls: dict[str, list[str]] = {}
        self.phase = "planning"
        self.max_rows = MAX_ROWS
        self._lock = threading.RLock()  # fed by the stream, drawn by Live's refresh thread

    def feed(self, mode: str, chunk: Any) -> None:
        """Take one chunk of ``graph.stream(..., stream_mode=[...])``."""
        with self._lock:
            if mode == "values" and isinstance(chunk, Mapping):
                self.goal = str(chunk.get("goal") or self.goal)
                self.tasks = dict(chunk.get("tasks") or {})
                self.steps = spent_model_calls(chunk)
                if self.tasks and self.phase == "planning":
                    self.phase = ""
                for task_id in list(self.calls):
                    if (self.tasks.get(task_id) or {}).get("status") != "in_progress":
                        self.calls.pop(task_id)
            elif mode == "updates" and isinstance(chunk, Mapping):
                if "__interrupt__" in chunk:
                    self.phase = WAITING
                for update in chunk.values():
                    for one in update if isinstance(update, list | tuple) else [update]:
                        if isinstance(one, Mapping):
                            self.take_update(one)
            elif mode == "custom" and isinstance(chunk, Mapping):
                self.take_event(chunk)

    def take_update(self, update: Mapping[str, Any]) -> None:
        windows = update.get("windows")
        if isinstance(windows, Mapping):
            if windows.get(RESET):
                self.calls.clear()
            for task_id, window in windows.items():
                if task_id == RESET:
                    continue
                calls = calls_in_flight(window)
                if calls:
                    self.calls[task_id] = calls
                else:
                    self.calls.pop(task_id, None)
        tasks = update.get("tasks")
        if isinstance(tasks, Mapping):
            for task_id, change in tasks.items():
                status = change.get("status") if isinstance(change, Mapping) else None
                if change is None or status not in (None, "in_progress"):
                    self.calls.pop(task_id, None)

    def take_event(self, event: Mapping[str, Any]) -> None:
        name = event.get("event")
        if name == PLAN_CREATED:
            self.phase = ""
        elif name == PLAN_COMPLETED:
            self.phase = "writing the final answer"

    def ended(self) -> None:
        """The stream ended: the run finished, or waits for an answer."""
        with self._lock:
            if self.phase != WAITING:
                self.calls.clear()
                self.phase = ""

    def render(self) -> RenderableType:
        """The view: the queue as a tree (handed-off work under its parent), then the counters."""
        with self._lock:
            title = line_text("Plan", style="bold")
            if self.goal:
                title.append(f": {preview(self.goal, 90)}", style="bold")
            tree = Tree(title, guide_style="dim")
            nodes: dict[str, Tree] = {}
            queue = ordered(self.tasks)
            shown = self.shown(queue)
            for task in queue:
                if task["id"] not in shown:
                    continue
                parent = nodes.get(task.get("parent_id") or "", tree)
                nodes[task["id"]] = node = parent.add(self.task_line(task))
                for call in self.calls.get(task["id"], []):
                    node.add(line_text(f"↳ {call}", style="cyan"))
            if not self.tasks:
                tree.add(line_text("planning…", style="dim italic"))
            if len(shown) < len(queue):
                tree.add(line_text(f"… {len(queue) - len(shown)} other task(s) not shown", style="dim italic"))
            return Group(tree, self.footer())

    def shown(self, queue: Sequence[Mapping[str, Any]]) -> set[str]:
        """The tasks drawn: all of a short queue; of a long one, those running or failed, then the next pending
        ones (with the tasks they were handed off from), up to ``max_rows``."""
        if len(queue) <= self.max_rows:
            return {t["id"] for t in queue}
        first = [t for t in queue if t.get("status") in ("in_progress", "failed")]
        wanted = first + [t for t in queue if t.get("status") == "pending"]
        shown: set[str] = set()
        for number, task in enumerate(wanted):
            chain = [task["id"]]
            while (parent := (self.tasks.get(chain[-1]) or {}).get("parent_id")) and parent not in chain:
                chain.append(parent)
            if number >= len(first) and len(shown.union(chain)) > self.max_rows:
                break
            shown.update(chain)
        return shown

    def task_line(self, task: Mapping[str, Any]) -> Text:
        """``▶ 1 running Extract…``: the status word before the content, so a cut line still shows it."""
        symbol, style, word = STATUS_LOOK.get(task.get("status", ""), ("?", "", str(task.get("status"))))
        line = line_text(f"{symbol} ", style=style)
        line.append(f"{task['id']} ", style="bold")
        if task.get("status") != "pending":
            line.append(f"{word} ", style=style)
        line.append(preview(task.get("content"), 70))
        if task.get("status") in ("failed", "skipped") and task.get("error"):
            line.append(f" ({preview(task['error'], 60)})", style=style)
        return line

    def footer(self) -> Text:
        counts: dict[str, int] = {}
        for task in self.tasks.values():
            counts[task.get("status", "")] = counts.get(task.get("status", ""), 0) + 1
        budget = f"/{self.max_steps}" if self.max_steps else ""
        line = line_text(f"steps: {self.steps}{budget} · tokens: {self.usage.label()}", style="bold")
        for status, (symbol, style, word) in STATUS_LOOK.items():
            if counts.get(status):
                line.append(" · ")
                line.append(f"{symbol} {counts[status]} {word}", style=style)
        if self.phase and self.tasks:
            line.append(f" · {self.phase}…", style="italic")
        return line


class LiveOutput(Output):
    """A terminal with rich: the live view while the run streams, its events printed above it.

    rich redraws the view on its own timer (4 times a second); the view is also redrawn as soon as a step ends
    (``values``), and after a node's update at most every `REDRAW_S`, so a fast run is not shown behind."""

    modes = ("custom", "values", "updates")
    REDRAW_S = 0.05

    def __init__(self, out: TextIO, console: Console | None = None):
        super().__init__(out)
        self.console = console or Console(file=out, highlight=False)
        self.view = QueueView(usage=self.usage)
        self.live: Live | None = None
        self.drawn = 0.0

    @contextmanager
    def showing(self, max_steps: int | None) -> Iterator[None]:
        self.view.max_steps = max_steps
        self.view.phase = "" if self.view.tasks else "planning"
        ours = self.out is sys.stdout  # stray prints of tools land above the view, not through it
        live = Live(
            console=self.console,
            get_renderable=self.view.render,
            refresh_per_second=4,
            redirect_stdout=ours,
            redirect_stderr=ours,
        )
        with live:
            self.live = live
            try:
                yield
                self.view.ended()
            finally:
                self.live = None

    def redraw(self, now: bool) -> None:
        """Redraw the view: ``now``, or when the last redraw is `REDRAW_S` old."""
        if self.live is not None and (now or time.monotonic() - self.drawn >= self.REDRAW_S):
            self.live.refresh()
            self.drawn = time.monotonic()

    def on_values(self, state: Mapping[str, Any]) -> None:
        self.view.feed("values", state)
        self.redraw(now=True)

    def on_update(self, chunk: Mapping[str, Any]) -> None:
        self.view.feed("updates", chunk)
        self.redraw(now=False)

    def on_event(self, event: Mapping[str, Any], shown: bool) -> None:
        self.view.feed("custom", event)
        if shown and self.live is not None:  # printing above the view redraws it
            self.live.console.print(Text(f"- {describe(event)}", style="dim"))
