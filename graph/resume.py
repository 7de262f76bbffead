"""Going on with a run that stopped between steps (a crash, a lost model server, a Temporal run that continued as
new): the input ``/resume`` sends it where the router would have, with or without any feature. A run that has
ended, or never started, has nothing to go on with: the input ends there (a feature that answers slash commands
may answer it first, and say so)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import HumanMessage

from replangraph.llm.reading import message_text

RESUME = "/resume"
"""The input that goes on with a run that stopped between steps (``replangraph resume`` sends it)."""


def unfinished(state: Mapping[str, Any]) -> bool:
    """Whether the thread has a run that has not ended: work waiting and no final answer yet."""
    tasks = state.get("tasks") or {}
    waiting = any(task["status"] in ("pending", "in_progress") for task in tasks.values())
    return waiting and not state.get("final_answer")


def resume_asked(state: Mapping[str, Any]) -> bool:
    """Whether the thread's latest message is the user's ``/resume``."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return isinstance(last, HumanMessage) and message_text(last).strip().casefold() == RESUME
