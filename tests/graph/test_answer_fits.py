"""The answer fits the question (issue 40): an aggregate, a yes or no, a comparison gets a short answer that names
the output holding every result; a goal that asks for the items still gets every item.

A world of products with prices, read 50 at a time. The planner says what the goal asks the final answer to be
(the plan's ``answer_form``); the final answer's model answers the question, and, asked again for the items it
left out, lists them all (it complies) or answers the same (it refuses).
"""

from __future__ import annotations

import re

import pytest
from scripting import WAYS, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.durable import kept_output
from replangraph.nodes.finalize.prompts import ADDED_ITEMS, UNSEEN_RESULTS
from replangraph.queue.tasks import spent_model_calls
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call


def price(n: int) -> float:
    return 10 + (n * 7919) % 9000 / 100


def product(n: int) -> str:
    return f"product-{n}: price ${price(n):.2f}"


def read_products(start: int, count: int = 50) -> str:
    """Read up to 50 products from product `start` (1-based)."""
    return "\n".join(product(n) for n in range(start, start + min(count, 50)))


def prices_in(text: str) -> dict[int, float]:
    return {int(n): float(p) for n, p in re.findall(r"product-(\d+): price \$([\d.]+)", text)}


def average(found: dict[int, float]) -> str:
    return f"{sum(found.values()) / len(found):.2f}"


def all_under_100(found: dict[int, float]) -> str:
    return "Yes." if all(p < 100 for p in found.values()) else "No."


def halves(found: dict[int, float]) -> str:
    middle = max(found) // 2
    low = [p for n, p in found.items() if n <= middle]
    high = [p for n, p in found.items() if n > middle]
    first, second = sum(low) / len(low), sum(high) / len(high)
    pricier = f"1-{middle}" if first > second else f"{middle + 1}-{max(found)}"
    return f"Products {pricier} cost more on average (${max(first, second):.2f} against ${min(first, second):.2f})."


def listing(found: dict[int, float]) -> str:
    return "\n".join(product(n) for n in sorted(found))


def cut_listing(found: dict[int, float]) -> str:
    shown = sorted(found)
    return "\n".join(product(n) for n in shown[:10]) + f"\n... and {len(shown) - 10} more."


QUESTIONS = {
    "aggregate": ("What is the average price of products 1-{n}? Answer with one number.", average),
    "yes/no": ("Do all products 1-{n} cost less than $100? Answer yes or no.", all_under_100),
    "comparison": ("Which cost more on average, the first half of products 1-{n} or the second half?", halves),
}


def world(n: int, answer, form: str | None, comply: bool = True, finals: list | None = None) -> ScriptedChatModel:
    """The planner plans ranges of 50 products (saying ``form`` when given); each agent reads its range and
    answers with it; the final answer is ``answer(products in the request)``, or, asked again for what it left
    out, every product when it complies."""

    def respond(request: ScriptedRequest):
        if "Verdict" in request.tool_names:
            return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "every product is there"})
        if "Plan" in request.tool_names:
            ranges = [(a, min(a + 49, n)) for a in range(1, n + 1, 50)]
            tasks = [{"id": str(i), "content": f"List products {a}-{b} with prices"} for i, (a, b) in enumerate(ranges)]
            return tool_call("Plan", {"tasks": tasks, **({"answer_form": form} if form else {})})
        if request.tool_names:
            if request.tool_results:
                return request.tool_results[-1].text
            first, last = map(int, re.search(r"products (\d+)-(\d+)", subtask_of(request)).groups())
            return tool_call("read_products", {"start": first, "count": last - first + 1})
        if finals is not None:
            finals.append(request)
        if "leaves out" in request.prompt and comply:
            return listing(prices_in(request.prompt))
        return answer(prices_in(request.prompt))

    return ScriptedChatModel(respond=respond)


def answered(n: int, goal: str, answer, form: str | None, comply: bool = True, way: str = "invoke"):
    """``(final state, the final answer's requests)`` of a run on ``n`` products."""
    finals: list[ScriptedRequest] = []
    model = world(n, answer, form, comply, finals)
    config = AgentConfig(retry_backoff_s=0.0, max_steps=500)
    state, _ = run(build_graph(model, tools=[read_products], config=config), goal=goal.format(n=n), way=way)
    return state, finals


def every_product(n: int) -> dict[int, float]:
    return {k: float(f"{price(k):.2f}") for k in range(1, n + 1)}


@pytest.mark.parametrize("n", [100, 1000])
@pytest.mark.parametrize("kind", list(QUESTIONS))
@pytest.mark.parametrize("comply", [True, False], ids=["complies", "refuses"])
def test_a_question_that_asks_for_no_items_gets_a_short_answer_naming_the_data(n, kind, comply):
    goal, answer = QUESTIONS[kind]
    state, finals = answered(n, goal, answer, "short", comply)
    text = state["final_answer"]
    assert len(text) < 200 and text.startswith(answer(every_product(n)))  # short and right
    assert len(finals) == 1  # no second ask for the items
    assert "output results" in text and "replangraph output --thread t results" in text
    data = kept_output(state, None, "t", "results")
    assert prices_in(data) == every_product(n)  # the artifact holds every product


@pytest.mark.parametrize("way", WAYS)
def test_a_short_answer_is_written_in_one_request_though_the_items_would_not_fit_the_output_room(way):
    goal, answer = QUESTIONS["aggregate"]
    finals: list[ScriptedRequest] = []
    model = world(1000, answer, "short", finals=finals)
    config = AgentConfig(retry_backoff_s=0.0, max_steps=500, max_output_tokens=2_000)
    state, _ = run(build_graph(model, tools=[read_products], config=config), goal=goal.format(n=1000), way=way)
    assert len(finals) == 1 and len(prices_in(finals[0].prompt)) == 1000  # every product, one request
    assert state["final_answer"].startswith(average(every_product(1000)))


@pytest.mark.parametrize("way", WAYS)
def test_a_plan_that_does_not_say_keeps_todays_completion(way):
    goal, answer = QUESTIONS["aggregate"]
    state, finals = answered(100, goal, answer, None, comply=True, way=way)
    assert len(finals) == 2 and "leaves out 100 items" in finals[1].prompt  # asked once more for the items
    assert prices_in(state["final_answer"]) == every_product(100)


def test_an_items_goal_cut_short_is_completed_word_for_word():
    state, finals = answered(1000, "List products 1-{n} with their prices.", cut_listing, "items", comply=False)
    text = state["final_answer"]
    assert len(finals) == 2 and "... and 990 more." in text and ADDED_ITEMS in text
    assert prices_in(text) == every_product(1000)


def test_a_short_answer_that_shortens_a_list_is_completed_all_the_same():
    state, finals = answered(100, "List products 1-{n} with their prices.", cut_listing, "short", comply=True)
    assert len(finals) == 2  # the answer said it left items out: asked once more
    assert prices_in(state["final_answer"]) == every_product(100)


@pytest.mark.parametrize("way", WAYS)
def test_a_final_answer_in_parts_takes_no_more_calls_than_max_steps_left(way):
    """The finalizer's first call is its own; parts past it come out of ``max_steps``: with none left, one call,
    and the results no request showed follow the answer word for word."""
    goal = "List products 1-{n} with their prices."

    def final_run(max_steps: int):
        finals: list[ScriptedRequest] = []
        model = world(1000, listing, None, finals=finals)
        config = AgentConfig(retry_backoff_s=0.0, max_steps=max_steps, max_output_tokens=2_000)
        state, _ = run(build_graph(model, tools=[read_products], config=config), goal=goal.format(n=1000), way=way)
        return state, finals

    unbounded, parts = final_run(500)
    assert len(parts) > 1 and UNSEEN_RESULTS not in unbounded["final_answer"]  # the results fit no one request
    spent = spent_model_calls(unbounded)
    state, finals = final_run(spent)  # the same run with no call left for the final answer's parts
    assert spent_model_calls(state) == spent and not state.get("stop_reason")
    assert len(finals) == 1 and UNSEEN_RESULTS in state["final_answer"]
    assert prices_in(state["final_answer"]) == every_product(1000)  # nothing read is lost
