"""The worlds not addressed by numbered item ranges (issue 40): their tools, their personas' replies to hand-made
requests (each persona does what its docstring says), and the matrix rows they make. Whether the targets are met
is what the benchmark measures, not what these tests check. Every figure here is a count: no test is timed."""

from __future__ import annotations

import io
import json
import re

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from benchmarks import matrix
from benchmarks.personas import NOT_EVERYTHING
from benchmarks.structure_worlds import price
from benchmarks.unnumbered_personas import PERSONAS, persona, personas_of
from benchmarks.unnumbered_worlds import (
    CATEGORIES,
    CategoriesWorld,
    CursorWorld,
    LettersWorld,
    PagedCatalogWorld,
    PriceBandsWorld,
    StockWorld,
    answer_figures,
    misspelt,
    token,
)
from replangraph import AgentConfig, build_graph
from replangraph.testing import ScriptedRequest, as_message, tool_call
from replangraph.tools import REVIEW_TOOL, SPLIT_TOOL

VERDICT_TOOLS = ("Verdict",)


def rules(batch: int = 50) -> SystemMessage:
    return SystemMessage(f"Rules:\n- More than {batch} items: process one batch of at most {batch} ...")


def worker(world, content: str, *turns, task_id: str = "1", batch: int = 50) -> ScriptedRequest:
    """A worker request: the rules, the subtask line, then ``turns``: ``(calls, outputs)`` pairs, each a turn of
    tool calls and the tools' outputs (a review's output given as text)."""
    messages = [rules(batch), HumanMessage(f"Overall goal: {world.goal}\n\nYour subtask ({task_id}): {content}")]
    for calls, outputs in turns:
        messages.append(AIMessage("", tool_calls=calls))
        for call, output in zip(calls, outputs, strict=True):
            messages.append(ToolMessage(output, tool_call_id=call["id"], name=call["name"]))
    return ScriptedRequest(messages=messages, tool_names=(world.tools[0].name, REVIEW_TOOL, SPLIT_TOOL))


def run_tool(world, calls: list[dict]) -> list[str]:
    """The outputs of ``calls`` (a review answered with an empty plan)."""
    return [
        "Completed (0):\n(none)\nPending (0):\n(none)" if c["name"] == REVIEW_TOOL else world.tools[0].invoke(c["args"])
        for c in calls
    ]


def turn(world, reply) -> tuple[list[dict], list[str]]:
    calls = as_message(reply).tool_calls
    return calls, run_tool(world, calls)


def check(world, content: str, result: str, *, goal: bool = True) -> ScriptedRequest:
    text = (f"Overall goal: {world.goal}\n\n" if goal else "") + f"Subtask (1): {content}\n\nResult:\n{result}"
    system = SystemMessage("... `remaining_tasks`: ... each covering at most 50 items.")
    return ScriptedRequest(messages=[system, HumanMessage(text)], tool_names=VERDICT_TOOLS)


def goal_check(world, results: str) -> ScriptedRequest:
    text = f"Goal: {world.goal}\n\nResults of the run, in plan order:\n{results}"
    system = SystemMessage("... `remaining_tasks`: ... each covering at most 50 items.")
    return ScriptedRequest(messages=[system, HumanMessage(text)], tool_names=VERDICT_TOOLS)


def final(world, results: str) -> ScriptedRequest:
    return ScriptedRequest(messages=[HumanMessage(f"Goal: {world.goal}\n\nResults:\n{results}")], tool_names=())


def verdict(reply) -> dict:
    [call] = as_message(reply).tool_calls
    assert call["name"] == "Verdict"
    return call["args"]


def hand_off(reply) -> tuple[str, list[str]]:
    [call] = [c for c in as_message(reply).tool_calls if c["name"] == SPLIT_TOOL]
    tasks = call["args"]["tasks"]
    return call["args"]["summary"], [t["content"] for t in (json.loads(tasks) if isinstance(tasks, str) else tasks)]


def read_batch(scripted, world, content: str) -> list:
    """A worker's turns up to its hand-off: its batch (with the review), then the hand-off reply."""
    first = scripted.respond(worker(world, content))
    done = [turn(world, first)]
    return [*done, scripted.respond(worker(world, content, *done))]


# ---------------------------------------------------------------------------------------------- the worlds


def test_each_world_names_every_item_once_and_records_what_its_tools_served():
    for world in (CategoriesWorld(100), LettersWorld(100), PagedCatalogWorld(100), CursorWorld(100)):
        assert len(set(world.names())) == 100 and not world.read_everything()
    cursor = CursorWorld(19)
    first = cursor.tools[0].invoke({})
    follow = re.search(r"next_cursor: (\S+)", first).group(1)
    assert follow == token(10) and len(cursor.items_in(first)) == 10
    assert cursor.tools[0].invoke({"cursor": follow, "limit": 50}).count("ORD-") == 9  # at most 20, 9 left
    assert cursor.read_everything() and "next_cursor: none" in cursor.tools[0].invoke({"cursor": token(18)})
    assert cursor.tools[0].invoke({"cursor": misspelt(follow)}).startswith("Invalid cursor")
    assert CategoriesWorld(19).tools[0].invoke({"category": misspelt("Kitchen & Dining")}).startswith("No category")
    pages = PagedCatalogWorld(19)
    assert pages.goal == "Extract every product on page 1 of the catalog" and pages.keys_in(pages.goal) == ["1"]
    assert PagedCatalogWorld(100).keys_in("Extract products 41-80 of the catalog") == ["3", "4"]
    letters = LettersWorld(100)
    assert letters.keys_in(letters.task(["C", "D", "E"])) == ["C", "D", "E"]
    assert all(name.startswith("C") for i in letters.segment_items("C") for name in [letters.names()[i - 1]])


def test_the_stock_world_scores_the_total_all_or_nothing():
    world = StockWorld(100)
    total = world.total()
    assert world.score(f"Total stock: {total:,} units.") == 100
    assert world.score(f"Total stock: {total + 1:,} units.") == 0
    assert world.score(f"It costs ${total}.00 and {total}.5 kg") == 0  # a price or a decimal is not the total


def test_precision_and_duplicate_lines_count_item_lines():
    world = CategoriesWorld(19)
    lines = [world.items_in(world.tools[0].invoke({"category": c}))[i] for c, i in (("Garden & Outdoor", 1),) * 2]
    invented = "Nova Lamp | Garden & Outdoor | $1.00 | 3 in stock | SKU P-0999"
    precision, duplicates = answer_figures(world, "\n".join(["2 products:", *lines, invented]))
    assert (precision, duplicates) == (2 / 3, 1)
    assert answer_figures(world, "no item here") == (None, 0)


# ---------------------------------------------------------------------------------------------- the personas


def test_compliant_reads_a_batch_with_the_review_then_hands_off_the_rest_by_name():
    world = CategoriesWorld(100)  # about 4 products a category: 11 categories make a batch of 50
    first, reply = read_batch(persona("compliant", world), world, world.goal)
    assert [c["args"]["category"] for c in first[0][:-1]] == list(CATEGORIES[:11])
    assert first[0][-1]["name"] == REVIEW_TOOL
    summary, tasks = hand_off(reply)
    assert summary.startswith("Categories Garden & Outdoor; Kitchen & Dining;") and world.score(summary) == 48
    assert tasks == [world.task(list(CATEGORIES[11:22])), world.task(list(CATEGORIES[22:]))]


def test_skips_leaves_one_segment_out_of_its_hand_off():
    world = LettersWorld(100)
    _, reply = read_batch(persona("skips", world), world, world.goal)
    _, tasks = hand_off(reply)
    assert tasks == [world.task(["M"]), world.task(list("OPQRSTUVWXYZ"))]  # A-L read, N left out


def test_skips_in_the_cursor_world_leaves_a_page_out_of_its_summary():
    world = CursorWorld(100)
    scripted = persona("skips", world)
    turns: list = []
    reply = scripted.respond(worker(world, world.goal))
    while not any(c["name"] == SPLIT_TOOL for c in as_message(reply).tool_calls):
        turns.append(turn(world, reply))
        reply = scripted.respond(worker(world, world.goal, *turns))
    summary, tasks = hand_off(reply)
    assert len(turns) == 6  # five pages of 10, one a turn, then the review
    assert world.score(summary) == 40 and order_ids(world, 11, 20).isdisjoint(summary.split())
    assert tasks == [world.task_from(token(50))]


def order_ids(world, first: int, last: int) -> set[str]:
    return {world.names()[i - 1] for i in range(first, last + 1)}


def test_misspells_copies_the_second_name_of_a_list_wrong_and_never_tries_it_again():
    world = CategoriesWorld(19)
    scripted = persona("misspells", world)
    reply = as_message(scripted.respond(worker(world, world.goal)))
    asked = [c["args"]["category"] for c in reply.tool_calls]
    assert asked[0] == "Garden & Outdoor" and asked[1] == misspelt("Kitchen & Dining") != "Kitchen & Dining"
    answer = as_message(scripted.respond(worker(world, world.goal, turn(world, reply)))).text
    assert "No category named" in answer and world.score(answer) == 18  # answered: the name is not tried again
    missing = verdict(scripted.respond(check(world, world.goal, answer)))["remaining_tasks"]
    assert missing == [world.task(["Kitchen & Dining"])]  # a list of one name is copied right


def test_misspells_garbles_the_cursor_it_hands_off():
    world = CursorWorld(100)
    scripted = persona("misspells", world)
    turns: list = []
    reply = scripted.respond(worker(world, world.goal))
    while not any(c["name"] == SPLIT_TOOL for c in as_message(reply).tool_calls):
        turns.append(turn(world, reply))
        reply = scripted.respond(worker(world, world.goal, *turns))
    _, [task] = hand_off(reply)
    assert task == world.task_from(misspelt(token(50))) and misspelt(token(50)) != token(50)


@pytest.mark.parametrize("name", ["single-call", "restarts"])
def test_one_call_a_turn_never_reviews_and_a_continuation_goes_on_or_restarts(name):
    world = LettersWorld(19)
    scripted = persona(name, world)
    calls = as_message(scripted.respond(worker(world, world.goal))).tool_calls
    assert [(c["name"], c["args"]) for c in calls] == [("list_members", {"letter": "A"})]
    listed = "; ".join(f'list_members {{"letter": "{k}"}}' for k in "ABCDEFGHIJKLMNO")
    content = f"{world.goal}\n\n(This continues subtask 1, which stopped: ... Its tool calls so far ...: {listed}.)"
    calls = as_message(scripted.respond(worker(world, content))).tool_calls
    assert calls[0]["args"] == {"letter": "A" if name == "restarts" else "P"}
    latest = "(… and 10 earlier calls) " + "; ".join(f'list_members {{"letter": "{k}"}}' for k in "KLMNO")
    content = f"{world.goal}\n\n(This continues subtask 1, which stopped: ... Its tool calls so far ...: {latest}.)"
    calls = as_message(scripted.respond(worker(world, content))).tool_calls
    assert calls[0]["args"] == {"letter": "A" if name == "restarts" else "P"}  # after the last listed letter


def test_restarts_reads_one_order_a_call_and_outlasts_the_turn_limit_at_n_19():
    world = CursorWorld(19)
    call = as_message(persona("restarts", world).respond(worker(world, world.goal))).tool_calls[0]
    assert call["args"] == {"cursor": "", "limit": 1}
    scripted = persona("restarts", world)
    graph = build_graph(scripted.model(), tools=world.tools, config=AgentConfig(retry_backoff_s=0.0))
    out = graph.invoke({"messages": [("user", world.goal)]})
    continued = [t for t in out["tasks"].values() if "This continues subtask" in t["content"]]
    assert continued, "the subtask reached max_step_iterations and was continued"


def test_relative_hands_off_the_same_words_and_finds_its_place_in_the_review():
    world = PagedCatalogWorld(100)
    scripted = persona("relative", world)
    _, reply = read_batch(scripted, world, world.goal)
    _, tasks = hand_off(reply)
    next_two = world.relative_task(2)
    assert tasks == [next_two, next_two]
    review = (
        f"Goal: {world.goal}\nCurrent subtask: 1_dyn_1: {next_two}\nCompleted (1):\n"
        f"[X] 1: {world.goal} (Result: Products 1-40 of the catalog: #1 Amber Lamp | $381.99 …)\n"
        f"Pending (1):\n[>] 1_dyn_0: {next_two}"
    )
    request = worker(world, next_two, ([tool_call(REVIEW_TOOL, {})], [review]), task_id="1_dyn_1")
    pages = [c["args"]["page"] for c in as_message(scripted.respond(request)).tool_calls]
    assert pages == [5]  # after pages 1-2, one batch on for 1_dyn_0 (pages 3-4)


def test_over_critical_is_never_satisfied():
    world = StockWorld(19)
    scripted = persona("over-critical", world)
    everything = verdict(scripted.respond(goal_check(world, "Total stock: 919 units.")))
    assert everything == {"complete": False, "remaining_tasks": [world.goal], "reason": NOT_EVERYTHING}
    again = verdict(scripted.respond(check(world, world.task(["Audio"]), "Audio: 1 products, 3 units in stock")))
    assert again["remaining_tasks"] == [world.goal]


def test_cut_final_elides_a_list_and_a_total():
    world = LettersWorld(100)
    text = "\n".join(world.page(i) for i in range(1, 101))
    answer = as_message(persona("cut-final", world).respond(final(world, text))).text
    assert world.score(answer) == 10 and answer.endswith("... and 90 more.")
    stock = StockWorld(100)
    subtotals = "\n".join(f"{c}: 4 products, 100 units in stock" for c in CATEGORIES)
    elided = as_message(persona("cut-final", stock).respond(final(stock, subtotals))).text
    assert elided.endswith("... and 14 more.") and "2,400" not in elided
    whole = as_message(persona("compliant", stock).respond(final(stock, subtotals))).text
    assert whole == "Total stock: 2,400 units."


def test_prices_skips_a_band_and_relative_bands_go_on_from_the_listed_ones():
    world = PriceBandsWorld(300)
    for name in ("compliant", "skips"):
        scripted = persona(name, world)
        first = scripted.respond(worker(world, world.goal))
        reply = scripted.respond(worker(world, world.goal, turn(world, first)))
        reply = scripted.respond(worker(world, world.goal, turn(world, first), turn(world, reply)))
        _, tasks = hand_off(reply)
        bands = [world.band(t) for t in tasks]
        if name == "compliant":
            whole = bands
        else:
            assert bands == [whole[0], *whole[2:]]
    scripted = persona("relative", world)
    width = whole[0][1] - whole[0][0]
    task = scripted.relative_task(width)
    review = (
        "Completed (1):\n[X] 1_dyn_0: ... (Result: Products priced from 0 to 100 dollars: 94 found. #1 …)\n"
        f"Pending (1):\n[>] 1_dyn_1: {task}"
    )
    request = worker(world, task, ([tool_call(REVIEW_TOOL, {})], [review]), task_id="1_dyn_2")
    [call] = as_message(scripted.respond(request)).tool_calls
    assert (call["args"]["min_price"], call["args"]["max_price"]) == (100 + width, 100 + 2 * width)
    assert price(7) == 99.99  # a band edge the bands share: both list it


def test_every_persona_answers_every_world_it_applies_to():
    assert personas_of("letters") == tuple(p for p in PERSONAS if p != "misspells")
    assert "misspells" in personas_of("cursor") and "misspells" in personas_of("stock")
    with pytest.raises(ValueError):
        persona("lazy", CategoriesWorld(19))


# ---------------------------------------------------------------------------------------------- the matrix


def test_the_matrix_runs_every_world_by_default_and_prints_the_new_figures(tmp_path):
    out, path = io.StringIO(), tmp_path / "matrix.json"
    args = ["--worlds", "cursor", "stock", "--personas", "compliant", "--sizes", "19", "--json", str(path)]
    assert matrix.main(args, out=out) == 0
    text = out.getvalue()
    assert "**cursor world**" in text and "**stock world**" in text and "(e) right total" in text
    assert re.search(r"\| 19 \| compliant \| \*\*19/19\*\* · P 1\.00 · 0 dup · [\d.]+k? chars", text)
    figures = json.loads(path.read_text())
    rows = {row["world"]: row for row in figures["rows"]}
    for row in rows.values():
        assert row["replangraph"]["read_every_item"] is True
        assert {"precision", "duplicate_lines", "answer_chars"} <= set(row["react"])
    assert rows["stock"]["replangraph"]["precision"] is None and "e" in rows["stock"]["targets"]
    assert rows["stock"]["replangraph"]["answer_chars"] == len(f"Total stock: {StockWorld(19).total():,} units.")
    parser_defaults = matrix.ALL_WORLDS
    assert list(parser_defaults)[:2] == ["catalog", "report"] and len(parser_defaults) == 8


def test_recall_is_judged_only_where_every_item_was_read_and_one_number_answers_by_length():
    outcome = matrix.Outcome(15, 19, 139, 0, 0, 0, 0.0, answer="x" * 300)
    react = matrix.Outcome(19, 19, 20, 0, 0, 0, 0.0)
    row = matrix.Row("cursor", 19, "restarts", outcome, react, 8, 8, read_all=False)
    assert row.targets()["a"] == matrix.Target(None, "0.79, not all read")
    long = matrix.Row("stock", 19, "restarts", matrix.Outcome(19, 19, 9, 0, 0, 0, 0.0, answer="x" * 300), react, 8)
    assert long.targets()["e"] == matrix.Target(False, "right, 300 chars")
    assert "e" not in row.targets()


def test_the_misspells_persona_runs_only_where_names_are_copied():
    out = io.StringIO()
    matrix.main(["--worlds", "letters", "--personas", "misspells", "compliant", "--sizes", "19"], out=out)
    rows = [line.split(" | ")[1] for line in out.getvalue().splitlines() if line.startswith("| 19 |")]
    assert rows == ["compliant"]
