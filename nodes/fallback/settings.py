"""The single-agent fallback's setting."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Settings(BaseModel):
    single_agent_fallback: bool = Field(
        True,
        description="When replanning ends (max_replans used, or the replanner gives up), one agent gets the goal, "
        "the completed results and what failed, and tries to finish in one loop before the report.",
    )
