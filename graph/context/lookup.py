"""Finding kept text: the store namespace a thread's entries live under (`thread_label`, `run_namespace`,
`run_label`), the whole text behind an output id (`read_saved`: what ``read_output``, ``replangraph output``
and ``durable.kept_output`` show) and the ids kept (`saved_keys`, `output_keys`). No LangGraph here.

A run without a store and a thread id runs none of it. `replangraph.context.kept` keeps these names importable
and is the one module that imports this one."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from replangraph.context import kept  # kept imports this module: its names are read when called
from replangraph.context.fitting import GOAL_ID, PLAN_ID, RESULT_KEY, output_id
from replangraph.queue.tasks import plan_summary

LABEL_MAX = 200
"""Longest label `thread_label` returns whole; a longer one is cut and ends in a hash of the whole."""


def thread_label(thread: str) -> str:
    """``thread`` as one store-namespace label and file name: ``%``, ``.``, ``/``, ``\\``, ``~``, control
    characters and NUL percent-encoded (``a.b`` → ``a%2Eb``), so it is never ``.`` or ``..``, holds no period
    (LangGraph's stores refuse them) and two ids never share a label; one over `LABEL_MAX` characters (after encoding)
    is cut and ends in ``~`` and 16 hex digits of its SHA-256."""
    label = "".join(f"%{ord(c):02X}" if c in "%./\\~" or ord(c) < 32 or ord(c) == 127 else c for c in thread)
    if len(label) > LABEL_MAX or len(label.encode("utf-8")) > LABEL_MAX:
        digest = hashlib.sha256(thread.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        label = label.encode("utf-8")[: LABEL_MAX - 17].decode("utf-8", "ignore") + "~" + digest
    return label or "%"


def run_namespace(thread: str | None = None) -> tuple[str, ...]:
    """The store namespace of the run on ``thread`` (default: the run going on):
    ``("replangraph", thread_label(thread))``, ``("replangraph", "default")`` without a thread id."""
    thread = thread if thread is not None else kept.thread_id()
    return ("replangraph", thread_label(thread) if thread is not None else "default")


def run_label() -> str | None:
    """The label of the run going on: its thread's (`thread_label`), else ``run-<its run key>`` (a run
    without a thread id), else None (outside a graph run)."""
    thread = kept.thread_id()
    if thread is not None:
        return thread_label(thread)
    key = kept.current_workspace().run_key
    return f"run-{key}" if key else None


def saved_text(task: Mapping[str, Any], key: str) -> str | None:
    """Text kept for ``task`` under ``key``."""
    return kept.current_workspace().get(kept.output_slot(task, key))


def read_saved(ident: str, tasks: Mapping[str, Mapping[str, Any]], goal: str, current: str) -> str | None:
    """The full text behind an output id; ids without a task part are looked up in ``current``'s outputs."""
    ident = ident.strip().strip("'\"` ")
    if ident == GOAL_ID:
        return goal
    if ident == PLAN_ID:
        return plan_summary(tasks)
    for index in reversed([i for i, c in enumerate(ident) if c == "/"]):  # task ids may hold a slash too
        task_id, key = ident[:index], ident[index + 1 :]
        if task_id in tasks:
            found = kept.full_result(tasks[task_id]) if key == RESULT_KEY else saved_text(tasks[task_id], key)
            if found is not None:
                return found
    report, _, key = ident.partition("/")
    if report.startswith(kept.REPORT_PREFIX) and key:  # a list the fallback report kept
        found = saved_text({"id": report, "plan_id": report.removeprefix(kept.REPORT_PREFIX)}, key)
        if found is not None:
            return found
    return saved_text(tasks[current], ident) if current in tasks else None


def saved_keys(tasks: Mapping[str, Mapping[str, Any]], task_id: str, limit: int = 20) -> list[str]:
    """Output ids a subtask can read: its own kept outputs, then ``goal``."""
    keys = kept.current_workspace().keys(tasks[task_id], limit) if task_id in tasks else []
    return [output_id(task_id, key) for key in keys] + [GOAL_ID]


def output_keys(workspace: kept.Workspace, task: Mapping[str, Any], limit: int = 20) -> list[str]:
    """Keys of a subtask's kept outputs in ``workspace`` (the part after ``output:``), oldest first, the last
    ``limit`` (`Workspace.keys`)."""
    step = kept.step_key(task)
    prefix = step + ":output:"
    if workspace.store is not None:
        items = workspace.store.search(workspace.namespace, filter={"step": step}, limit=10_000)
        ordered = sorted((i for i in items if i.key.startswith(prefix)), key=lambda i: i.created_at)
        rests = [i.key[len(step) :] for i in ordered]
    else:
        rests = [*workspace.entries.get(step, {})]
    rests += workspace.pending.get(step, {})
    found = [r.removeprefix(":output:") for r in dict.fromkeys(rests) if r.startswith(":output:")]
    return found[-limit:]
