"""The deadline's state key: when the goal's time runs out."""

from __future__ import annotations

from typing_extensions import NotRequired, TypedDict


class DeadlineState(TypedDict):
    deadline_at: NotRequired[float | None]
    """When the goal's time runs out, epoch seconds by the run's clock (`replangraph.clock`); None: no deadline."""
