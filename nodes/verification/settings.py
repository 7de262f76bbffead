"""The completion check's setting."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Settings(BaseModel):
    verify_results: bool = Field(
        True,
        description="Check each final result against its subtask (the completion check); queue what is missing "
        "as follow-ups. On by default: an agent that stops early is the problem replangraph exists to solve.",
    )
