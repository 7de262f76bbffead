"""Fitting one-shot requests (planner, replanner, verifier) to the model's window. No LangGraph here.

Every count goes through the run's `ContextMonitor`. Cut parts are shown as
excerpts whose notes say the full text is kept (these requests have no tools
to read it back).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from replangraph.context.fitting import Fitted, fit_parts
from replangraph.context.monitor import ContextMonitor
from replangraph.prompts import PLAN_RETRY

R = TypeVar("R")

RETRY_ERROR_CHARS = 2_000
"""Room kept for the error text of a plan retry."""
RETRY_PREVIOUS_CHARS = 2_000
"""Room kept for the previous answer of a plan retry (``replangraph.llm.structured.quoted`` caps it at this)."""


def schema_tools(schema: Any) -> list[dict]:
    """A structured-output schema as the tool the model is bound to, for counting."""
    return [convert_to_openai_tool(schema)]


def retry_room(monitor: ContextMonitor, retries: int) -> int:
    """Tokens a plan retry adds to the request (its error and the previous answer, at their longest);
    0 without retries."""
    if retries <= 0:
        return 0
    text = PLAN_RETRY.format(error="x" * RETRY_ERROR_CHARS, previous="x" * RETRY_PREVIOUS_CHARS)
    return monitor.tokens([HumanMessage(text)])


def fit_request(
    parts: Mapping[str, str],
    build: Callable[[Mapping[str, str]], list[AnyMessage]],
    outputs: Mapping[str, str],
    monitor: ContextMonitor,
    *,
    tools: list[dict] | None = None,
    budget: int | None = None,
) -> Fitted[list[AnyMessage]]:
    """``build(parts)`` within ``budget`` tokens (default: the monitor's), the largest cuttable part
    shown as an excerpt with a note saying it is kept under ``outputs[name]``."""
    tools = tools or []
    limit = monitor.budget if budget is None else budget
    return fit_parts(parts, build, lambda request: monitor.fits(request, tools, limit), outputs, readable=False)
