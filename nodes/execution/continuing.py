"""A subtask a limit stopped (``max_step_iterations``, ``step_timeout_s``) goes on in its own conversation.

What it read is its result, and the rest of its work is a continuation: a new subtask (its record, its progress
rule, its fresh step budget) that starts at once in the stopped subtask's window, after a note that says so
(`stopped_at_limit`). Its model sees its own calls and what they returned, as a ReAct agent's model would; the
router sends the window to the compressor first when it does not fit. The note and the continuation's instructions
list every tool call of the chain, grouped (`listed_calls`), so that a model whose window no longer shows them (old
outputs dropped, a window compressed), a completion check or a replan sees them all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from replangraph.context.carried import call_labels, continued_id, known_reads, made_progress, own_part, with_reads
from replangraph.context.fitting import output_id, unique_key
from replangraph.context.outcomes import (
    announced,
    completed,
    failed_with_window,
    merge_updates,
    window_reads,
    with_read_digests,
)
from replangraph.context.results import full_result, keep_outputs
from replangraph.context.window_outputs import is_taken
from replangraph.events import DYNAMIC_TASKS_ADDED, STEP_STARTED, event
from replangraph.llm.reading import answer_text
from replangraph.queue.plans import LimitReached, limit_hit, split_task
from replangraph.queue.tasks import Continued, QueueError, is_continuation, is_follow_up
from replangraph.state import StateUpdate

CONTINUATION = (
    "{instructions}\n\n(This continues subtask {parent}, which stopped before it finished: {why}. Its agent goes on "
    "in the same conversation. The tool calls so far, whose outputs are kept in earlier results: {calls}. Do the "
    "rest of the work, without repeating them.)"
)
"""A continuation's instructions."""
GOES_ON = (
    "(Stopped here: {why}. Your work goes on in this conversation as subtask {id}: continue from where you "
    "stopped. The tool calls so far, whose outputs are kept: {calls}. Do not repeat them.)"
)
"""The note after which a carried window is the continuation's own (`replangraph.context.carried.own_start`)."""
LISTED_CHARS = 3_000
"""Longest listing of calls a continuation's instructions hold; a longer one is kept whole as an output."""
CALLS_KEY = "calls-so-far"
"""The key the whole listing is kept under when the instructions show only part of it."""


# --------------------------------------------------------------------------- a compact list of every call


def numbers_text(values: Sequence[int]) -> str:
    """Whole numbers as runs: ``1-291 step 10``, ``1-7``, ``3, 9``."""
    values = sorted(set(values))
    parts, i = [], 0
    while i < len(values):
        step = values[i + 1] - values[i] if i + 1 < len(values) else 0
        j = i + 1
        while j + 1 < len(values) and values[j + 1] - values[j] == step:
            j += 1
        if j - i >= 2 or (j - i == 1 and step == 1):
            parts.append(f"{values[i]}-{values[j]}" + (f" step {step}" if step != 1 else ""))
            i = j + 1
        else:
            parts.append(str(values[i]))
            i += 1
    return ", ".join(parts)


def call_parts(label: str) -> tuple[str, str, dict[str, int]]:
    """``(tool, its other arguments as JSON, its whole-number arguments)`` of a `call_label`; arguments that are
    not a JSON object (cut, or not a mapping) are all "other"."""
    name, _, text = label.partition(" ")
    try:
        args = json.loads(text)
    except ValueError:
        return name, text, {}
    if not isinstance(args, dict):
        return name, text, {}
    numbers = {k: v for k, v in args.items() if isinstance(v, int) and not isinstance(v, bool)}
    rest = {k: v for k, v in args.items() if k not in numbers}
    return name, json.dumps(rest, ensure_ascii=False, sort_keys=True) if rest else "", numbers


def call_groups(labels: Sequence[str]) -> list[str]:
    """One line per tool and set of other arguments, in the order first made: a call made once as it was made,
    else how many calls, and each whole-number argument's values as runs
    (``read_items ×30 with count 10, start 1-291 step 10``)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for label in labels:
        name, rest, _ = call_parts(label)
        groups.setdefault((name, rest), []).append(label)
    lines = []
    for (name, rest), made in groups.items():
        if len(made) == 1:
            lines.append(made[0])
            continue
        values: dict[str, list[int]] = {}
        for label in made:
            for key, value in call_parts(label)[2].items():
                values.setdefault(key, []).append(value)
        head = " ".join(part for part in (name, rest, f"×{len(made)}") if part)
        ranges = ", ".join(f"{key} {numbers_text(values[key])}" for key in sorted(values))
        lines.append(f"{head} with {ranges}" if ranges else head)
    return lines


def listed_calls(labels: Sequence[str], limit: int = LISTED_CHARS) -> tuple[str, str | None]:
    """``(listing, whole)``: every call of ``labels`` grouped (`call_groups`), ``"; "`` between groups; when that
    is longer than ``limit``, the first groups and a count of the rest, and the whole listing to keep."""
    lines = call_groups(labels)
    whole = "; ".join(lines) or "none"
    if len(whole) <= limit:
        return whole, None
    shown: list[str] = []
    for line in lines:
        if len("; ".join([*shown, line])) > limit // 2:
            break
        shown.append(line)
    return "; ".join([*shown, f"and {len(lines) - len(shown)} more groups of calls"]), whole


# --------------------------------------------------------------------------- the chain and its continuation


def chain_calls(task: Mapping[str, Any], tasks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The tool calls made before ``task`` in its chain of limit continuations, oldest first."""
    calls: list[str] = []
    while (continued := task.get("continued")) is not None:
        calls = [*continued.get("calls", []), *calls]
        task = tasks.get(task.get("parent_id") or "") or {}
    return calls


def continuation_spec(task: Mapping[str, Any], listing: str, own: Sequence[str], why: str) -> dict[str, Any]:
    """The follow-up that goes on with ``task``'s work after a limit stopped it: its instructions the chain's, with
    ``listing`` (every call the chain made, `listed_calls`), and ``own`` (``task``'s own calls) kept for the
    chain's next link."""
    before = task.get("continued") or {}
    instructions = before.get("instructions") or task["content"]
    content = CONTINUATION.format(instructions=instructions, parent=task["id"], why=why, calls=listing)
    return {"content": content, "continued": Continued(instructions=instructions, calls=list(own))}


def carried_window(window: Sequence[AnyMessage], why: str, task_id: str, listing: str) -> list[AnyMessage]:
    """The stopped subtask's window, then the note that opens ``task_id``'s own part of it (``listing``: every call
    of the chain, `listed_calls`)."""
    note = GOES_ON.format(why=why, id=task_id, calls=listing)
    return [*window, HumanMessage(note, id=continued_id(task_id))]


def stopped_at_limit(
    task: Mapping[str, Any],
    tasks: Mapping[str, Mapping[str, Any]],
    window: Sequence[AnyMessage],
    why: str,
    calls: int,
    config: Any,
    agent_types: Sequence[str],
) -> StateUpdate:
    """The end of a subtask a limit stopped (``why`` says which), as if its agent had handed off: when it made
    progress (its own tools read something new), what it read is its result and the rest goes on at once as a
    continuation in ``window`` (its tool outputs kept and marked so). One that made no progress fails; so does one
    whose continuation cannot be queued (a limit, or the single-agent fallback), keeping what it read as its
    partial result."""
    reads = window_reads(task, window)
    parent = tasks.get(task.get("parent_id") or "")
    before = full_result(parent) if parent is not None and is_continuation(task) else None
    known = known_reads(tasks, task["id"]) if is_follow_up(task) else ()
    if not reads or not made_progress("\n".join(r.text for r in reads), reads, parent, before, known):
        return failed_with_window(task, window, why, calls)
    message = next((m for m in reversed(own_part(task["id"], window)) if isinstance(m, AIMessage)), None)
    result = with_reads(answer_text(message) if message is not None else "", reads)
    own = [*task.get("folded_calls", []), *call_labels(own_part(task["id"], window))]
    listing, whole = listed_calls([*chain_calls(task, tasks), *own])
    if whole is not None:  # the listing shows part: the whole is kept, and it says where
        key = unique_key(CALLS_KEY, is_taken(task))
        listing += f" (every call is listed in output {output_id(task['id'], key)})"
    try:
        created = split_task(
            tasks,
            task["id"],
            [continuation_spec(task, listing, own, why)],
            agent_types=agent_types,
            max_tasks=config.max_tasks,
            max_split_depth=config.max_split_depth,
            kind="continuation",
            by="limit",
        )
    except QueueError as exc:
        hit = limit_hit(task, exc if isinstance(exc, LimitReached) else None)
        return failed_with_window(task, window, f"{why}; the rest could not be queued: {exc}", calls, **hit)
    (child_id, child), *_ = created.items()
    kept = keep_outputs(task, {key: whole}) if whole is not None else {}
    child.update(status="in_progress", started_at=time.time())
    added = event(DYNAMIC_TASKS_ADDED, parent_id=task["id"], task_ids=[child_id], source="limit", notes=[why])
    started = event(STEP_STARTED, task_id=child_id, content=child["content"], agent_type=child["agent_type"])
    update = announced([added, started], completed(task, result, calls, handed_off=[child_id]))
    update["tasks"].update(created)
    update["windows"][child_id] = carried_window(window, why, child_id, listing)
    return with_read_digests(merge_updates([kept, update]), task, window)
