"""Teams' task field: a team subtask's record."""

from __future__ import annotations

from typing_extensions import NotRequired, TypedDict


class TeamCandidate(TypedDict):
    """One member's run of a team subtask, as the team's record keeps it."""

    id: str
    """The member's task id (``{team task}.m1``...; the task leaves the queue at the merge)."""
    agent_type: str
    result_preview: str | None
    error: str | None
    result_key: str | None
    """Where the member's whole result is kept in the workspace."""
    output_id: str | None
    """The id ``read_output`` reads its whole (or partial) result by after the merge: ``1/candidate-m2``."""
    handoff: list[str]
    """Follow-ups it handed off or its completion check asked for (queued only when it wins)."""


class TeamRecord(TypedDict):
    """A team subtask's members and merge decision (``Task.team``)."""

    name: str
    strategy: str
    """``best``, ``vote`` or ``fusion``."""
    members: list[str]
    """The member task ids, in member order."""
    candidates: list[TeamCandidate]
    """Filled at the merge."""
    winner: str | None
    """The winning member's agent type (None: fused, or every member failed)."""
    winner_id: str | None
    reason: str
    scores: dict[str, float]
    """``vote``: total score per member id."""
    model_calls: int
    """Calls spent on the merge (the members' own are added to the task's ``model_calls``)."""


class TeamTask(TypedDict):
    team: NotRequired[TeamRecord]
    """A team subtask's members, candidates and merge decision."""
