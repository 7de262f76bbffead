"""The cost report as one `Feature`: a reply hook counts each model call's tokens by model, a run-start hook
starts a new goal from zero, and a before-answer hook adds a section to the final answer on every path to it
(a stopped run's report included), the answer's own calls counted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from replangraph.features import AnswerAddition, Answering, Build, Feature, RunStart
from replangraph.llm.replies import reply_usage
from replangraph.nodes.cost_report.state import FRESH, CostState, ModelCost
from replangraph.run_config import run_settings

UNNAMED = "(model not named)"
"""The row of replies that name no model (a scripted model, some local servers)."""


def feature(build: Build) -> Feature:
    base = build.config
    return Feature(
        "cost_report",
        after=("budget",),  # its section counts what the budget counted too, so it reads best last
        state=CostState,
        output=CostState,
        on_reply=lambda request, reply: reply_cost(request, reply, run_settings(base).report_cost),
        on_run_start=new_goal_costs,
        before_answer=cost_section,
    )


def reply_cost(request: Sequence[Any], reply: Any, on: bool) -> dict[str, dict[str, ModelCost]] | None:
    """One answered call's tokens under the model its reply names; None while the report is off."""
    if not on:
        return None
    usage = reply_usage(request, reply)
    estimated = usage.input_tokens + usage.output_tokens if usage.estimated else 0
    cost = ModelCost(
        calls=1, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, estimated_tokens=estimated
    )
    return {"model_costs": {usage.model or UNNAMED: cost}}


def new_goal_costs(start: RunStart) -> dict[str, Any] | None:
    """A new goal counts from zero; an answer or a command goes on counting."""
    return {"model_costs": {FRESH: {}}} if start.new_goal and start.settings.report_cost else None


def cost_section(answering: Answering) -> AnswerAddition | None:
    """The section: calls and tokens by model, the total first."""
    if not answering.settings.report_cost:
        return None
    return AnswerAddition(section=cost_table(answering.state.get("model_costs") or {}))


def cost_table(costs: Mapping[str, ModelCost]) -> str:
    """What the goal's model calls spent, as Markdown: a total line, then one row per model."""
    calls = sum(c["calls"] for c in costs.values())
    tokens_in = sum(c["input_tokens"] for c in costs.values())
    tokens_out = sum(c["output_tokens"] for c in costs.values())
    about = (
        " (some counted approximately: the server sent no usage)"
        if any(c["estimated_tokens"] for c in costs.values())
        else ""
    )
    lines = [
        "**Cost of this answer**",
        "",
        f"{calls:,} model call(s): {tokens_in:,} input and {tokens_out:,} output tokens{about}.",
    ]
    if costs:
        lines += ["", "| model | calls | input tokens | output tokens |", "| --- | ---: | ---: | ---: |"]
        lines += [
            f"| {model} | {c['calls']:,} | {c['input_tokens']:,} | {c['output_tokens']:,} |"
            for model, c in sorted(costs.items())
        ]
    return "\n".join(lines)
