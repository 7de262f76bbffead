"""What the final answer and the fallback report both tell: the run's own decisions a reader should know
(`run_notes`) and the failed subtasks whose work a new plan took over (`replanned_ids`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from replangraph.queue.tasks import Task, ordered, preview


def replanned_ids(replans: Sequence[Mapping]) -> set[str]:
    """Failed subtasks whose work a new plan took over."""
    return {tid for r in replans if r.get("outcome") == "replanned" for tid in r.get("task_ids", [])}


def run_notes(tasks: Mapping[str, Task]) -> list[str]:
    """What the run decided on its own that a reader should know, one line each, in queue order: a completion
    check that stood down, a chain of continuations stopped for adding nothing, a subtask a limit stopped and
    continued."""
    notes = []
    for task in ordered(tasks):
        stood = (task.get("verdict") or {}).get("stood_down")
        if stood:
            notes.append(f"The completion check of {task['id']} stood down; its result stands: {preview(stood, 200)}")
        if task.get("chain_stopped"):
            notes.append(f"{task['id']} queued no follow-ups: {preview(task['chain_stopped'], 200)}")
        if (task.get("follow_up") or {}).get("by") == "limit":
            notes.append(f"{task['parent_id']} stopped at a limit; {task['id']} went on with its work")
    return notes
