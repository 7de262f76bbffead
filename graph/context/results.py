"""A subtask's result, read through one accessor: the queue holds a preview (``Task.result``), the workspace the
whole text (`full_result`); how a result and the outputs kept with it are written (`result_fields`,
`keep_outputs`), and the report's own entries (`report_task`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replangraph.context.fitting import excerpt, result_id
from replangraph.context.workspace import current_workspace, entries_of, entry_update, output_slot, result_slot
from replangraph.queue.tasks import latest_plan, ordered


def keep_outputs(task: Mapping[str, Any], outputs: Mapping[str, str]) -> dict[str, Any]:
    """The update part (``workspace`` entries) keeping texts cut from a subtask's window, by key. A key
    already held is not written again (callers pick free keys with `unique_key`): a note may point at it."""
    workspace = current_workspace()
    fresh = {key: text for key, text in outputs.items() if not workspace.has(output_slot(task, key))}
    return entries_of(entry_update(output_slot(task, key), text, kind="output") for key, text in fresh.items())


RESULT_PREVIEW_CHARS = 2_000
"""Results up to this long stay whole in the queue; longer ones as an excerpt pointing at the workspace."""


def result_fields(task: Mapping[str, Any], text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(task fields, update part)`` keeping a subtask's result as a new version: the fields point at it
    (``result``, whole when short, else an excerpt; ``result_ref``), the update part holds its
    ``workspace`` entries. An existing version is never overwritten (a replayed or forked run)."""
    workspace = current_workspace()
    version = int((task.get("result_ref") or {}).get("version", 0)) + 1
    while workspace.has(result_slot(task, version)):
        version += 1
    meta = {"kind": "result", "task_id": task["id"], "version": version}
    entries = [entry_update(result_slot(task, version), text, **meta), entry_update(result_slot(task), text, **meta)]
    shown = text if len(text) <= RESULT_PREVIEW_CHARS else excerpt(text, RESULT_PREVIEW_CHARS, result_id(task["id"]))
    ref = {"key": "".join(result_slot(task, version)), "version": version, "chars": len(text)}
    return {"result": shown, "result_ref": ref}, entries_of(entries)


def full_result(task: Mapping[str, Any]) -> str | None:
    """A subtask's whole result: from the workspace when the queue holds a preview, else the queue's."""
    ref = task.get("result_ref")
    if ref:
        found = current_workspace().get(result_slot(task, ref.get("version")))
        if found is not None:
            return found
    return task.get("result")


def all_results(tasks: Mapping[str, Mapping[str, Any]]) -> str:
    """Every completed result and partial result of ``tasks``, whole, in queue order, each under its subtask's id
    and instructions: the text of output id ``results``, read from the workspace, never kept twice."""
    parts = []
    for task in ordered(tasks):
        text = full_result(task) if task["status"] == "completed" or task.get("result") else None
        if text:
            mark = "" if task["status"] == "completed" else f" (partial result; {task['status']})"
            parts.append(f"[{task['id']}] {task['content']}{mark}\n{text}")
    return "\n\n".join(parts)


REPORT_PREFIX = "report-"


def report_task(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The stand-in task whose kept outputs hold the fallback report's whole lists, for the queue's latest
    plan ``p``: id ``report-{p}``, so its output ids are ``report-{p}/{key}``."""
    plan = latest_plan(tasks)
    return {"id": f"{REPORT_PREFIX}{plan}", "plan_id": plan}
