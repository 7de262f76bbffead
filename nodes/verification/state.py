"""The completion check's state key and task field."""

from __future__ import annotations

from typing import Any

from typing_extensions import NotRequired, TypedDict


class TaskVerdict(TypedDict):
    """What the completion check said of a result."""

    complete: bool
    reason: str
    remaining_tasks: list[str]
    """Work the check found missing (queued as follow-ups when there was room)."""
    follow_up_ids: list[str]
    error: str | None
    """Why the check could not judge (the result then stands), or why follow-ups were not queued."""
    sent_back: NotRequired[bool]
    """The verdict went back into the subtask's own conversation (`SENT_BACK`) instead of queueing follow-ups:
    its agent had made no tool call yet."""
    stood_down: NotRequired[str]
    """Why the check let an incomplete verdict stand without follow-ups: what it asked for repeats work queued,
    running or done, or its earlier follow-up added nothing."""
    notes: NotRequired[list[str]]
    """Missing work it named that was not queued, and why (a repeat)."""


def verdict_record(
    complete: bool, reason: str = "", remaining: list[str] | None = None, error: str | None = None
) -> TaskVerdict:
    """A `TaskVerdict` with every field filled in (no follow-ups yet)."""
    return TaskVerdict(
        complete=complete, reason=reason, remaining_tasks=list(remaining or []), follow_up_ids=[], error=error
    )


class VerificationState(TypedDict):
    goal_check: NotRequired[dict[str, Any]]
    """What the check of every result against the goal said, and the missing work it queued
    (`replangraph.nodes.verification.goal_check.GoalCheckRecord`)."""


class VerifiedTask(TypedDict):
    verdict: NotRequired[TaskVerdict]
    """The completion check's judgement of the subtask's result (``verify_results``)."""
