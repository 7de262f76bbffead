"""The cost report's state key: what the goal's model calls spent, by the model each reply names."""

from __future__ import annotations

from typing import Annotated

from typing_extensions import NotRequired, TypedDict

COUNTS = ("calls", "input_tokens", "output_tokens", "estimated_tokens")
FRESH = "__fresh__"
"""A write under this key starts the counts again (a new goal); it is never stored."""


class ModelCost(TypedDict):
    """One model's calls and tokens (``estimated_tokens`` of them counted approximately: no usage was sent)."""

    calls: int
    input_tokens: int
    output_tokens: int
    estimated_tokens: int


def add_costs(current: dict[str, ModelCost] | None, new: dict[str, ModelCost] | None) -> dict[str, ModelCost]:
    """Reducer of ``model_costs``: sums by model; a write holding `FRESH` starts again from its other models."""
    if new is None:
        return dict(current or {})
    start = {} if FRESH in new or not current else dict(current)
    for model, counts in new.items():
        if model == FRESH:
            continue
        before = start.get(model) or dict.fromkeys(COUNTS, 0)
        start[model] = ModelCost(**{name: before.get(name, 0) + counts.get(name, 0) for name in COUNTS})
    return start


class CostState(TypedDict):
    model_costs: NotRequired[Annotated[dict[str, ModelCost], add_costs]]
    """What the goal's model calls spent, by the model each reply names (while ``report_cost`` is on)."""
