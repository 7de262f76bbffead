"""Output ids and the kept text behind them. Ids are ``goal``, ``{task_id}/result`` (a subtask's whole result) and
``{task_id}/{key}`` (a tool call id for tool outputs, ``history-N`` for folded messages, ``summary-N``/``message-…``
for cut messages, ``window-at-failure``, ``turn-at-end``), ``plan`` (the current plan) and ``results`` (every
result, whole). The store namespace a thread's entries live under (`thread_label`, `run_namespace`, `run_label`),
the whole text behind an id (`read_saved`: what ``read_output``, ``replangraph output`` and
``durable.kept_output`` show) and the ids kept (`saved_keys`, `output_keys`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replangraph.context.fitting import GOAL_ID, PLAN_ID, RESULT_KEY, RESULTS_ID, output_id
from replangraph.context.results import REPORT_PREFIX, all_results, full_result
from replangraph.context.workspace import current_workspace, output_slot
from replangraph.queue.tasks import plan_summary


def saved_text(task: Mapping[str, Any], key: str) -> str | None:
    """Text kept for ``task`` under ``key``."""
    return current_workspace().get(output_slot(task, key))


def read_saved(ident: str, tasks: Mapping[str, Mapping[str, Any]], goal: str, current: str) -> str | None:
    """The full text behind an output id; ids without a task part are looked up in ``current``'s outputs."""
    ident = ident.strip().strip("'\"` ")
    if ident == GOAL_ID:
        return goal
    if ident == PLAN_ID:
        return plan_summary(tasks)
    if ident == RESULTS_ID:
        return all_results(tasks)
    for index in reversed([i for i, c in enumerate(ident) if c == "/"]):  # task ids may hold a slash too
        task_id, key = ident[:index], ident[index + 1 :]
        if task_id in tasks:
            found = full_result(tasks[task_id]) if key == RESULT_KEY else saved_text(tasks[task_id], key)
            if found is not None:
                return found
    report, _, key = ident.partition("/")
    if report.startswith(REPORT_PREFIX) and key:  # a list the fallback report kept
        found = saved_text({"id": report, "plan_id": report.removeprefix(REPORT_PREFIX)}, key)
        if found is not None:
            return found
    return saved_text(tasks[current], ident) if current in tasks else None


def saved_keys(tasks: Mapping[str, Mapping[str, Any]], task_id: str, limit: int = 20) -> list[str]:
    """Output ids a subtask can read: its own kept outputs, then ``goal``."""
    keys = current_workspace().keys(tasks[task_id], limit) if task_id in tasks else []
    return [output_id(task_id, key) for key in keys] + [GOAL_ID]
