"""Human in the loop's state keys and task field."""

from __future__ import annotations

from typing import Annotated, Literal

from typing_extensions import NotRequired, TypedDict


class Clarification(TypedDict):
    """One question a subtask asked the user, and the answer."""

    question: str
    answer: str


PlanReviewStatus = Literal["not_asked", "waiting", "approved", "edited", "cancelled"]


def latest(current: object, new: object) -> object:
    """Reducer keeping the newest value: parallel branches may each write it in one step (two questions
    both answered with the cancel word), which a plain key refuses."""
    return new


def count_answers(current: int | None, new: int) -> int:
    """Reducer of ``answers``: adds each answer; 0 (a new plan) starts again."""
    return 0 if new == 0 else (current or 0) + new


class HumanState(TypedDict):
    plan_review: NotRequired[PlanReviewStatus]
    """``waiting`` while the plan waits for the user's approval (``approve_plan``), then what they
    decided (``approved``, ``edited``, ``cancelled``); ``not_asked`` without ``approve_plan``."""
    cancelled: NotRequired[Annotated[bool, latest]]
    """The user cancelled the run (the cancel word or ``/cancel``); the finalizer then reports what was done."""
    answers: NotRequired[Annotated[int, count_answers]]
    """Answers the user gave in this run: a starting subtask looks for them only when there are some."""


class AskingTask(TypedDict):
    clarifications: NotRequired[list[Clarification]]
    """The questions the subtask asked the user (``ask_user``) and their answers, in order."""
