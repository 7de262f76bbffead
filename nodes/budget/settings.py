"""The budget's settings: tokens and dollars a run may spend on model calls, and the prices to count them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, field_validator

ModelPrice = tuple[str, float, float]
"""``(model name or prefix, USD per million input tokens, USD per million output tokens)``."""


class Settings(BaseModel):
    token_budget: int | None = Field(
        None,
        ge=1,
        description="Tokens (input and output, every model call of the run) after which the run stops with what it "
        "has; counted from each reply's usage_metadata, approximately when the provider sends none. None: no limit.",
    )
    cost_budget_usd: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="US dollars of model calls after which the run stops with what it has, priced by model_prices. "
        "None: no limit.",
    )
    model_prices: tuple[ModelPrice, ...] = Field(
        (),
        description="Prices for cost_budget_usd: {model name or prefix: (USD per million input tokens, USD per "
        "million output tokens)}; '*' prices any other model. The reply's model name is matched exactly, else by "
        "the longest prefix.",
    )

    @field_validator("model_prices", mode="before")
    @classmethod
    def prices_as_tuples(cls, value: Any) -> Any:
        """A mapping ``{name: (input, output)}`` as sorted tuples (the settings stay hashable)."""
        if isinstance(value, Mapping):
            return tuple(sorted((str(name), *prices) for name, prices in value.items()))
        return value
