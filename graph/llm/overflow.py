"""A request the provider refused as too long is asked once more, fitted to less (`refit_steps`): the window its
error names, else ``OVERFLOW_SHRINK`` of the budget."""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from replangraph.llm.errors import (
    is_context_overflow,
)

R = TypeVar("R")
logger = logging.getLogger(__name__)

OVERFLOW_SHRINK = 0.5
"""After a provider refused a request as too long, the next try aims at this share of the budget
(the compressor: of the part of the window it can shrink)."""


def overflowed(outcome: Any) -> bool:
    """Whether an outcome says the provider refused its request as too long (its ``overflow``)."""
    return bool(getattr(outcome, "overflow", False))


def outcome_error(outcome: Any) -> BaseException | str | None:
    """The error an outcome carries (a `Called`'s ``error``, a `StructuredAnswer`'s ``failure``, or the text
    of an outcome's ``error``), if any."""
    found = getattr(outcome, "failure", None) or getattr(outcome, "error", None)
    return found if isinstance(found, BaseException | str) and found else None


def refit_steps(
    fitted: Callable[[float], Generator[Any, Any, R]],
    refused: Callable[[R], bool] = overflowed,
    learn: Callable[[BaseException | str], bool] | None = None,
    error: Callable[[R], BaseException | str | None] = outcome_error,
    label: str = "model call",
) -> Generator[Any, Any, list[R]]:
    """``[first]``, the outcome of ``fitted(1.0)`` (steps, see `run_steps`: ``fitted(share)`` gives the steps of one
    try), plus one more try when the provider refused the first request as too long: ``refused(first)`` (its
    overflow error: ``error(first)``), or a context-overflow error it raised. When ``learn(error)`` took the real
    window from the error (see `overflow_sizes`), the retry fits the whole of it (``fitted(1.0)``, the budget now
    reflecting it), else ``fitted(OVERFLOW_SHRINK)``. The outcomes in order (sum their calls; the last one
    stands); other errors, and the second's, propagate.
    ``label`` names the call in the log."""

    def share(exc: BaseException | str | None) -> float:
        part = 1.0 if exc is not None and learn is not None and learn(exc) else OVERFLOW_SHRINK
        logger.info("%s refused as too long for the context window; asking at %.0f%% (%s)", label, part * 100, exc)
        return part

    try:
        first = yield from fitted(1.0)
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        return [(yield from fitted(share(exc)))]
    return [first, (yield from fitted(share(error(first))))] if refused(first) else [first]


def overflow_budget(budget: int, refused_tokens: int, fixed: int = 0) -> int:
    """A budget below what the provider refused: ``fixed`` tokens (what cannot shrink) plus
    ``OVERFLOW_SHRINK`` of the rest, never above ``budget``."""
    return min(budget, int(fixed + max(refused_tokens - fixed, 0) * OVERFLOW_SHRINK))
