"""Building and changing the queue: plan validation, cycles, dynamic splits. No LangGraph here."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from replangraph.llm.reading import match_name
from replangraph.queue.index import index_of
from replangraph.queue.tasks import (
    DEFAULT_AGENT,
    FollowUp,
    FollowUpKind,
    FollowUpSource,
    QueueError,
    Task,
    TaskOrigin,
    is_fallback,
    new_task,
    ordered,
    plan_id_of,
)

NO_SPLIT = "the single-agent fallback cannot hand off work (no agent runs after it): its agent does the rest itself"
"""Why a split of the single-agent fallback's subtask is refused."""


class LimitReached(QueueError):
    """A change refused by a limit (``max_tasks``, ``max_split_depth``); says what would have fit."""

    def __init__(self, message: str, *, limit: str, value: int, needed: int):
        super().__init__(message)
        self.limit, self.value, self.needed = limit, value, needed


def find_cycle(edges: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A dependency cycle as ``[a, b, ..., a]``, or None. Edges point at dependencies."""
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in edges.get(node, ()):
            if state.get(dep) == 1:
                return stack[stack.index(dep) :] + [dep]
            if dep in edges and dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in edges:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def validate_plan(
    specs: Sequence[Mapping[str, Any]],
    *,
    agent_types: Iterable[str],
    existing: Mapping[str, Task] | None = None,
    max_tasks: int | None = None,
) -> None:
    """Raise QueueError naming every problem in a list of planned tasks.

    ``specs`` are dicts with ``id``, ``content``, ``agent_type`` and ``depends_on``.
    Dependencies may point at each other or at ``existing`` tasks.
    """
    existing = existing or {}
    known_agents = set(agent_types)
    problems: list[str] = []
    if not specs:
        problems.append("the plan has no tasks")
    ids = [str(s.get("id", "")).strip() for s in specs]
    seen: set[str] = set()
    for task_id, spec in zip(ids, specs, strict=True):
        if not task_id:
            problems.append("a task has an empty id")
        elif task_id in seen:
            problems.append(f"duplicate task id {task_id!r}")
        elif task_id in existing:
            problems.append(f"task id {task_id!r} is already used")
        seen.add(task_id)
        if not str(spec.get("content", "")).strip():
            problems.append(f"task {task_id!r} has empty content")
        agent = spec.get("agent_type") or DEFAULT_AGENT
        if agent not in known_agents:
            problems.append(
                f"task {task_id!r} has unknown agent_type {agent!r} (known: {', '.join(sorted(known_agents))})"
            )
        for dep in spec.get("depends_on") or ():
            if dep == task_id:
                problems.append(f"task {task_id!r} depends on itself")
            elif dep not in ids and dep not in existing:
                problems.append(f"task {task_id!r} depends on unknown task {dep!r}")
    if max_tasks is not None and len(existing) + len(specs) > max_tasks:
        problems.append(f"the queue would hold {len(existing) + len(specs)} tasks; the limit is {max_tasks}")
    cycle = find_cycle({i: list(s.get("depends_on") or ()) for i, s in zip(ids, specs, strict=True) if i})
    if cycle:
        problems.append("dependency cycle: " + " -> ".join(cycle))
    if problems:
        raise QueueError("; ".join(problems))


def tasks_from_plan(
    specs: Sequence[Mapping[str, Any]],
    *,
    first_position: int = 0,
    origin: TaskOrigin = "planner",
    plan_id: str = "1",
) -> dict[str, Task]:
    """Pending tasks for a validated plan, queued in the plan's order. A spec's ``required_tools``
    are kept on its task when there are any."""
    tasks: dict[str, Task] = {}
    for i, spec in enumerate(specs):
        task = new_task(
            str(spec["id"]).strip(),
            str(spec["content"]).strip(),
            position=[first_position + i],
            agent_type=spec.get("agent_type") or DEFAULT_AGENT,
            depends_on=spec.get("depends_on") or (),
            origin=origin,
            plan_id=plan_id,
        )
        if spec.get("required_tools"):
            task["required_tools"] = list(spec["required_tools"])
        tasks[task["id"]] = task
    return tasks


def tool_names(profiles: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each agent type's tool names, from profiles with ``tools`` (plain functions by their ``__name__``)."""
    return {
        agent: [getattr(t, "name", None) or getattr(t, "__name__", "") for t in getattr(profile, "tools", ())]
        for agent, profile in profiles.items()
    }


def offered_tool_names(tools_by_agent: Mapping[str, Sequence[str]]) -> list[str]:
    """The tool names a planner's prompt and `Plan` schema show, each once: none with one agent type
    (the tools then choose nothing)."""
    if len(tools_by_agent) < 2:
        return []
    return list(dict.fromkeys(name for names in tools_by_agent.values() for name in names))


def plan_listing(tasks: Mapping[str, Task]) -> list[dict[str, Any]]:
    """The plan as events show it (and a user may send it back edited): ``id``, ``content``, ``agent_type``,
    ``depends_on``, and ``required_tools`` for the tasks that have some, in queue order."""
    listing = []
    for task in ordered(tasks):
        item: dict[str, Any] = {k: task[k] for k in ("id", "content", "agent_type", "depends_on")}
        if task.get("required_tools"):
            item["required_tools"] = list(task["required_tools"])
        listing.append(item)
    return listing


def next_top_position(tasks: Mapping[str, Task]) -> int:
    """The first free top-level position (new tasks go after everything else)."""
    return max((t["position"][0] for t in tasks.values()), default=-1) + 1


# --------------------------------------------------------------------------- tolerance


def coerce_agent_types(
    specs: Sequence[Mapping[str, Any]], known: Sequence[str], fallback: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Specs whose agent type is a known one: loose matches are fixed ("Browser" -> "browser"),
    unknown types become ``fallback``. Returns the specs and a note per unknown type."""
    known = list(known)
    fixed, unknown = [], {}
    for spec in specs:
        wanted = spec.get("agent_type")
        agent = match_name(wanted, known) if wanted else fallback
        if agent is None:
            unknown.setdefault(wanted, []).append(str(spec["id"]) if spec.get("id") else "")
            agent = fallback
        fixed.append({**spec, "agent_type": agent})
    notes = []
    for name, ids in unknown.items():
        named = [i for i in ids if i]
        if not named:
            who = "its tasks run"
        else:
            who = f"tasks {', '.join(named)} run" if len(named) > 1 else f"task {named[0]} runs"
        notes.append(f"agent type {name!r} does not exist (known: {', '.join(known)}); {who} as {fallback!r}")
    return fixed, notes


NAMES_SHOWN = 12
"""Known tool names a note lists before it says how many there are in all."""


def names_text(names: Collection[str]) -> str:
    """``a, b, c`` (the first `NAMES_SHOWN`, then how many in all), or ``none``."""
    shown = sorted(names)
    if len(shown) > NAMES_SHOWN:
        return f"{', '.join(shown[:NAMES_SHOWN])}, … ({len(shown)} in all)"
    return ", ".join(shown) or "none"


def coerce_required_tools(
    specs: Sequence[Mapping[str, Any]], known: Collection[str], built_in: Collection[str] = ()
) -> tuple[list[dict[str, Any]], list[str]]:
    """Specs whose ``required_tools`` are known tool names, each once: loose spellings are fixed
    (``Read-File`` -> ``read_file``), built-in tools (every agent has them) are left out, and
    unknown names are dropped with a note each. Specs without ``required_tools`` stay as they are."""
    known_names, built_in_names = sorted(known), sorted(built_in)
    fixed, notes = [], []
    for spec in specs:
        if "required_tools" not in spec:
            fixed.append(dict(spec))
            continue
        names: list[str] = []
        for wanted in spec.get("required_tools") or ():
            name = match_name(wanted, known_names)
            if name is None and match_name(wanted, built_in_names) is None:
                notes.append(f"task {spec.get('id')!r}: unknown tool {wanted!r} dropped (known: {names_text(known)})")
            elif name is not None and name not in names:
                names.append(name)
        fixed.append({**spec, "required_tools": names})
    return fixed, notes


def joined(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def agents_with(tools: Iterable[str], tools_by_agent: Mapping[str, Collection[str]]) -> list[str]:
    """The agent types that have every one of ``tools``, in their order."""
    wanted = set(tools)
    return [agent for agent, have in tools_by_agent.items() if wanted <= set(have)]


def lacking(spec: Mapping[str, Any], tools_by_agent: Mapping[str, Collection[str]]) -> list[str]:
    """The required tools the spec's agent type does not have, in the spec's order."""
    have = tools_by_agent.get(spec.get("agent_type") or DEFAULT_AGENT, ())
    return [name for name in spec.get("required_tools") or () if name not in have]


def fit_required_tools(
    specs: Sequence[Mapping[str, Any]],
    tools_by_agent: Mapping[str, Collection[str]],
    *,
    built_in: Collection[str] = (),
    fallback: str = DEFAULT_AGENT,
    reassign: bool = True,
    feature_types: Collection[str] = (),
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Required tools checked against the agent types: ``(specs, notes, problems)``.

    Names are read as in `coerce_required_tools`. With ``reassign``, a task on ``fallback`` (named,
    left out, or an unknown type) whose required tools only one agent type has all of runs as that
    type, with a note: the tools say what the task needs more clearly than a general-purpose type does
    (``feature_types``, the agent types features add, are not counted: a team has its members' tools, and
    one of them is the cheaper choice). Any other task whose agent type lacks a required tool is a problem,
    a message for the model that names the agent types that have the tools (or, when none has them all,
    which has each).
    """
    known = {name for have in tools_by_agent.values() for name in have}
    fixed, notes = coerce_required_tools(specs, known, built_in)
    problems = []
    for spec in fixed:
        missing = lacking(spec, tools_by_agent)
        if not missing:
            continue
        task_id, agent = spec.get("id"), spec.get("agent_type") or fallback
        required = spec["required_tools"]
        able = agents_with(required, tools_by_agent)
        alone = [name for name in able if name not in feature_types]
        if reassign and agent == fallback and len(alone) == 1:
            spec["agent_type"] = alone[0]
            notes.append(
                f"task {task_id!r} needs {joined(required)}: runs as {alone[0]!r}, the only agent type with "
                f"{'them all' if len(required) > 1 else 'it'}, instead of {agent!r}"
            )
            continue
        needs = f"task {task_id!r} needs {joined(missing)}, which agent type {agent!r} lacks"
        if able:
            it = f"all of {joined(required)}" if len(required) > 1 else "it"
            problems.append(f"{needs}; give it an agent type that has {it}: {', '.join(able)}")
        else:
            each = "; ".join(f"{name}: {', '.join(agents_with([name], tools_by_agent)) or 'none'}" for name in required)
            problems.append(
                f"{needs}, and no agent type has all of {joined(required)} ({each}); split it into subtasks "
                "that one agent type each can do"
            )
    return fixed, notes, problems


def _id_key(task_id: str) -> str:
    return re.sub(r"^(task|step|subtask)", "", re.sub(r"[\s#_-]+", "", task_id.lower()))


def normalize_plan(
    specs: Sequence[Mapping[str, Any]], existing: Iterable[str] = ()
) -> tuple[list[dict[str, Any]], list[str]]:
    """A model's plan with the usual slips repaired, and a note per repair.

    Ids are stripped; a dependency written another way ("task 1", "Step_1" for "1") points
    at the id it means; self-dependencies and repeated dependencies are dropped.
    """
    ids = [str(s.get("id", "")).strip() for s in specs]
    targets = [*ids, *existing]
    loose = {}
    for target in targets:
        loose.setdefault(_id_key(target), target)
    fixed, notes = [], []
    for task_id, spec in zip(ids, specs, strict=True):
        depends = []
        for dep in spec.get("depends_on") or ():
            dep = str(dep).strip()
            target = dep if dep in targets else loose.get(_id_key(dep), dep)
            if target != dep:
                notes.append(f"task {task_id!r}: dependency {dep!r} read as {target!r}")
            if target == task_id:
                notes.append(f"task {task_id!r}: dropped its dependency on itself")
            elif target not in depends:
                depends.append(target)
        fixed.append({**spec, "id": task_id, "content": str(spec.get("content") or "").strip(), "depends_on": depends})
    return fixed, notes


# --------------------------------------------------------------------------- splitting


def split_task(
    tasks: Mapping[str, Task],
    parent_id: str,
    specs: Sequence[Mapping[str, Any]],
    *,
    agent_types: Iterable[str],
    max_tasks: int,
    max_split_depth: int,
    kind: FollowUpKind = "split",
    by: FollowUpSource = "handoff",
) -> dict[str, Task]:
    """New dynamic tasks handed off by ``parent_id``; QueueError (`LimitReached` for limits)
    if the rules forbid them.

    Ids are ``{parent}_dyn_{i}``; each depends on the parent, inherits its agent type
    (unless it names another known one; see `coerce_agent_types`) and metadata, and sorts
    right after the parent and its earlier dynamic children. A ``split`` (narrower parts of the
    parent's work) sits one level deeper than the parent, and ``max_split_depth`` bounds that;
    a ``continuation`` (the rest of the parent's own work) stays at its depth: the length of a
    chain is bounded by the run's budgets and by progress, not by nesting. ``by`` records who
    queued them (`FollowUp`; a spec's own ``by`` wins). A spec's ``continued`` is kept on its task.
    """
    if parent_id not in tasks:
        raise QueueError(f"unknown task {parent_id!r}")
    if not specs:
        raise QueueError("no follow-up tasks given")
    parent = tasks[parent_id]
    if is_fallback(parent):
        raise QueueError(NO_SPLIT)
    known_agents = set(agent_types)
    deeper = kind == "split"
    depth = parent.get("depth", 0) + (1 if deeper else 0)
    if deeper and depth > max_split_depth:
        raise LimitReached(
            f"split depth limit reached: {parent_id} is at depth {depth - 1} and max_split_depth is "
            f"{max_split_depth}; finish this subtask yourself",
            limit="max_split_depth",
            value=max_split_depth,
            needed=depth,
        )
    if len(tasks) + len(specs) > max_tasks:
        room = max(max_tasks - len(tasks), 0)
        raise LimitReached(
            f"the queue holds {len(tasks)} of at most {max_tasks} tasks; {len(specs)} more do not fit "
            f"(room for {room}). Use fewer, larger follow-up tasks",
            limit="max_tasks",
            value=max_tasks,
            needed=len(tasks) + len(specs),
        )
    for i, spec in enumerate(specs):
        agent = spec.get("agent_type") or parent["agent_type"]
        if agent not in known_agents:
            raise QueueError(f"task {i} has unknown agent_type {agent!r} (known: {', '.join(sorted(known_agents))})")
    siblings = [tasks[c] for c in index_of(tasks).children.get(parent_id, ()) if c in tasks]
    first = 1 + max((t["position"][len(parent["position"])] for t in siblings), default=-1)
    created: dict[str, Task] = {}
    for offset, spec in enumerate(specs):
        index = first + offset
        task_id = f"{parent_id}_dyn_{index}"
        if task_id in tasks:
            raise QueueError(f"task id {task_id!r} is already used")
        created[task_id] = new_task(
            task_id,
            spec["content"],
            position=[*parent["position"], index],
            agent_type=spec.get("agent_type") or parent["agent_type"],
            depends_on=[parent_id],
            parent_id=parent_id,
            metadata=parent.get("metadata"),
            depth=depth,
            origin="dynamic",
            plan_id=plan_id_of(parent),
        )
        created[task_id]["follow_up"] = FollowUp(kind=kind, by=spec.get("by") or by)
        if spec.get("continued"):
            created[task_id]["continued"] = spec["continued"]
    return created


def limit_hit(task: Mapping[str, Any], limit: LimitReached | None) -> dict:
    """``{"limits_hit": {...}}`` adding what ``limit`` refused to the task's record, or {} without one."""
    if limit is None:
        return {}
    hits = dict(task.get("limits_hit") or {})
    hits[limit.limit] = max(hits.get(limit.limit, 0), limit.needed)
    return {"limits_hit": hits}
