"""The single-agent fallback: when replanning ends without a way on, one agent gets the goal, the
completed results and what failed and why, and tries to finish the goal in one loop before the report.

It is an ordinary subtask (origin ``fallback``) that the replanner queues: it depends on the
completed subtasks, so it receives their results like any dependency (past ``ATTACHED_RESULTS``,
its brief names them for ``read_output`` instead), and on the work still running or waiting, so it
starts only once that is done. The executor runs it; it cannot hand off work,
and its failure or replan request ends the run with the report (no second replan, no second
fallback).
"""

from __future__ import annotations

from collections.abc import Mapping

from replangraph.context.fitting import result_id
from replangraph.context.results import full_result
from replangraph.names import REPLAN_MARKER
from replangraph.nodes.fallback.prompts import FALLBACK_COMPLETED_INDEX, FALLBACK_TASK, FALLBACK_UNFINISHED_MORE
from replangraph.queue.tasks import FALLBACK, Task, is_fallback, new_task, next_plan_id, plan_tasks, preview

LISTED_UNFINISHED = 30
"""Failed or skipped subtasks the brief describes one by one; the rest are named."""
ATTACHED_RESULTS = 20
"""Up to this many completed results come as the fallback's inputs; past it, the brief names their ids
instead (each input costs room in the opening request, even as an excerpt)."""
LISTED_COMPLETED = 300
"""Completed subtask ids the brief names past ``ATTACHED_RESULTS``; the plan output lists them all."""
WHY_CHARS = 300
PARTIAL_CHARS = 300


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


def completed_index(done: list[str], listed: int = LISTED_COMPLETED) -> str:
    """The brief's paragraph naming the completed subtasks whose results are not attached."""
    ids = ", ".join(done[:listed]) + (f" … and {len(done) - listed} more" if len(done) > listed else "")
    return FALLBACK_COMPLETED_INDEX.format(count=len(done), ids=ids)


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

    It waits for the subtasks still pending or in progress (their work comes first) and, up to
    ``ATTACHED_RESULTS`` of them, for the completed ones (their results are its inputs; past that the
    brief names them for ``read_output``), and is queued after everything else. Team members are
    left out: they leave the queue at their team's merge, and the team's task stands for them.
    """
    others = plan_tasks(tasks)
    done = [t["id"] for t in others if t["status"] == "completed"]
    waiting = [t["id"] for t in others if t["status"] in ("pending", "in_progress")]
    attached = done if len(done) <= ATTACHED_RESULTS else []
    partial = [t["id"] for t in others if t["status"] in ("failed", "skipped") and t.get("result")]
    content = FALLBACK_TASK.format(
        why=why,
        turns=turns,
        marker=REPLAN_MARKER,
        unfinished=unfinished_text(tasks),
        completed="" if attached or not done else completed_index(done),
    )
    task = new_task(
        existing["id"] if existing else free_id(tasks),
        content,
        position=[max((t["position"][0] for t in tasks.values() if not is_fallback(t)), default=-1) + 1],
        # The open ones first: a readiness check stops at the first that has not completed.
        depends_on=[*waiting, *attached],
        origin=FALLBACK,
        plan_id=(existing.get("plan_id") if existing else None) or next_plan_id(tasks),
    )
    if partial:  # what the stopped subtasks found comes with it, as its completed inputs do
        task["builds_on"] = partial[:ATTACHED_RESULTS]
    return task
