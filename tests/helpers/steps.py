"""Driving work written as steps (`replangraph.llm.calls.run_steps`) from tests with plain functions: the
production path, with a plain function standing in for the steps of one model call."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

T = TypeVar("T")


def returned(value: T) -> Generator[Any, Any, T]:
    """Steps that make no call and return ``value``."""
    return value
    yield  # a generator function
