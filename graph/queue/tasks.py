"""The subtask queue: pure functions over ``{task_id: Task}`` dicts.

Nothing here imports LangGraph. The graph stores the queue as a dict keyed by
task id (so concurrent writers merge by id); queue order comes from each
task's ``position`` path, which lets dynamic subtasks slot in right after their
parent without renumbering anything.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from typing_extensions import NotRequired, TypedDict

from replangraph.queue.index import (
    CANDIDATE,
    FALLBACK,
    RESET,
    STATUSES,
    TaskQueue,
    apply_writes,
    in_candidate_run,
    index_of,
    is_candidate,
    sort_key,
)

# re-exported: the queue's reducer and its index, and what marks a candidate's task
__all__ = [
    "RESET",
    "CANDIDATE",
    "FALLBACK",
    "STATUSES",
    "TaskQueue",
    "apply_writes",
    "in_candidate_run",
    "index_of",
    "is_candidate",
]

TaskStatus = Literal["pending", "in_progress", "completed", "failed", "skipped"]
TaskOrigin = Literal["planner", "dynamic", "replanner", "team_member", "fallback", "check"]
ReplanTrigger = Literal["marker", "tool", "failure", "check"]

# FALLBACK: the origin of the single-agent fallback's task, and its id when no task of the plan has taken that id.
DEFAULT_AGENT = "default"

STATUS_MARKS = {"completed": "X", "in_progress": ">", "pending": " ", "failed": "!", "skipped": "-"}


FollowUpKind = Literal["continuation", "split"]
FollowUpSource = Literal["handoff", "check", "limit", "coverage", "goal"]


class FollowUp(TypedDict):
    """How a dynamic task came to be."""

    kind: FollowUpKind
    """``continuation``: the rest of its parent's own work, at its parent's depth; ``split``: a narrower part of
    the parent's work, one level deeper (``max_split_depth`` bounds that nesting)."""
    by: FollowUpSource
    """Who queued it: its parent's agent (``handoff``), the completion check (``check``), a limit that stopped its
    parent (``limit``: ``max_step_iterations``, ``step_timeout_s``), a gap in a hand-off's follow-ups
    (``coverage``), the check of the goal against every result (``goal``)."""


class Continued(TypedDict):
    """What a continuation queued by a limit keeps of the work before it (its instructions repeat the chain's)."""

    instructions: str
    """The instructions of the first subtask of the chain."""
    calls: list[str]
    """The tool calls its parent made itself (``name {args}``), oldest first: the chain's are those of each
    continuation of the chain in turn (`replangraph.nodes.execution.continuing.chain_calls`)."""


class ReplanRequest(TypedDict):
    """Why a subtask wants the rest of the plan reconsidered."""

    trigger: ReplanTrigger
    reason: str


class Task(TypedDict):
    """One subtask. Stored in state as ``tasks[id]``; features add fields of their own
    (`replangraph.features.Feature.task_fields`)."""

    id: str
    plan_id: NotRequired[str]
    """The plan that queued it: ``1`` for the planner's, ``2``... for each replan (splits keep their parent's)."""
    content: str
    agent_type: str
    depends_on: list[str]
    required_tools: NotRequired[list[str]]
    """Names of the tools the planner said this subtask needs (known ones only); absent when none."""
    status: TaskStatus
    result: str | None
    error: str | None
    parent_id: str | None
    metadata: dict[str, Any]
    position: list[int]
    """Queue order: tasks sort by this path (a child extends its parent's path)."""
    depth: int
    """Split depth: 0 for planned tasks, parent depth + 1 for dynamic ones."""
    origin: TaskOrigin
    model_calls: int
    """Model calls spent on this subtask (counts against ``max_steps``)."""
    started_at: float | None
    """Wall-clock time (epoch seconds) of the subtask's first turn (information; see ``elapsed_s``)."""
    elapsed_s: NotRequired[float]
    """Seconds spent in this subtask's own model and tool calls (what ``step_timeout_s`` limits)."""
    answer_cut: NotRequired[bool]
    """The result stopped at the model's output limit (``max_output_tokens``); a note at its end says so."""
    replan_request: ReplanRequest | None
    """Set when this subtask asks for, or needs, a replan; cleared once handled."""
    result_ref: NotRequired[dict[str, Any] | None]
    """Where the whole result is kept in the workspace: ``key``, ``version`` (one per run of the
    subtask), ``chars``. ``result`` holds it whole up to 2,000 characters, else an excerpt."""
    context_overflow: NotRequired[dict[str, Any] | None]
    """Set when the provider refused the window as too long: ``tokens`` (our count), ``compressed``,
    ``error``; cleared by the next answered call."""
    limits_hit: NotRequired[dict[str, int]]
    """Limits that refused a split of this subtask, with the value that would have let it through."""
    follow_up: NotRequired[FollowUp]
    """How a dynamic task came to be: a continuation or a split, and who queued it."""
    continued: NotRequired[Continued]
    """A continuation queued by a limit: the chain's instructions and the tool calls made so far."""
    limit_reached: NotRequired[str | None]
    """A limit stopped the subtask between two steps (say which); the tools node ends it (`stopped_at_limit`)."""
    progress: NotRequired[bool]
    """Whether its result holds data its parent's result does not (follow-ups only): a chain that stops adding
    data is stopped."""
    builds_on: NotRequired[list[str]]
    """Stopped subtasks whose partial results it gets with its inputs (the tasks of a replan, the single-agent
    fallback): it goes on from what they found, not from scratch."""
    read_digests: NotRequired[list[str]]
    """Digests of what its agent's own tools returned, call by call: a follow-up whose calls returned something
    new made progress even when its words read like its parent's."""
    chain_stopped: NotRequired[str]
    """Why its hand-off queued nothing: a continuation that found nothing its parent had not stops its chain."""
    folded_calls: NotRequired[list[str]]
    """The tool calls of its own (``name {args}``) that a compression folded out of its window, oldest first: a
    continuation a limit queues lists them with the rest."""


class QueueError(ValueError):
    """A queue change that would break the queue's rules; the queue is left as it was."""


def new_task(
    task_id: str,
    content: str,
    *,
    position: Sequence[int],
    agent_type: str = DEFAULT_AGENT,
    depends_on: Iterable[str] = (),
    parent_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    depth: int = 0,
    origin: TaskOrigin = "planner",
    plan_id: str = "1",
) -> Task:
    """A pending task with every field filled in."""
    return Task(
        plan_id=plan_id,
        id=task_id,
        content=content,
        agent_type=agent_type,
        depends_on=list(depends_on),
        status="pending",
        result=None,
        error=None,
        parent_id=parent_id,
        metadata=dict(metadata or {}),
        position=list(position),
        depth=depth,
        origin=origin,
        model_calls=0,
        started_at=None,
        replan_request=None,
    )


# --------------------------------------------------------------------------- reducers


# --------------------------------------------------------------------------- order and lookup


def ordered(tasks: Mapping[str, Task]) -> list[Task]:
    """All tasks in queue order."""
    return sorted(tasks.values(), key=sort_key)


def ancestors(tasks: Mapping[str, Task], task_id: str) -> list[str]:
    """Parent chain of a dynamic task, nearest first."""
    return index_of(tasks).ancestors(tasks, task_id)


def effective_dependencies(tasks: Mapping[str, Task], task: Task) -> list[str]:
    """What ``task`` waits for: its dependencies plus the work they handed off.

    A task that depends on ``1`` also waits for ``1_dyn_0``... because ``1`` handed
    part of its job to them, until they complete, fail or are skipped (a failure is the
    replanner's to handle). A dynamic task does not wait for its own siblings.
    """
    handed_off = index_of(tasks).handed_off(tasks, task)
    return [*dict.fromkeys(task["depends_on"]), *sorted(handed_off, key=lambda t: sort_key(tasks[t]))]


def is_ready(tasks: Mapping[str, Task], task: Task) -> bool:
    """Pending, its dependencies completed and the work they handed off settled (completed, failed or skipped)."""
    return index_of(tasks).is_ready(tasks, task)


def ready_tasks(tasks: Mapping[str, Task], limit: int | None = None) -> list[Task]:
    """Ready tasks in queue order (the first ``limit`` of them)."""
    keys = index_of(tasks).ready
    return [tasks[task_id] for _, task_id in (keys if limit is None else keys[:limit])]


def startable_tasks(tasks: Mapping[str, Task], limit: int) -> list[Task]:
    """The first ``limit`` ready tasks in queue order, where a follow-up (`is_follow_up`) whose instructions, for
    the same agent type, are word for word those of a running follow-up, or of one before it here, waits.
    Identical instructions ("the next 5 products") differ only by what was done before them, so they run one
    after another, each seeing the results of the one before. A plan's tasks run as planned, and so do a
    team's members (several runs of one subtask, side by side on purpose)."""
    index = index_of(tasks)
    busy = {same_work(tasks[t]) for t in index.active if in_turn(tasks[t])}
    found: list[Task] = []
    for _, task_id in index.ready:
        if len(found) >= limit:
            break
        task = tasks[task_id]
        if in_turn(task):
            if same_work(task) in busy:
                continue
            busy.add(same_work(task))
        found.append(task)
    return found


def in_turn(task: Mapping[str, Any]) -> bool:
    """Whether ``task`` waits its turn behind identical work (`startable_tasks`): a follow-up, not a candidate."""
    return is_follow_up(task) and not is_candidate(task)


def same_work(task: Mapping[str, Any]) -> tuple[str, str]:
    """What makes two follow-ups the same words for the same agent: its agent type and its instructions."""
    return task.get("agent_type") or DEFAULT_AGENT, task["content"]


def active_tasks(tasks: Mapping[str, Task]) -> list[Task]:
    """Tasks in progress, in queue order."""
    return [tasks[task_id] for task_id in sorted(index_of(tasks).active, key=lambda t: sort_key(tasks[t]))]


def replan_requested(tasks: Mapping[str, Task]) -> list[Task]:
    """Tasks that ask for a replan, in queue order."""
    return sorted((tasks[task_id] for task_id in index_of(tasks).replan), key=sort_key)


def dependency_results(tasks: Mapping[str, Task], task: Task) -> list[Task]:
    """Completed tasks this one waits for, in queue order (their results feed its prompt)."""
    waits = index_of(tasks).waits_for(tasks, task)
    return sorted((tasks[t] for t in waits if t in tasks and tasks[t]["status"] == "completed"), key=sort_key)


def status_counts(tasks: Mapping[str, Task]) -> dict[str, int]:
    """Number of tasks in each status."""
    return index_of(tasks).counts()


def total_model_calls(tasks: Mapping[str, Task]) -> int:
    """Model calls spent by all subtasks."""
    return index_of(tasks).model_calls


def plan_id_of(task: Mapping[str, Any]) -> str:
    """The plan a task belongs to: its ``plan_id``, ``1`` for a task written before plans had ids. Every reader
    of a plan's identity reads it here."""
    return str(task.get("plan_id") or "1")


def plan_numbers(tasks: Mapping[str, Mapping[str, Any]]) -> list[int]:
    """The plans of the queue's tasks, as numbers (ids that are no number left out)."""
    return [int(p) for t in tasks.values() if (p := plan_id_of(t)).isdigit()]


def latest_plan(tasks: Mapping[str, Mapping[str, Any]]) -> str:
    """The queue's latest plan (``1`` for an empty queue)."""
    return str(max(plan_numbers(tasks), default=1))


def first_plan(tasks: Mapping[str, Mapping[str, Any]]) -> str:
    """The queue's first plan, its lowest id (``1`` for an empty queue)."""
    return str(min(plan_numbers(tasks), default=1))


def next_plan_id(tasks: Mapping[str, Task]) -> str:
    """The id of the next plan on this thread: one more than any plan of the queue (``1`` for a new one).

    A new goal on the same thread starts a fresh queue but keeps the workspace, so its
    plan ids go on counting and its keys never meet the earlier goal's.
    """
    return str(max(plan_numbers(tasks), default=0) + 1)


def spent_model_calls(state: Mapping[str, Any]) -> int:
    """Model calls of a run so far that ``max_steps`` limits: the subtasks' (executor, completion check), the
    replanner's and those of nodes that work on no one subtask (``node_calls``: the goal check)."""
    replans = state.get("replans") or []
    others = sum((state.get("node_calls") or {}).values())
    return total_model_calls(state.get("tasks") or {}) + sum(r.get("model_calls", 0) for r in replans) + others


def is_follow_up(task: Mapping | None) -> bool:
    """Whether ``task`` is work queued after the plan, on what earlier work left: a hand-off's, a check's or a
    limit's follow-up (it has a parent), or missing work the goal check queued. The progress rule applies to it."""
    return bool(task) and (bool(task.get("parent_id")) or task.get("origin") == "check")


def queued_by_check(task: Mapping | None) -> bool:
    """Whether a completion check or the goal check queued ``task``."""
    return bool(task) and ((task.get("follow_up") or {}).get("by") == "check" or task.get("origin") == "check")


def is_continuation(task: Mapping | None) -> bool:
    """Whether ``task`` goes on with its parent's own work (a `FollowUp` of kind ``continuation``)."""
    return bool(task) and (task.get("follow_up") or {}).get("kind") == "continuation"


def is_fallback(task: Mapping | None) -> bool:
    """Whether ``task`` is the single-agent fallback's."""
    return bool(task) and task.get("origin") == FALLBACK


def fallback_of(tasks: Mapping[str, Task]) -> Task | None:
    """The run's fallback task, if one was queued (the first in queue order)."""
    fallbacks = (tasks[t] for t in index_of(tasks).off_plan if is_fallback(tasks[t]))
    return min(fallbacks, key=sort_key, default=None)


def off_plan_ids(tasks: Mapping[str, Task]) -> set[str]:
    """Tasks that are not the plan's: fallbacks, a team's members and the work they hold (the team's
    task stands for them); found from the index, at the cost of their number, not the queue's."""
    index = index_of(tasks)
    found = set(index.off_plan)
    for task_id in index.off_plan:
        if is_candidate(tasks[task_id]):
            found.update(index.subtree(task_id))
    return found


def plan_tasks(tasks: Mapping[str, Task]) -> list[Task]:
    """The plan's tasks in queue order: not the fallback, nor a team's members or the work they hold
    (the team's task stands for them, and takes over the winner's held work at the merge)."""
    aside = off_plan_ids(tasks)
    return [t for t in ordered(tasks) if t["id"] not in aside]


# --------------------------------------------------------------------------- failure


def skip_dependents(tasks: Mapping[str, Task], failed_id: str) -> dict[str, dict]:
    """Updates that mark every pending task waiting on ``failed_id`` as skipped, transitively."""
    index = index_of(tasks)
    reach, frontier = set(), [failed_id]
    while frontier:  # everything that may wait on the failed task, through dependencies and splits
        for task_id in index.affected(tasks, [frontier.pop()]) - reach:
            reach.add(task_id)
            frontier.append(task_id)
    candidates = sorted((tasks[t] for t in reach if t in tasks), key=sort_key)
    blocked = {failed_id}
    updates: dict[str, dict] = {}
    changed = True
    while changed:
        changed = False
        for task in candidates:
            if task["status"] != "pending" or task["id"] in updates:
                continue
            hit = blocked.intersection(effective_dependencies(tasks, task))
            if hit:
                cause = sorted(hit)[0]
                updates[task["id"]] = {"status": "skipped", "error": f"dependency {cause} did not complete"}
                blocked.add(task["id"])
                changed = True
    return updates


# --------------------------------------------------------------------------- rendering


def preview(text: str | None, limit: int = 80) -> str:
    """One-line preview of ``text``, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def task_line(task: Task, preview_chars: int = 80) -> str:
    """``[X] id: content (Result: …)`` for one task."""
    line = f"[{STATUS_MARKS[task['status']]}] {task['id']}: {preview(task['content'], 200)}"
    if task["status"] == "completed" and task.get("result"):
        line += f" (Result: {preview(task['result'], preview_chars)})"
    elif task["status"] in ("failed", "skipped") and task.get("error"):
        line += f" (Error: {preview(task['error'], preview_chars)})"
    return line


def plan_summary(tasks: Mapping[str, Task], preview_chars: int = 80) -> str:
    """The plan, one line per task in queue order."""
    return "\n".join(task_line(t, preview_chars) for t in ordered(tasks))


PLAN_MESSAGE_TASKS = 12
"""The most tasks the plan message lists: it is rewritten as the run goes, and each checkpoint holds it
whole, so its size stays bounded however long the queue grows (checkpoint bytes grow with the work;
the engine benchmark's subtasks cost 9 % more bytes with it)."""
SHOWN_FIRST = {"in_progress": 0, "pending": 1, "failed": 2, "skipped": 2, "completed": 3}
"""Which tasks a long plan message lists first: running ones, then those to come, then the rest."""


def plan_item(tasks: Mapping[str, Task], task: Task, solo: bool, asking: Mapping[str, str] | None) -> str:
    """One task-list item of the plan message: checked when done, handed-off work nested under its task,
    with what it is doing (working, waiting for the answer to its question in ``asking``, failed or
    skipped and why); ``solo``: the single-agent fallback."""
    what = "one agent finishing the goal alone (the single-agent fallback)" if solo else task["content"]
    indent = "  " * (0 if solo else len(ancestors(tasks, task["id"])))
    line = f"{indent}- [{'x' if task['status'] == 'completed' else ' '}] {task['id']}: {preview(what, 120)}"
    running = task["status"] == "in_progress"
    question = asking.get(task["id"]) if running and asking is not None else None  # read only when shown
    if question is not None:
        line += f" — *waiting for your answer:* {preview(question, 200)}"
    elif running:
        line += " — *working*"
    elif task["status"] in ("failed", "skipped"):
        line += f" — *{task['status']}*" + (f": {preview(task['error'], 120)}" if task.get("error") else "")
    return line


def plan_markdown(tasks: Mapping[str, Task], asking: Mapping[str, str] | None = None) -> str:
    """The plan as Markdown for a chat: how many tasks are done, then one task-list item per task (checked
    when done; handed-off work nested under its task) with what it is doing: working, waiting for the
    user's answer to the question in ``asking`` (by task id), failed or skipped and why. A queue longer
    than `PLAN_MESSAGE_TASKS` lists that many, running and coming ones first, and counts the rest.
    It reads the queue's index, so its cost grows with the tasks it lists, not with the queue."""
    solo = fallback_of(tasks)
    aside = off_plan_ids(tasks)
    counts = status_counts(tasks)  # the plan's: less what is aside
    for task_id in aside:
        counts[tasks[task_id]["status"]] -= 1
    lines = [f"**Plan**: {counts['completed']} of {sum(counts.values())} done", ""]
    if solo is not None:
        counts[solo["status"]] += 1  # listed (and counted in the rest) after the plan's tasks
    picked = shown_first(tasks, aside, solo)
    for task in picked:
        lines.append(plan_item(tasks, task, task is solo, asking))
        counts[task["status"]] -= 1
    if sum(counts.values()):
        left = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items() if n)
        lines.append(f"- *… and {sum(counts.values())} more ({left})*")
    return "\n".join(lines)


def shown_first(tasks: Mapping[str, Task], aside: set[str], solo: Task | None) -> list[Task]:
    """The tasks the plan message lists (at most `PLAN_MESSAGE_TASKS`), in queue order with the fallback
    last: running ones first, then pending, failed or skipped, completed (`SHOWN_FIRST`); within each,
    the plan's in queue order, then the fallback."""
    index = index_of(tasks)
    groups: dict[int, list[str]] = {}
    for status, rank in SHOWN_FIRST.items():
        groups.setdefault(rank, []).append(status)
    picked: list[Task] = []
    for rank in sorted(groups):
        for _, task_id in heapq.merge(*(index.by_status.get(status, ()) for status in groups[rank])):
            if len(picked) == PLAN_MESSAGE_TASKS:
                break
            if task_id not in aside:
                picked.append(tasks[task_id])
        if solo is not None and SHOWN_FIRST[solo["status"]] == rank and len(picked) < PLAN_MESSAGE_TASKS:
            picked.append(solo)
    return sorted((t for t in picked if t is not solo), key=sort_key) + [t for t in picked if t is solo]
