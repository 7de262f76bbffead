"""What the judges and voters answer with: the `Pick`, `Ballot` and `Fusion` schemas and their readers.

Each is bound as a tool (`replangraph.llm.answers.bind_schema`) and asked through
`structured_steps`. A tool call's arguments are read loosely; a model that answers in text
instead is read by the prose readers of `reading` (JSON, fences, tables, choosing words).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from replangraph.llm.answers import called_arguments, reply_text
from replangraph.llm.reading import UnreadableInput
from replangraph.nodes.teams.reading import (
    MAX_SCORE,
    choice_in,
    fusion_in,
    read_choice,
    read_fusion,
    read_scores,
    scores_in,
)


class Pick(BaseModel):
    """The judge's pick: the one candidate whose result best does what the subtask asks."""

    winner: int = Field(description="The winning candidate's number.")
    reason: str = Field("", description="Why it wins, in one sentence.")


class Score(BaseModel):
    """One candidate's score."""

    candidate: int = Field(description="The candidate's number.")
    score: float = Field(
        ge=0, le=MAX_SCORE, description="0 (useless) to 10 (correct, complete, following the subtask's instructions)."
    )


class Ballot(BaseModel):
    """A voter's scores of the other agents' results."""

    scores: list[Score] = Field(description="One score for each candidate.")


class Fusion(BaseModel):
    """The judge's combination of the candidates' results."""

    result: str = Field(description="The one result that combines theirs.")


def read_pick(names: Sequence[str]) -> Callable[[Any], tuple[int, str]]:
    """The reader of a `Pick` among candidates named ``names``: ``(0-based index, reason)``."""

    def read(answer: Any) -> tuple[int, str]:
        args = called_arguments(answer, Pick.__name__)
        if args is None:
            return read_choice(reply_text(answer), names)
        found = choice_in(args, names) if isinstance(args, Mapping) else read_choice(json.dumps(args), names)
        if found is None:
            raise UnreadableInput("the Pick names no winner; give the winning candidate's number")
        return found

    return read


def read_ballot(names: Sequence[str]) -> Callable[[Any], dict[int, float]]:
    """The reader of a `Ballot` of candidates named ``names``: scores 0-10 by 0-based index."""

    def read(answer: Any) -> dict[int, float]:
        args = called_arguments(answer, Ballot.__name__)
        return read_scores(reply_text(answer), names) if args is None else scores_in(args, names)

    return read


def read_fused(answer: Any) -> str:
    """The combined result of a `Fusion` (or the text a judge wrote instead)."""
    args = called_arguments(answer, Fusion.__name__)
    if args is None:
        return read_fusion(reply_text(answer))
    fused = fusion_in(args) if isinstance(args, Mapping) else ""
    if not fused:
        raise UnreadableInput("the Fusion holds no result")
    return fused
