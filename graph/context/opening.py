"""The window a subtask starts with, fitted to the context without cutting its instructions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage

from replangraph.config import AgentProfile
from replangraph.context.fitting import GOAL_ID, Fitted, fit_parts, result_id
from replangraph.llm.messages import message_text
from replangraph.prompts import execution_rules, subtask_text

READ_OUTPUT_MENTION = "read_output(output_id="
OPENING_SHARE = 0.5
"""Most of the request budget an opening window may take when its inputs must be cut: the rest is room to work."""


def opening_window(
    profile: AgentProfile,
    payload: Mapping[str, Any],
    batch_size: int,
    tokens: Callable[[list[AnyMessage]], int],
    budget: int,
) -> Fitted[list[AnyMessage]]:
    """The profile's prompt with the rules, then the goal, the subtask and its dependencies' results.

    When the opening is over ``budget`` tokens, the largest of the goal and the
    dependency results are shown as excerpts, whose notes say how to read the rest
    (``read_output``), until it takes at most `OPENING_SHARE` of the budget (or, when
    that cannot be reached, the whole budget). The system prompt and the subtask's own
    instructions are never cut.
    """
    task = payload["task"]
    dependencies = list(payload.get("dependencies") or [])
    parts = {GOAL_ID: payload.get("goal", "")}
    outputs = {GOAL_ID: GOAL_ID}
    for dep in dependencies:
        parts[f"dep:{dep['id']}"] = dep.get("result") or ""
        outputs[f"dep:{dep['id']}"] = result_id(dep["id"])
    system = SystemMessage(profile.prompt + "\n\n" + execution_rules(batch_size))

    def build(shown: Mapping[str, str]) -> list[AnyMessage]:
        inputs = [(d["id"], d["content"], shown[f"dep:{d['id']}"]) for d in dependencies]
        return [system, HumanMessage(subtask_text(shown[GOAL_ID], task["id"], task["content"], inputs))]

    full = build(parts)
    if tokens(full) <= budget:
        return Fitted(full)
    roomy = fit_parts(parts, build, lambda w: tokens(w) <= budget * OPENING_SHARE, outputs)
    return roomy if roomy.fits else fit_parts(parts, build, lambda w: tokens(w) <= budget, outputs)


def mentions_read_output(window: Sequence[AnyMessage]) -> bool:
    """Whether anything in the window points at kept text (so the agent needs ``read_output``)."""
    return any(READ_OUTPUT_MENTION in message_text(m) for m in window)
