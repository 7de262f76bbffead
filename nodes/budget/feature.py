"""The budget as one `Feature`: every model reply's tokens and cost are counted into ``budget_spent``; once
``token_budget`` or ``cost_budget_usd`` is spent, the router sends the run to the finalizer, whose report
names the budget. The check stands before each step the router dispatches, so the calls of one step (parallel
subtasks, a staged final answer) may go past the budget by what they spend; no later step starts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from replangraph.config import AgentConfig
from replangraph.events import event
from replangraph.features import Build, Feature, RunStart, Stop
from replangraph.llm.replies import reply_usage
from replangraph.names import FINALIZE
from replangraph.nodes.budget.names import BUDGET_SPENT
from replangraph.nodes.budget.state import BudgetState, Spend, empty_spend, spent_tokens
from replangraph.routing import Rule
from replangraph.run_config import run_settings


def feature(build: Build) -> Feature:
    base = build.config
    return Feature(
        "budget",
        rules=[
            Rule(
                "budget_spent",
                "budget",
                lambda route: FINALIZE if overspent(route.state, route.settings) else None,
                "stop",
            )
        ],
        state=BudgetState,
        output=BudgetState,
        on_reply=lambda request, reply: reply_spend(request, reply, run_settings(base)),
        on_run_start=new_goal_spend,
        stop=budget_stop,
    )


def new_goal_spend(start: RunStart) -> dict[str, Spend] | None:
    """A new goal spends from zero (its planner's calls count toward it); an answer, a command or a run going on
    keeps what was spent."""
    return {"budget_spent": empty_spend(fresh=True)} if start.new_goal and has_budget(start.settings) else None


def has_budget(settings: AgentConfig) -> bool:
    return settings.token_budget is not None or settings.cost_budget_usd is not None


def reply_spend(request: Sequence[Any], reply: Any, settings: AgentConfig) -> dict[str, Spend] | None:
    """What one answered call spent (`reply_usage`: the reply's ``usage_metadata``, else an approximate count),
    priced by ``model_prices``. None without a budget (nothing is counted then)."""
    if not has_budget(settings):
        return None
    usage = reply_usage(request, reply)
    spend = empty_spend()
    spend["calls"] = 1
    spend["input_tokens"], spend["output_tokens"] = usage.input_tokens, usage.output_tokens
    if usage.estimated:
        spend["estimated_tokens"] = usage.input_tokens + usage.output_tokens
    price = price_of(usage.model, settings.model_prices)
    if price is None:
        spend["unpriced_tokens"] = spent_tokens(spend)
    else:
        spend["cost_usd"] = (spend["input_tokens"] * price[0] + spend["output_tokens"] * price[1]) / 1_000_000
    return {"budget_spent": spend}


def price_of(name: str, prices: Sequence[tuple[str, float, float]]) -> tuple[float, float] | None:
    """``(input, output)`` USD per million tokens for ``name``: its own entry, else the longest prefix of it,
    else ``*``; None when nothing prices it."""
    table = {entry[0]: (entry[1], entry[2]) for entry in prices}
    if name in table:
        return table[name]
    prefixes = [key for key in table if key != "*" and name.startswith(key)]
    if prefixes:
        return table[max(prefixes, key=len)]
    return table.get("*")


def overspent(state: Mapping[str, Any], settings: AgentConfig) -> str | None:
    """Which budget the run has spent (its setting and what was spent), or None."""
    spend = state.get("budget_spent")
    if not spend or not has_budget(settings):
        return None
    tokens = spent_tokens(spend)
    if settings.token_budget is not None and tokens >= settings.token_budget:
        about = " (some counted approximately)" if spend.get("estimated_tokens") else ""
        return f"the token budget token_budget={settings.token_budget:,} was spent ({tokens:,} tokens{about})"
    if settings.cost_budget_usd is not None and spend["cost_usd"] >= settings.cost_budget_usd:
        return f"the cost budget cost_budget_usd={settings.cost_budget_usd:g} was spent (${spend['cost_usd']:.4f})"
    return None


def budget_stop(state: Mapping[str, Any], settings: AgentConfig) -> Stop | None:
    """The run's stop once a budget is spent: its reason, and the ``budget_spent`` event."""
    reason = overspent(state, settings)
    if reason is None:
        return None
    spend = dict(state["budget_spent"])
    unpriced = spend.get("unpriced_tokens", 0)
    if settings.cost_budget_usd is not None and unpriced:
        reason += f"; {unpriced:,} tokens of models without a price in model_prices were not priced"
    limits = {"token_budget": settings.token_budget, "cost_budget_usd": settings.cost_budget_usd}
    return Stop(reason, events=[event(BUDGET_SPENT, limits=limits, spent=spend, message=reason)])
