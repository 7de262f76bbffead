"""Human in the loop on the command line: ``--max-clarifications``, ``--approve-plan``, and how its events
print."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from replangraph.app.flags import Flag, non_negative_int
from replangraph.nodes.human.names import COMMAND_ANSWERED, COMMAND_PATTERN, PLAN_REVIEWED, QUESTION_ANSWERED
from replangraph.queue import preview

FLAGS = (
    Flag(
        "--max-clarifications",
        "max_clarifications",
        "questions one subtask may ask you; 0: agents cannot ask",
        value=non_negative_int,
        metavar="N",
    ),
    Flag("--approve-plan", "approve_plan", "pause after planning until you approve, edit or cancel the plan"),
)
EVENT_SAMPLES = {
    PLAN_REVIEWED: {"decision": "edited", "tasks": [{"id": "1"}]},
    QUESTION_ANSWERED: {"task_id": "a", "question": "Which year?", "answer_preview": "2024"},
    COMMAND_ANSWERED: {"command": "/status", "reply": "Tasks: 1 pending"},
}


def describe(event: Mapping[str, Any], line: str | None) -> str | None:
    name = event["event"]
    if name == PLAN_REVIEWED:
        notes = "".join(f"; note: {n}" for n in event.get("notes") or ())
        return f"plan {event['decision']} ({len(event['tasks'])} task(s)){notes}"
    if name == QUESTION_ANSWERED:
        return f"{event['task_id']} asked {preview(event['question'], 60)!r}: {preview(event['answer_preview'], 60)}"
    if name == COMMAND_ANSWERED:
        return f"{event['command']}: {preview(event['reply'], 100)}"
    return None


REPLY_EVENTS = (COMMAND_ANSWERED,)
COMMAND_RE = re.compile(COMMAND_PATTERN, re.S)
KINDS = ("plan", "question")
"""The kinds of this feature's ``interrupt()`` values: a plan to review, a question."""


def kind_of(value: Any) -> str | None:
    return value.get("kind") if isinstance(value, Mapping) and value.get("kind") in KINDS else None


class Pauses:
    """How the terminal shows the plan review and the agents' questions, and reads answers to them."""

    @property
    def cancel_word(self) -> str:
        from replangraph.config import AgentConfig

        return AgentConfig().cancel_word

    @property
    def answer_help(self) -> str:
        return (
            f"for a plan: approve, the task list edited as JSON, or {self.cancel_word}; a slash command such as "
            "/status is sent as input and answered"
        )

    def order(self, value: Any) -> tuple | None:
        """The plan first, then questions by task id (numbers in it compared as numbers)."""
        kind = kind_of(value)
        if kind is None:
            return None
        parts = re.split(r"(\d+)", str(value.get("task_id", "")))
        return (0 if kind == "plan" else 1, [(int(p), "") if p.isdigit() else (-1, p) for p in parts])

    def key(self, value: Any) -> Any | None:
        kind = kind_of(value)
        return None if kind is None else (kind, value.get("task_id"), value.get("tool_call_id"))

    def lines(self, value: Any) -> list[str] | None:
        kind = kind_of(value)
        if kind == "plan":
            lines = [f"The plan for {preview(value.get('goal', ''), 100)!r} waits for your approval:"]
            for task in value.get("tasks") or []:
                after = f" (after {', '.join(task.get('depends_on') or [])})" if task.get("depends_on") else ""
                lines.append(f"  {task.get('id')}: {task.get('content')} [{task.get('agent_type', 'default')}]{after}")
            if value.get("error"):
                lines.append(f"  Error: {value['error']}")
            return lines
        if kind == "question":
            return [
                f"{value.get('task_id')} asks: {value.get('question')}",
                f"  (subtask: {preview(value.get('task'), 100)})",
            ]
        return None

    def hint(self, value: Any) -> str | None:
        kind = kind_of(value)
        if kind == "plan":
            return f"approve / edit as JSON (a task list) / {self.cancel_word}"
        return f"your answer (or /status, /plan, {self.cancel_word})" if kind == "question" else None

    def waiting_note(self, values: Sequence[Any]) -> str | None:
        if any(kind_of(value) == "plan" for value in values):
            return f"Answer the plan with approve, the task list edited as JSON, or {self.cancel_word}."
        return None

    def cancels(self, answer: str) -> bool:
        return answer.strip().casefold() == self.cancel_word.casefold()

    def command(self, answer: str) -> str | None:
        """A slash command other than the cancel word (``/status``; a path such as ``/home/me`` is an answer)."""
        text = answer.strip()
        return text if COMMAND_RE.match(text) and not self.cancels(text) else None


PAUSES = Pauses()
