"""The single-agent fallback: when replanning ends without a way on, one agent gets the goal, the
completed results and what failed and why, and tries to finish the goal in one loop before the report.

It is an ordinary subtask (origin ``fallback``) that the replanner queues: it depends on every
completed subtask, so it receives their results like any dependency, and on the work still running
or waiting, so it starts only once that is done. The executor runs it; it cannot hand off work,
and its failure or replan request ends the run with the report (no second replan, no second
fallback).
"""

from __future__ import annotations

from collections.abc import Mapping

from .fitting import result_id
from .observations import full_result
from .prompts import FALLBACK_NO_SPLIT, FALLBACK_TASK, FALLBACK_UNFINISHED_MORE, REPLAN_MARKER
from .queue import Task, new_task, next_plan_id, ordered, preview
from .queue_index import is_member

__all__ = [
    "FALLBACK",
    "FALLBACK_LABEL",
    "FALLBACK_NO_SPLIT",
    "fallback_of",
    "fallback_task",
    "free_id",
    "is_fallback",
    "plan_tasks",
    "unfinished_text",
]

FALLBACK = "fallback"
"""The fallback task's origin, and its id when no task of the plan has taken that id."""
FALLBACK_LABEL = "one agent's attempt to finish the goal alone (the single-agent fallback)"
"""How reports name the fallback task (its content is the whole brief the agent got)."""
LISTED_UNFINISHED = 30
"""Failed or skipped subtasks the brief describes one by one; the rest are named."""
WHY_CHARS = 300
PARTIAL_CHARS = 300


def is_fallback(task: Mapping | None) -> bool:
    """Whether ``task`` is the single-agent fallback's."""
    return bool(task) and task.get("origin") == FALLBACK


def fallback_of(tasks: Mapping[str, Task]) -> Task | None:
    """The run's fallback task, if one was queued."""
    return next((t for t in ordered(tasks) if is_fallback(t)), None)


def unfinished_text(tasks: Mapping[str, Task], listed: int = LISTED_UNFINISHED) -> str:
    """Each failed or skipped subtask with why it did not finish and where its partial result is kept."""
    stopped = [t for t in plan_tasks(tasks) if t["status"] in ("failed", "skipped")]
    lines = []
    for task in stopped[:listed]:
        lines.append(f"- {task['id']} ({task['status']}): {preview(task['content'], 200)}")
        if task.get("error"):
            lines.append(f"  Why: {preview(task['error'], WHY_CHARS)}")
        if task.get("result"):
            shown = preview(full_result(task), PARTIAL_CHARS)
            lines.append(f'  Partial result (whole: read_output(output_id="{result_id(task["id"])}")): {shown}')
    rest = stopped[listed:]
    if rest:
        lines.append(FALLBACK_UNFINISHED_MORE.format(count=len(rest), ids=", ".join(t["id"] for t in rest)))
    return "\n".join(lines) or "- (no subtask failed; the plan could not go on)"


def plan_tasks(tasks: Mapping[str, Task]) -> list[Task]:
    """The plan's tasks in queue order: not the fallback, nor team members (a team's task stands for them)."""
    return [t for t in ordered(tasks) if not is_fallback(t) and not is_member(t)]


def free_id(tasks: Mapping[str, Task]) -> str:
    """``fallback``, or ``fallback_2``... when a task of the plan holds that id."""
    if FALLBACK not in tasks:
        return FALLBACK
    n = 2
    while f"{FALLBACK}_{n}" in tasks:
        n += 1
    return f"{FALLBACK}_{n}"


def fallback_task(tasks: Mapping[str, Task], why: str, turns: int, existing: Task | None = None) -> Task:
    """The fallback task for the queue ``tasks`` (``existing``: the pending one it replaces, same id).

    It waits for every completed subtask (their results are its inputs) and for the subtasks still
    pending or in progress (their work comes first), and is queued after everything else. Team
    members are left out: they leave the queue at their team's merge, and the team's task stands for them.
    """
    others = plan_tasks(tasks)
    done = [t["id"] for t in others if t["status"] == "completed"]
    waiting = [t["id"] for t in others if t["status"] in ("pending", "in_progress")]
    content = FALLBACK_TASK.format(why=why, turns=turns, marker=REPLAN_MARKER, unfinished=unfinished_text(tasks))
    return new_task(
        existing["id"] if existing else free_id(tasks),
        content,
        position=[max((t["position"][0] for t in tasks.values() if not is_fallback(t)), default=-1) + 1],
        depends_on=[*done, *waiting],
        origin=FALLBACK,
        plan_id=(existing.get("plan_id") if existing else None) or next_plan_id(tasks),
    )
