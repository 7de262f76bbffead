"""Teams: agent types whose subtasks several agent types run, one result kept. No LangGraph here.

A team subtask starts by queueing one member task per member (``{id}.m1``, ``{id}.m2``...,
placed right after it); they run like any subtask. Once every member has ended, the merge
keeps one result: a judge's pick (``best``), the highest total of the members' scores of each
other (``vote``), or a judge's combination (``fusion``). This module holds the settings and the
pure parts: member tasks and the merge's queue changes (reading the judges: `reading`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from replangraph.nodes.teams.state import TeamRecord
from replangraph.queue.index import index_of
from replangraph.queue.plans import LimitReached
from replangraph.queue.tasks import CANDIDATE, Task, is_candidate, new_task, plan_id_of, preview, sort_key

MERGES = ("best", "vote", "fusion")
UNFINISHED = {
    "pending": "it never ran: the step budget was used up first",
    "in_progress": "it did not finish: the step budget was used up first",
}
"""Why a member that has not ended is a failed candidate (a merge only comes early when the budget is spent)."""
ENDED = ("completed", "failed", "skipped")


@dataclass(frozen=True)
class Team:
    """An agent type whose subtasks each member agent type runs; ``merge`` keeps one result.

    ``merge``: ``best`` (the judge picks one, with a reason), ``vote`` (each member's model
    scores the others' results; the highest total wins, ties in member order) or ``fusion``
    (the judge writes one result combining them). ``judge_model`` (``best``, ``fusion``): None
    for the planner's model; False for no merge call at all (``vote`` included): the first
    successful result wins. ``description`` tells the planner what the team is for. A member
    may appear more than once (best-of-n: ``["default"] * 3``).
    """

    members: Sequence[str]
    merge: str = "best"
    judge_model: Any = field(default=None, compare=False)
    description: str = ""


def check_teams(teams: Mapping[str, Team] | None, agent_types: Sequence[str]) -> dict[str, Team]:
    """The teams, checked: TypeError or ValueError for a name an agent type has, an unknown
    merge, or members that are no agent types (teams included)."""
    checked: dict[str, Team] = {}
    for name, team in (teams or {}).items():
        if not isinstance(team, Team):
            raise TypeError(f"teams[{name!r}] must be a Team, got {type(team).__name__}")
        if name in agent_types:
            raise ValueError(f"team {name!r} has the name of an agent type; give one of them another name")
        if team.merge not in MERGES:
            raise ValueError(f"team {name!r} has merge={team.merge!r}; use one of {', '.join(MERGES)}")
        if team.merge == "vote" and team.judge_model not in (None, False):
            raise ValueError(
                f"team {name!r} has merge='vote' and a judge_model: the members' own models vote, so no judge "
                "is asked; leave judge_model out (False: no vote, the first successful result wins)"
            )
        members = [team.members] if isinstance(team.members, str) else list(team.members)
        if not members:
            raise ValueError(f"team {name!r} has no members")
        for member in members:
            if member in (teams or {}):
                raise ValueError(f"team {name!r} has team {member!r} as a member; members must be agent types")
            if member not in agent_types:
                known = ", ".join(agent_types)
                raise ValueError(f"team {name!r} has unknown member {member!r} (agent types: {known})")
        checked[name] = Team(tuple(members), team.merge, team.judge_model, team.description)
    return checked


def team_description(team: Team) -> str:
    """What the planner is told a team is: its own description, then what it does."""
    how = {
        "best": "a judge keeps the best result",
        "vote": "the members score each other's results and the best scored is kept",
        "fusion": "a judge combines their results into one",
    }[team.merge]
    what = f"team of {', '.join(team.members)}: each runs the subtask, then {how}"
    return f"{team.description.rstrip('. ')}. ({what}.)" if team.description else what[0].upper() + what[1:] + "."


# --------------------------------------------------------------------------- start


def member_id(task_id: str, number: int) -> str:
    """The task id of a team subtask's ``number``-th member (from 1)."""
    return f"{task_id}.m{number}"


def start_changes(task: Task, name: str, team: Team, queue_size: int, max_tasks: int) -> dict[str, Any]:
    """The queue changes that start a team subtask: its member tasks, and the subtask in progress
    with its record. `LimitReached` when the members would pass ``max_tasks``."""
    if queue_size + len(team.members) > max_tasks:
        raise LimitReached(
            f"team {name!r} needs room for {len(team.members)} member tasks; the queue holds {queue_size} "
            f"of at most max_tasks={max_tasks}",
            limit="max_tasks",
            value=max_tasks,
            needed=queue_size + len(team.members),
        )
    members: dict[str, Any] = {}
    for number, agent_type in enumerate(team.members, 1):
        member = new_task(
            member_id(task["id"], number),
            task["content"],
            position=[*task["position"], number - 1],
            agent_type=agent_type,
            depends_on=task["depends_on"],  # completed: a member is ready at once, with the same inputs
            parent_id=task["id"],
            metadata=task.get("metadata"),
            depth=task.get("depth", 0),
            origin=CANDIDATE,
            plan_id=plan_id_of(task),
        )
        if "required_tools" in task:  # what the planner said the subtask needs
            member["required_tools"] = task["required_tools"]
        members[member["id"]] = member
    record = TeamRecord(
        name=name,
        strategy=team.merge,
        members=list(members),
        candidates=[],
        winner=None,
        winner_id=None,
        reason="",
        scores={},
        model_calls=0,
    )
    return {task["id"]: {"status": "in_progress", "team": record}, **members}


def settled(tasks: Mapping[str, Task], task: Task) -> bool:
    """Whether every member of a running team subtask has ended (or left the queue)."""
    members = (task.get("team") or {}).get("members") or []
    return all(m not in tasks or tasks[m]["status"] in ENDED for m in members)


def mergeable(tasks: Mapping[str, Task], task: Task, budget_spent: bool) -> bool:
    """Whether a running team subtask can merge: every member has ended, or the step budget is spent
    and some member completed (the others will not run: they are failed candidates)."""
    if settled(tasks, task):
        return True
    members = (task.get("team") or {}).get("members") or []
    return budget_spent and any(tasks.get(m, {}).get("status") == "completed" for m in members)


# --------------------------------------------------------------------------- candidates


@dataclass
class Candidate:
    """One member's run as the merge sees it: ``text`` is its whole result when it completed."""

    id: str
    agent_type: str
    text: str | None
    error: str | None
    result_key: str | None = None
    handoff: list[str] = field(default_factory=list)
    model_calls: int = 0
    kept: str | None = None
    """Its whole result, or the partial result a failed member kept: saved on the team subtask."""
    output_id: str | None = None
    """Where ``kept`` can be read with ``read_output`` after the merge (``{team task}/candidate-m2``)."""

    @property
    def ok(self) -> bool:
        return self.text is not None

    def record(self) -> dict[str, Any]:
        """Its `TeamCandidate` entry."""
        return {
            "id": self.id,
            "agent_type": self.agent_type,
            "result_preview": preview(self.text, 200) if self.text is not None else None,
            "error": self.error,
            "result_key": self.result_key,
            "output_id": self.output_id,
            "handoff": list(self.handoff),
        }


def candidates(
    tasks: Mapping[str, Task], task: Task, team: Team, full_result: Callable[[Task], str | None]
) -> list[Candidate]:
    """The members' runs in member order; a member that left the queue (a replan) is a failed candidate."""
    found: list[Candidate] = []
    index = index_of(tasks)
    member_ids = (task.get("team") or {}).get("members") or []
    for member_task_id, agent_type in zip(member_ids, team.members, strict=False):
        member = tasks.get(member_task_id)
        if member is None:
            found.append(Candidate(member_task_id, agent_type, None, "it left the queue before it ran (a replan)"))
            continue
        held = sorted((tasks[c] for c in index.children.get(member_task_id, ()) if c in tasks), key=sort_key)
        done = member["status"] == "completed"
        kept = full_result(member) if done or member.get("result") else None
        found.append(
            Candidate(
                member_task_id,
                member["agent_type"],
                (kept or "") if done else None,
                None if done else member.get("error") or UNFINISHED.get(member["status"], member["status"]),
                (member.get("result_ref") or {}).get("key"),
                [t["content"] for t in held],
                member.get("model_calls", 0),
                kept,
                f"{task['id']}/{candidate_key(task['id'], member_task_id)}" if kept is not None else None,
            )
        )
    return found


def candidate_key(task_id: str, member_task_id: str) -> str:
    """The key a member's result is saved under on its team subtask: ``candidate-m2``."""
    return "candidate-" + member_task_id.removeprefix(f"{task_id}.")


def vote_winner(totals: Mapping[str, float], order: Sequence[str]) -> str:
    """The id with the highest total; ties go to the earliest in ``order``."""
    return max(order, key=lambda i: (totals.get(i, 0.0), -order.index(i)))


# --------------------------------------------------------------------------- the merge's queue changes


def adopted(tasks: Mapping[str, Task], task: Task, sources: Sequence[str]) -> dict[str, Task]:
    """The held follow-ups (handed off, or found missing by the completion check) of the members in
    ``sources`` (the winner; for a fusion, every member it combined), each content once, as dynamic
    tasks of the team subtask: ``{id}_dyn_0``..., depending on it, placed right after it."""
    index = index_of(tasks)
    held: list[Task] = []
    for source in sources:
        held += sorted((tasks[c] for c in index.children.get(source, ()) if c in tasks), key=sort_key)
    unique = {" ".join(t["content"].split()).lower(): t for t in reversed(held)}  # the first of each content
    held = [t for t in held if unique[" ".join(t["content"].split()).lower()] is t]
    created: dict[str, Task] = {}
    number = 0
    for follow_up in held:
        while f"{task['id']}_dyn_{number}" in tasks:
            number += 1
        task_id = f"{task['id']}_dyn_{number}"
        created[task_id] = new_task(
            task_id,
            follow_up["content"],
            position=[*task["position"], number],
            agent_type=follow_up["agent_type"],
            depends_on=[task["id"]],
            parent_id=task["id"],
            metadata=task.get("metadata"),
            depth=task.get("depth", 0) + 1,
            origin="dynamic",
            plan_id=plan_id_of(task),
        )
        number += 1
    return created


def removals(tasks: Mapping[str, Task], task: Task) -> dict[str, None]:
    """Removal of a team subtask's member tasks and the work they held."""
    index = index_of(tasks)
    gone: dict[str, None] = {}
    for member in (task.get("team") or {}).get("members") or []:
        if is_candidate(tasks.get(member)):
            gone[member] = None
            gone.update((t, None) for t in index.subtree(member))
    return gone
