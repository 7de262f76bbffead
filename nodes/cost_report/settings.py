"""The cost report's setting."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Settings(BaseModel):
    report_cost: bool = Field(
        False,
        description="End the final answer (and the report of a run that stopped) with what the goal's model calls "
        "spent: calls and tokens by model, the final answer's own calls included.",
    )
