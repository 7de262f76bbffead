"""The completion check's routing: a subtask whose window ends with an answer goes to the verifier."""

from __future__ import annotations

from replangraph.llm.reading import ends_with_answer
from replangraph.names import VERIFIER
from replangraph.queue.tasks import Task
from replangraph.routing import Route, TaskRule


def answer_waiting(route: Route, task: Task) -> str | None:
    """A subtask whose window ends with an answer waits for the completion check (one verifier node checks
    every waiting answer)."""
    return VERIFIER if ends_with_answer(route.windows.get(task["id"], [])) else None


def verification_rules() -> list[TaskRule]:
    """The task rule of the dispatch step (the subtask keeps its slot while it waits)."""
    return [TaskRule("answer_waiting", "verification", running=answer_waiting)]
