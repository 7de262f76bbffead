"""The budget's state key: what the run's model calls have spent so far."""

from __future__ import annotations

from typing import Annotated

from typing_extensions import NotRequired, TypedDict

SPEND_COUNTS = ("calls", "input_tokens", "output_tokens", "estimated_tokens", "unpriced_tokens", "cost_usd")


class Spend(TypedDict):
    """What model calls spent: replies counted, their tokens (``estimated_tokens`` of them counted approximately:
    the provider sent no usage), ``unpriced_tokens`` of models ``model_prices`` has no price for, and their cost."""

    calls: int
    input_tokens: int
    output_tokens: int
    estimated_tokens: int
    unpriced_tokens: int
    cost_usd: float
    fresh: NotRequired[bool]
    """Written by a new plan: the spend starts again from this value (never stored)."""


def add_spend(current: Spend | None, new: Spend | None) -> Spend:
    """Reducer of ``budget_spent``: sums; a ``fresh`` write starts again from itself. Two writes combined within
    one node keep the first's ``fresh``, so a new plan's own calls count toward the new run."""
    if not new:
        return current or empty_spend()
    if not current or new.get("fresh"):
        return Spend(**{name: new.get(name, 0) for name in SPEND_COUNTS})
    summed = Spend(**{name: current.get(name, 0) + new.get(name, 0) for name in SPEND_COUNTS})
    if current.get("fresh"):
        summed["fresh"] = True
    return summed


def empty_spend(fresh: bool = False) -> Spend:
    spend = Spend(**dict.fromkeys(SPEND_COUNTS, 0))
    if fresh:
        spend["fresh"] = True
    return spend


def spent_tokens(spend: Spend) -> int:
    return spend["input_tokens"] + spend["output_tokens"]


class BudgetState(TypedDict):
    budget_spent: NotRequired[Annotated[Spend, add_spend]]
    """What the run's model calls spent (while a budget is set)."""
