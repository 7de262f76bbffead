"""The budget feature: a run stops cleanly once its model calls spent ``token_budget`` tokens or
``cost_budget_usd`` dollars, with its own stop reason, an event, and the work done kept."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from scripting import LOOKUP_STEPS, WAYS, look_item, look_then_answer, make_model, plan_of, run

from replangraph import AgentConfig, build_graph
from replangraph.nodes.budget.feature import price_of, reply_spend
from replangraph.nodes.budget.names import BUDGET_SPENT
from replangraph.testing import ScriptedChatModel


def graph(**settings):
    model = make_model(plan_of(*LOOKUP_STEPS), look_then_answer)
    # one subtask at a time: the budget runs out between two subtasks, some done and some not
    config = AgentConfig(verify_results=False, **{"max_concurrency": 1, **settings})
    return build_graph(model, [look_item], config=config, checkpointer=InMemorySaver())


@pytest.mark.parametrize("way", WAYS)
def test_a_token_budget_ends_the_run_with_its_reason_an_event_and_the_work_done(way):
    whole, _ = run(graph(), way=way)
    assert not whole["stop_reason"]
    assert all(t["status"] == "completed" for t in whole["tasks"].values())

    state, events = run(graph(token_budget=2_500), way=way)
    reason = state["stop_reason"]
    assert reason.startswith("the token budget token_budget=2,500 was spent (")
    spent = state["budget_spent"]
    assert spent["input_tokens"] + spent["output_tokens"] >= 2_500
    assert spent["calls"] < sum(t["model_calls"] for t in whole["tasks"].values()) + 2  # it stopped early
    stops = [e for e in events if e["event"] == BUDGET_SPENT]
    assert len(stops) == 1 and stops[0]["message"] == reason and stops[0]["limits"]["token_budget"] == 2_500
    done = [t for t in state["tasks"].values() if t["status"] == "completed"]
    assert done and len(done) < len(LOOKUP_STEPS)
    assert all(t["result"] in state["final_answer"] for t in done)  # the report keeps every finished result
    assert reason in state["final_answer"]
    assert [e["stop_reason"] for e in events if e["event"] == "plan_completed"] == [reason]


def test_a_budget_given_in_a_runs_context_applies_to_that_run_only():
    compiled = graph()
    given = {"messages": [("user", "go")]}
    state = compiled.invoke(given, {"configurable": {"thread_id": "a"}}, context={"token_budget": 2_500})
    assert state["stop_reason"].startswith("the token budget token_budget=2,500")
    again = compiled.invoke(given, {"configurable": {"thread_id": "b"}})
    assert not again["stop_reason"]


def test_a_new_goal_on_the_same_thread_starts_a_new_budget():
    compiled = graph(token_budget=4_000)
    config = {"configurable": {"thread_id": "same"}}
    first = compiled.invoke({"messages": [("user", "first goal")]}, config)
    second = compiled.invoke({"messages": [("user", "second goal")]}, config)
    one, two = first["budget_spent"], second["budget_spent"]
    assert one["calls"] and two["calls"]
    # the same work spends the same from a fresh budget; a carried-over one would count the first run's calls too
    assert two == one
    assert second["stop_reason"] == first["stop_reason"]  # the same work hits the same budget


def priced(name: str, usage: dict | None):
    """A model whose replies name ``name`` and carry ``usage`` (or none)."""

    def respond(request):
        if "Plan" in request.tool_names:
            return plan_of({"id": "1", "content": "look up item 1"})
        return look_then_answer(request) if request.tool_names else "done"

    class Named(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            result = super()._generate(messages, stop, run_manager, **kwargs)
            message = result.generations[0].message
            update = {"response_metadata": {"model_name": name}, "usage_metadata": usage}
            result.generations[0].message = message.model_copy(update=update)
            return result

    return Named(respond=respond)


def test_a_cost_budget_prices_replies_by_model_name_prefix():
    usage = {"input_tokens": 1_000, "output_tokens": 100, "total_tokens": 1_100}
    prices = {"gpt-4o": (5.0, 20.0), "gpt-4o-mini": (0.15, 0.6)}
    config = AgentConfig(verify_results=False, cost_budget_usd=0.0001, model_prices=prices)
    model = priced("gpt-4o-mini-2024-07-18", usage)
    state = build_graph(model, [look_item], config=config).invoke({"messages": [("user", "go")]})
    assert state["budget_spent"]["cost_usd"] == pytest.approx(1_000 * 0.15 / 1e6 + 100 * 0.6 / 1e6)
    assert state["stop_reason"].startswith("the cost budget cost_budget_usd=0.0001 was spent ($0.0002)")


def test_unpriced_replies_are_named_in_the_reason_and_counted_by_approximation_without_usage():
    config = AgentConfig(verify_results=False, cost_budget_usd=1.0, token_budget=50, model_prices={"other": (1, 1)})
    state = build_graph(priced("local-model", None), [look_item], config=config).invoke({"messages": [("user", "go")]})
    spent = state["budget_spent"]
    assert spent["estimated_tokens"] == spent["input_tokens"] + spent["output_tokens"] > 0
    assert spent["unpriced_tokens"] == spent["estimated_tokens"] and spent["cost_usd"] == 0
    assert "(some counted approximately)" in state["stop_reason"]
    assert "tokens of models without a price in model_prices were not priced" in state["stop_reason"]


def test_prices_match_exactly_then_by_longest_prefix_then_star():
    prices = AgentConfig(model_prices={"gpt-4o": (5, 20), "gpt-4o-mini": (0.15, 0.6), "*": (1, 2)}).model_prices
    assert price_of("gpt-4o-mini-2024", prices) == (0.15, 0.6)
    assert price_of("gpt-4o", prices) == (5, 20)
    assert price_of("llama", prices) == (1, 2)
    assert price_of("llama", AgentConfig(model_prices={"gpt": (1, 1)}).model_prices) is None
    hash(AgentConfig(model_prices={"gpt": (1, 1)}))  # settings stay hashable


def test_nothing_is_counted_without_a_budget():
    reply = AIMessage("hi", usage_metadata={"input_tokens": 5, "output_tokens": 1, "total_tokens": 6})
    assert reply_spend([HumanMessage("hi")], reply, AgentConfig()) is None
    counted = reply_spend([HumanMessage("hi")], reply, AgentConfig(token_budget=10))["budget_spent"]
    assert (counted["input_tokens"], counted["output_tokens"], counted["estimated_tokens"]) == (5, 1, 0)


def test_budget_settings_are_checked():
    with pytest.raises(ValueError):
        AgentConfig(token_budget=0)
    with pytest.raises(ValueError):
        AgentConfig(cost_budget_usd=-1)
