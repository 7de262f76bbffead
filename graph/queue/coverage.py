"""Coverage: what the queue's subtasks account for, and which follow-ups add work to it. No LangGraph here.

A follow-up (handed off, or asked for by a completion check or the goal check) that repeats work queued, running
or done is not run twice; one a check asks for stays inside the checked subtask's scope; the part of a subtask's
range its hand-off's follow-ups skip is queued too. Instructions are compared as text, and as numbered ranges of
one list (`replangraph.queue.scopes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from replangraph.queue.index import index_of
from replangraph.queue.scopes import FreshWork, fresh_work, gaps, merged_ranges, same_list, scope_of, subtract
from replangraph.queue.tasks import preview

OPEN = ("pending", "in_progress")


def claimed_work(tasks: Mapping[str, Mapping[str, Any]], leave_out: Sequence[str] = ()) -> list[tuple[str, str]]:
    """``(task id, instructions)`` of the work the queue accounts for: each pending or running subtask's
    instructions, and each completed one's less the ranges of its list that its follow-ups took over (a subtask
    that read items 1-50 of 1-100 and handed off 51-100 accounts for 1-50). Failed and skipped subtasks account
    for nothing. ``leave_out``: ids not counted."""
    index = index_of(tasks)
    skip = set(leave_out)
    found = []
    for task_id, task in tasks.items():
        if task_id in skip or task["status"] not in (*OPEN, "completed"):
            continue
        scope = scope_of(task["content"]) if task["status"] == "completed" else None
        children = [tasks[c] for c in index.children.get(task_id, ()) if c in tasks] if scope is not None else []
        if not children:
            found.append((task_id, task["content"]))
            continue
        theirs = [s.span for c in children if (s := scope_of(c["content"])) is not None and same_list(s, scope)]
        found += [(task_id, scope.text(*piece)) for piece in subtract([scope.span], theirs)]
    return found


def fresh_follow_ups(
    tasks: Mapping[str, Mapping[str, Any]],
    contents: Sequence[str],
    *,
    within: Mapping[str, Any] | None = None,
    goal: str = "",
    again: bool = False,
    claims: bool = True,
    batch_size: int | None = None,
) -> FreshWork:
    """The follow-ups of ``contents`` worth queueing (`fresh_work`), with a note for each one left out or trimmed:
    none repeats the goal, work the queue accounts for (`claimed_work`) or an earlier follow-up, and those on
    ``within``'s list stay inside its range. ``within``: the subtask whose work they are (the one handing off, or
    the one a check judged). With ``again``, a follow-up that repeats ``within``'s own instructions is kept: the
    subtask made progress, and its check asks it to go on. With ``batch_size``, adjacent ranges worded alike are
    merged into follow-ups of up to that many items (`merged_ranges`). Without ``claims`` (a check that judged
    the results themselves found the work missing), completed subtasks count only by their instructions' exact
    text, not by the ranges they claim to have done."""
    own = within["content"] if within is not None else None
    taken = claimed_work(tasks, [within["id"]] if within is not None else [])
    notes: list[str] = []
    if not claims:
        done = {normalized(t["content"]): t["id"] for t in tasks.values() if t["status"] == "completed"}
        repeats = {c: done[normalized(c)] for c in contents if normalized(c) in done}
        notes += [f'Follow-up "{preview(c, 60)}" dropped: it repeats task {who}.' for c, who in repeats.items()]
        contents = [c for c in contents if c not in repeats]
        taken = [(task_id, text) for task_id, text in taken if tasks[task_id]["status"] != "completed"]
    the_goal = [c for c in contents if goal and same_text(c, goal)]
    going_on = [c for c in contents if again and own is not None and same_text(c, own) and c not in the_goal]
    fresh = fresh_work([c for c in contents if c not in (*the_goal, *going_on)], within=own, taken=taken)
    notes += [f'Follow-up "{preview(c, 60)}" dropped: it repeats the goal.' for c in the_goal] + fresh.notes
    queued = [*fresh.queued, *going_on[:1]]
    if batch_size and len(queued) > 1:  # adjacent small ranges: one follow-up of up to batch_size items
        merged, joined = merged_ranges([{"id": str(n), "content": c} for n, c in enumerate(queued)], batch_size)
        queued, notes = [spec["content"] for spec in merged], notes + joined
    return FreshWork(queued, notes)


def normalized(text: str) -> str:
    """An instruction as `same_text` compares it."""
    return " ".join(text.split()).strip(" .!?:;").casefold()


def same_text(a: str, b: str) -> bool:
    """Whether two instructions are the same, ignoring case, spacing and closing punctuation."""

    return normalized(a) == normalized(b)


def skipped_parts(within: str, contents: Sequence[str]) -> list[str]:
    """Instructions for the parts of ``within``'s range that a hand-off's follow-ups skip, from where they start
    to its end (`gaps`)."""
    return gaps(within, contents)
