"""The queue's derived lookups (ready set, dependency and split indexes), kept up to date write by write.

The router asks "which tasks are ready, in queue order?" at every superstep.
Recomputing that from the whole queue costs O(N) or worse per step; instead the
``tasks`` reducer returns a `TaskQueue` (a plain dict of tasks) carrying a
`QueueIndex` that each write patches for the tasks it touched. A queue read back
from a checkpoint is a plain dict: `index_of` builds its index once.

Nothing here imports LangGraph. Indexes are never changed in place (a write makes
patched copies), so an older queue value keeps a correct index.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RESET = "__reset__"
"""Key that makes the queue reducers drop the old value before applying an update."""

NEW_TASK_FIELDS = ("id", "status", "position", "depends_on")
"""A write creates a task only with these; a partial write to an unknown id is ignored."""
SortKey = tuple[tuple[int, ...], str]
STRUCTURE_FIELDS = ("depends_on", "parent_id", "position")
"""Task fields the dependency and split indexes are built from."""
CANDIDATE = "team_member"
"""Origin of a candidate's task: one of several runs of its parent's work, of which one result is kept (a team
member's run of its team's subtask, see `replangraph.nodes.teams`). Its failure or replan request is only a
failed candidate, and what it hands off is held until its parent keeps a result. (The value is what 0.8.0
stored, so checkpoints from it read the same.)"""
FALLBACK = "fallback"
"""Origin of the single-agent fallback's task (see `replangraph.nodes.fallback`)."""
OFF_PLAN = frozenset({CANDIDATE, FALLBACK})
"""Origins of tasks the plan does not count: candidates (with the work they hand off) and fallbacks."""
STATUSES = ("pending", "in_progress", "completed", "failed", "skipped")


SETTLED = frozenset({"completed", "failed", "skipped"})
"""Statuses of handed-off work that no longer holds back its parent's dependents: done, or never to be done
(a replaced task leaves the queue). Its failure is the replanner's to handle, not a reason to wait forever."""


def is_candidate(task: Mapping[str, Any] | None) -> bool:
    """Whether ``task`` is a candidate's run: its failure or replan request asks nothing of the replanner."""
    return bool(task) and task.get("origin") == CANDIDATE


def in_candidate_run(tasks: Mapping[str, Mapping[str, Any]], task: Mapping[str, Any] | None) -> bool:
    """Whether ``task`` is a candidate or work a candidate handed off (held until its parent keeps a result)."""
    while task:
        if is_candidate(task):
            return True
        task = tasks.get(task.get("parent_id") or "")
    return False


def asks_replan(task: Mapping[str, Any]) -> bool:
    """Whether ``task`` waits for the replanner: it has a replan request and is no candidate."""
    return bool(task.get("replan_request")) and not is_candidate(task)


def sort_key(task: Mapping[str, Any]) -> SortKey:
    """Queue order: by position path, then id."""
    return tuple(task["position"]), task["id"]


@dataclass(slots=True, eq=False)
class QueueIndex:
    """Lookups derived from one queue value.

    ``children``: split parent → direct dynamic children; ``dependents``: task id →
    tasks that list it in ``depends_on`` (ids not in the queue included); ``outside``:
    the same less the task's own children (those do not wait for the work it hands off);
    ``ready``: sort keys of ready tasks, in queue order; ``active``: in-progress
    tasks; ``replan``: tasks with a replan request (no candidates); ``model_calls``: their sum;
    ``by_status``: sort keys of the tasks in each status, in queue order; ``off_plan``: candidates
    and fallbacks (`OFF_PLAN`).
    """

    children: dict[str, tuple[str, ...]]
    dependents: dict[str, frozenset[str]]
    outside: dict[str, frozenset[str]]
    ready: list[SortKey]
    active: dict[str, SortKey]
    replan: frozenset[str]
    model_calls: int
    by_status: dict[str, list[SortKey]]
    off_plan: frozenset[str]

    @classmethod
    def build(cls, tasks: Mapping[str, Mapping[str, Any]]) -> QueueIndex:
        """The index of ``tasks``, computed from scratch."""
        children: dict[str, list[str]] = {}
        dependents: dict[str, set[str]] = {}
        outside: dict[str, set[str]] = {}
        for task in tasks.values():
            if task.get("parent_id"):
                children.setdefault(task["parent_id"], []).append(task["id"])
            for dep in task.get("depends_on") or ():
                dependents.setdefault(dep, set()).add(task["id"])
                if dep != task.get("parent_id"):
                    outside.setdefault(dep, set()).add(task["id"])
        keys = sorted((sort_key(t), t["status"]) for t in tasks.values())
        index = cls(
            {k: tuple(v) for k, v in children.items()},
            {k: frozenset(v) for k, v in dependents.items()},
            {k: frozenset(v) for k, v in outside.items()},
            [],
            {},
            frozenset(),
            0,
            {status: [key for key, s in keys if s == status] for status in STATUSES},
            frozenset(t["id"] for t in tasks.values() if t.get("origin") in OFF_PLAN),
        )
        index.ready = sorted(sort_key(t) for t in tasks.values() if index.is_ready(tasks, t))
        index.active = {t["id"]: sort_key(t) for t in tasks.values() if t["status"] == "in_progress"}
        index.replan = frozenset(t["id"] for t in tasks.values() if asks_replan(t))
        index.model_calls = sum(t.get("model_calls", 0) for t in tasks.values())
        return index

    def counts(self) -> dict[str, int]:
        """Number of tasks in each status (every status, in `STATUSES` order)."""
        return {status: len(self.by_status.get(status, ())) for status in STATUSES}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, QueueIndex):
            return NotImplemented
        mine = {k: v for k, v in self.children.items() if v}
        theirs = {k: v for k, v in other.children.items() if v}
        return (
            {k: sorted(v) for k, v in mine.items()} == {k: sorted(v) for k, v in theirs.items()}
            and {k: v for k, v in self.dependents.items() if v} == {k: v for k, v in other.dependents.items() if v}
            and {k: v for k, v in self.outside.items() if v} == {k: v for k, v in other.outside.items() if v}
            and self.ready == other.ready
            and {k: v for k, v in self.by_status.items() if v} == {k: v for k, v in other.by_status.items() if v}
            and self.off_plan == other.off_plan
            and self.active == other.active
            and self.replan == other.replan
            and self.model_calls == other.model_calls
        )

    # ------------------------------------------------------------------ dependency semantics

    def ancestors(self, tasks: Mapping[str, Mapping[str, Any]], task_id: str) -> list[str]:
        """Parent chain of a dynamic task, nearest first."""
        chain, seen = [], {task_id}
        parent = tasks[task_id].get("parent_id") if task_id in tasks else None
        while parent and parent in tasks and parent not in seen:
            chain.append(parent)
            seen.add(parent)
            parent = tasks[parent].get("parent_id")
        return chain

    def subtree(self, task_id: str) -> list[str]:
        """Dynamic tasks split off ``task_id``, directly or through other splits (any order)."""
        found: list[str] = []
        seen = {task_id}
        frontier = [task_id]
        while frontier:
            for child in self.children.get(frontier.pop(), ()):
                if child not in seen:
                    seen.add(child)
                    found.append(child)
                    frontier.append(child)
        return found

    def handed_off(self, tasks: Mapping[str, Mapping[str, Any]], task: Mapping[str, Any]) -> list[str]:
        """Work that ``task``'s dependencies split off (it waits for that too), less its own splits
        and siblings and its direct dependencies."""
        own_ancestors = set(split_chain(tasks, task["id"]))  # a parent gone from the queue included, as in `affected`
        direct = set(task["depends_on"])
        found: dict[str, None] = {}
        for dep in task["depends_on"]:
            if dep not in own_ancestors:
                found.update((d, None) for d in self.subtree(dep) if d != task["id"] and d not in direct)
        return list(found)

    def waits_for(self, tasks: Mapping[str, Mapping[str, Any]], task: Mapping[str, Any]) -> list[str]:
        """What ``task`` waits for: its dependencies, then the work they handed off."""
        return [*dict.fromkeys(task["depends_on"]), *self.handed_off(tasks, task)]

    def is_ready(self, tasks: Mapping[str, Mapping[str, Any]], task: Mapping[str, Any]) -> bool:
        """Pending, its dependencies completed (checked first) and the work they handed off settled
        (completed, failed or skipped: see `SETTLED`). Work a candidate handed off is held until its
        parent keeps a result (never ready)."""
        if task["status"] != "pending" or is_candidate(tasks.get(task.get("parent_id") or "")):
            return False
        if not all(dep in tasks and tasks[dep]["status"] == "completed" for dep in task["depends_on"]):
            return False
        return all(tasks[dep]["status"] in SETTLED for dep in self.handed_off(tasks, task))

    # ------------------------------------------------------------------ incremental update

    def affected(self, tasks: Mapping[str, Mapping[str, Any]], touched: Iterable[str]) -> set[str]:
        """Tasks whose readiness may change when ``touched`` tasks change: themselves, the tasks that depend
        on them, and the tasks outside the work they were split from that depend on it (a split's own
        children do not wait for their siblings, so a write to one child looks at none of the others)."""
        found: set[str] = set()
        for task_id in touched:
            found.add(task_id)
            found.update(self.dependents.get(task_id, ()))
            for ancestor in split_chain(tasks, task_id):
                found.update(self.outside.get(ancestor, ()))
        return found

    def patched(
        self,
        old: Mapping[str, Mapping[str, Any]],
        new: Mapping[str, Mapping[str, Any]],
        touched: Sequence[str],
    ) -> QueueIndex:
        """The index of ``new``, which differs from ``old`` (this index's queue) only in ``touched`` tasks.
        It costs what the touched tasks and the tasks they affect cost, not the queue's length (but for
        copies of the lists the write changes)."""
        if not any(moved(old.get(task_id), new.get(task_id)) for task_id in touched):  # only counters changed
            calls = sum(new[t].get("model_calls", 0) - old[t].get("model_calls", 0) for t in touched)
            return QueueIndex(
                self.children,
                self.dependents,
                self.outside,
                self.ready,
                self.active,
                self.replan,
                self.model_calls + calls,
                self.by_status,
                self.off_plan,
            )
        index = QueueIndex(
            *rewired(self, old, new, touched),
            self.ready,
            dict(self.active),
            self.replan,
            self.model_calls,
            self.by_status,
            self.off_plan,
        )
        replan, off_plan = set(self.replan), set(self.off_plan)
        for task_id in touched:
            before, after = old.get(task_id), new.get(task_id)
            index.model_calls += (after or {}).get("model_calls", 0) - (before or {}).get("model_calls", 0)
            index.active.pop(task_id, None)
            replan.discard(task_id)
            off_plan.discard(task_id)
            if after is not None:
                if after["status"] == "in_progress":
                    index.active[task_id] = sort_key(after)
                if asks_replan(after):
                    replan.add(task_id)
                if after.get("origin") in OFF_PLAN:
                    off_plan.add(task_id)
        index.replan, index.off_plan = frozenset(replan), frozenset(off_plan)
        index.by_status = sorted_by_status(self.by_status, old, new, touched)
        ready = None  # copied on first change
        # Readiness before the change is looked up under the old sort key (a position may have changed).
        keys_before = {t: sort_key(old[t]) for t in touched if t in old}
        for task_id in index.affected(old, touched) | index.affected(new, touched):
            key_before = keys_before.get(task_id) or (sort_key(old[task_id]) if task_id in old else None)
            was = key_before is not None and _contains(self.ready, key_before)
            now = task_id in new and index.is_ready(new, new[task_id])
            key_after = sort_key(new[task_id]) if task_id in new else None
            if was == now and key_before == key_after:
                continue
            if ready is None:
                ready = list(self.ready)
            if was:
                del ready[bisect.bisect_left(ready, key_before)]
            if now:
                bisect.insort(ready, key_after)
        if ready is not None:
            index.ready = ready
        return index


INDEXED_FIELDS = ("status", "position", *STRUCTURE_FIELDS, "replan_request", "origin")
"""The task fields the index reads besides ``model_calls`` (the id aside): a write that changes none of them
leaves every lookup as it was."""


def moved(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> bool:
    """Whether a write from ``before`` to ``after`` (None: not in the queue) can change the index beyond
    ``model_calls``: the task came, went, or changed a field of `INDEXED_FIELDS`."""
    if before is None or after is None:
        return True
    return any(before.get(name) != after.get(name) for name in INDEXED_FIELDS)


def rewired(
    index: QueueIndex,
    old: Mapping[str, Mapping[str, Any]],
    new: Mapping[str, Mapping[str, Any]],
    touched: Sequence[str],
) -> tuple[dict[str, tuple[str, ...]], dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """``index``'s children, dependents and outside after ``touched`` tasks changed from ``old`` to ``new``:
    the same objects when no structure changed, else copies in which each changed entry is rebuilt once
    (a split of k children costs O(k), not O(k²))."""
    structural = [
        t
        for t in touched
        if (t in old) != (t in new) or (t in new and any(old[t].get(f) != new[t].get(f) for f in STRUCTURE_FIELDS))
    ]
    if not structural:
        return index.children, index.dependents, index.outside
    changes: dict[str, dict[str, tuple[set[str], set[str]]]] = {"dependents": {}, "outside": {}}
    left: dict[str, set[str]] = {}  # parent -> children leaving it
    joined: dict[str, list[str]] = {}  # parent -> children joining it, in write order
    for task_id in structural:
        before, after = old.get(task_id) or {}, new.get(task_id) or {}
        for name, entries in changes.items():
            was, now = links(before, name == "outside"), links(after, name == "outside")
            for dep in was - now:
                entries.setdefault(dep, (set(), set()))[1].add(task_id)
            for dep in now - was:
                entries.setdefault(dep, (set(), set()))[0].add(task_id)
        old_parent, new_parent = before.get("parent_id"), after.get("parent_id")
        if old_parent and (old_parent != new_parent or task_id not in new):
            left.setdefault(old_parent, set()).add(task_id)
        if new_parent and (new_parent != old_parent or task_id not in old):
            joined.setdefault(new_parent, []).append(task_id)
    children = dict(index.children)
    for parent in left.keys() | joined.keys():
        kept = [c for c in children.get(parent, ()) if c not in left.get(parent, ())]
        children[parent] = (*kept, *joined.get(parent, ()))
    maps = {"dependents": dict(index.dependents), "outside": dict(index.outside)}
    for name, entries in changes.items():
        for dep, (added, dropped) in entries.items():
            maps[name][dep] = (maps[name].get(dep, frozenset()) - dropped) | added
    return children, maps["dependents"], maps["outside"]


def sorted_by_status(
    by_status: dict[str, list[SortKey]],
    old: Mapping[str, Mapping[str, Any]],
    new: Mapping[str, Mapping[str, Any]],
    touched: Sequence[str],
) -> dict[str, list[SortKey]]:
    """``by_status`` after ``touched`` tasks changed from ``old`` to ``new``: only the lists of the statuses
    they leave or enter are copied (the old index keeps its own)."""
    result, copied = dict(by_status), set()
    for task_id in touched:
        placed = [(t["status"], sort_key(t)) for t in (old.get(task_id), new.get(task_id)) if t is not None]
        if len(placed) == 2 and placed[0] == placed[1]:
            continue
        for status in {status for status, _ in placed} - copied:
            result[status] = list(result.get(status, ()))
            copied.add(status)
        # Tolerant of a task changed in place (outside any write), whose old place the index never saw.
        if task_id in old and _contains(result[placed[0][0]], placed[0][1]):
            del result[placed[0][0]][bisect.bisect_left(result[placed[0][0]], placed[0][1])]
        if task_id in new and not _contains(result[placed[-1][0]], placed[-1][1]):
            bisect.insort(result[placed[-1][0]], placed[-1][1])
    return result


def links(task: Mapping[str, Any], outside_only: bool) -> set[str]:
    """The ids ``task`` depends on; ``outside_only``: less its split parent."""
    deps = set(task.get("depends_on") or ())
    return deps - {task.get("parent_id")} if outside_only else deps


def split_chain(tasks: Mapping[str, Mapping[str, Any]], task_id: str) -> list[str]:
    """Parent ids above a task, nearest first, ending at a parent that is not in the queue (if any)."""
    chain, seen = [], {task_id}
    parent = tasks[task_id].get("parent_id") if task_id in tasks else None
    while parent and parent not in seen:
        chain.append(parent)
        seen.add(parent)
        parent = tasks[parent].get("parent_id") if parent in tasks else None
    return chain


def _contains(keys: Sequence[SortKey], key: SortKey) -> bool:
    at = bisect.bisect_left(keys, key)
    return at < len(keys) and keys[at] == key


class TaskQueue(dict):
    """The queue as the graph stores it: ``{task_id: Task}``, plus the index of the value it holds."""

    __slots__ = ("index",)

    def __init__(self, tasks: Mapping[str, Any] = (), index: QueueIndex | None = None):
        super().__init__(tasks)
        self.index = index if index is not None else QueueIndex.build(self)

    def __copy__(self) -> TaskQueue:
        return TaskQueue(self, self.index)

    def __reduce__(self):  # pickles as the plain dict it is; the index is rebuilt on demand
        return (dict, (dict(self),))


def index_of(tasks: Mapping[str, Mapping[str, Any]]) -> QueueIndex:
    """The index of a queue: carried by a `TaskQueue`, else built (once per call)."""
    index = getattr(tasks, "index", None)
    return index if isinstance(index, QueueIndex) else QueueIndex.build(tasks)


def apply_writes(current: Mapping[str, Any] | None, writes: Sequence[Mapping[str, Any] | None]) -> TaskQueue:
    """Reducer of the ``tasks`` channel over a batch of writes, applied in order.

    ``{id: {...fields}}`` creates or updates a task field by field, ``{id: None}``
    removes it, and ``{RESET: True, ...}`` starts from an empty queue. Applying two
    batches one after the other gives the same queue as applying them as one
    (LangGraph's ``DeltaChannel`` replays checkpointed writes in any grouping).
    """
    queue = current if isinstance(current, TaskQueue) else TaskQueue(current or {})
    for update in writes:
        if not update:
            continue
        merged = TaskQueue({} if update.get(RESET) else queue, queue.index)  # the one copy; its index set below
        touched = []
        for key, value in update.items():
            if key == RESET:
                continue
            if value is None:
                if merged.pop(key, None) is not None:
                    touched.append(key)
            elif key in merged:
                merged[key] = {**merged[key], **value}
                touched.append(key)
            elif all(field in value for field in NEW_TASK_FIELDS):
                merged[key] = value
                touched.append(key)
            # else: fields for a task that is not in the queue (removed in the same step): nothing to update
        if update.get(RESET):
            merged.index = QueueIndex.build(merged)
        else:
            merged.index = queue.index.patched(queue, merged, list(dict.fromkeys(touched)))
        queue = merged
    return queue
