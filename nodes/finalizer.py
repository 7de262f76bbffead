"""finalize node: writes the final answer from the completed results, in queue order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.errors import GraphBubbleUp

from replangraph.config import AgentConfig
from replangraph.events import PLAN_COMPLETED, emit
from replangraph.messages import message_text
from replangraph.prompts import FINAL_TEMPLATE, FINALIZER_PROMPT
from replangraph.queue import RESET, Task, ordered, status_counts
from replangraph.report import fallback_report
from replangraph.routing import spent_model_calls


def stop_unfinished(tasks: Mapping[str, Task], reason: str) -> dict[str, dict]:
    """Updates that close every task still pending or in progress when the run stops."""
    updates: dict[str, dict] = {}
    for task in tasks.values():
        if task["status"] == "in_progress":
            updates[task["id"]] = {"status": "failed", "error": f"stopped before it finished: {reason}"}
        elif task["status"] == "pending":
            updates[task["id"]] = {"status": "skipped", "error": task.get("error") or f"not run: {reason}"}
    return updates


def replanned_ids(replans: Sequence[Mapping]) -> set[str]:
    """Failed subtasks whose work a new plan took over."""
    return {tid for r in replans if r.get("outcome") == "replanned" for tid in r.get("task_ids", [])}


def unresolved(tasks: Mapping[str, Task], replans: Sequence[Mapping]) -> list[Task]:
    """Subtasks that leave the goal unfinished: not run, stopped, or failed without a replacement plan."""
    covered = replanned_ids(replans)
    return [
        t
        for t in ordered(tasks)
        if t["status"] in ("pending", "in_progress", "skipped") or (t["status"] == "failed" and t["id"] not in covered)
    ]


def stop_reason(tasks: Mapping[str, Task], replans: Sequence[Mapping], model_calls: int, config: AgentConfig) -> str:
    """Why the run ends unfinished."""
    if model_calls >= config.max_steps:
        return f"the step budget max_steps={config.max_steps} was used up"
    if any(r.get("outcome") == "gave_up" for r in replans):
        return "the replanner found no way to continue"
    covered = replanned_ids(replans)
    failed = [t["id"] for t in ordered(tasks) if t["status"] == "failed" and t["id"] not in covered]
    if failed:
        return f"subtask {', '.join(failed)} failed" if len(failed) == 1 else f"subtasks {', '.join(failed)} failed"
    return "no remaining subtask could run"


def results_text(tasks: Mapping[str, Task]) -> str:
    """Completed results, in queue order, for the final prompt."""
    return "\n\n".join(
        f"[{t['id']}] {t['content']}\n{t['result']}" for t in ordered(tasks) if t["status"] == "completed"
    )


class Finalizer:
    """One model call over the completed results; the fallback report when that is not possible."""

    def __init__(self, model: BaseChatModel, config: AgentConfig):
        self.model = model
        self.config = config

    def __call__(self, state: Mapping) -> dict:
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        goal = state.get("goal", "")
        replans = state.get("replans") or []
        unfinished = bool(unresolved(tasks, replans))
        reason = stop_reason(tasks, replans, spent_model_calls(state), self.config) if unfinished else ""
        closing = stop_unfinished(tasks, reason) if unfinished else {}
        closed = {tid: {**t, **closing.get(tid, {})} for tid, t in tasks.items()}
        answer = self.answer(goal, closed, reason)
        emit(PLAN_COMPLETED, final_answer=answer, counts=status_counts(closed), stop_reason=reason or None)
        update: dict[str, Any] = {
            "final_answer": answer,
            "messages": [AIMessage(answer, name="replangraph")],
            "windows": {RESET: True},
        }
        if closing:
            update["tasks"] = closing
        return update

    def answer(self, goal: str, tasks: Mapping[str, Task], reason: str) -> str:
        """The final answer: the model's synthesis when everything completed, else the report."""
        if reason or not tasks:
            return fallback_report(goal, tasks, reason or "no subtasks were planned")
        prompt = [
            SystemMessage(FINALIZER_PROMPT),
            HumanMessage(FINAL_TEMPLATE.format(goal=goal, results=results_text(tasks))),
        ]
        try:
            text = message_text(self.model.invoke(prompt)).strip()
        except GraphBubbleUp:
            raise
        except Exception as exc:  # the model is down: the queue still holds every result
            return fallback_report(goal, tasks, f"the final model call failed ({type(exc).__name__}: {exc})")
        return text or fallback_report(goal, tasks, "the model returned an empty final answer")
