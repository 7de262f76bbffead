"""The deadline's setting: how long a goal may run, by the clock on the wall."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Settings(BaseModel):
    deadline_s: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="Seconds from when a goal is given after which the run stops with what it has (time it waits "
        "for your answers counts). Checked between steps: the step under way finishes. None: no deadline.",
    )
