"""What an agent read reaches its result, and what the results hold reaches the final answer (context.carried)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from replangraph.context.carried import (
    READS_HEAD,
    Read,
    adds_data,
    carried,
    data_words,
    elides,
    item_lines,
    known_reads,
    left_out,
    made_calls,
    made_progress,
    read_digests,
    reads_in,
    with_reads,
)
from replangraph.context.fitting import mark_kept
from replangraph.llm.reading import announces_call

FILLER = "Customers mention the sturdy build and the fair price; the listing shows photos and a size chart."
NAMES = ["Amber Lamp", "Basalt Lamp", "Cedar Lamp", "Dune Lamp", "Ember Lamp"]


def page(rank: int) -> str:
    return (
        f"#{rank} {NAMES[rank - 1]} | {20_000 - 17 * rank:,} units sold | rated 4.{rank} | SKU P-{rank:04d} | {FILLER}"
    )


def compact(rank: int) -> str:
    return f"#{rank} {NAMES[rank - 1]}: {20_000 - 17 * rank:,} units sold, rated 4.{rank}"


PAGE = "\n".join(page(r) for r in range(1, 6))


def test_numbers_keep_their_separators_and_our_notes_are_no_data():
    assert {"19,983", "4.2", "amber"} <= data_words("#1 Amber Lamp: 19,983 units sold, rated 4.2")
    note = '[… output "1/c": characters 10-90 of 100 are not shown here; read them with read_output(...) …]'
    assert data_words(f"A A {note} B B") == set()


def test_compact_lines_carry_a_page_and_a_paraphrase_does_not():
    lines = "\n".join(compact(r) for r in range(1, 6))
    assert carried(lines, [PAGE]) == [True]
    assert carried("Extracted products ranked 1-5 (name, units sold and rating).", [PAGE]) == [False]
    assert carried("", ["   "]) == [True]  # nothing to show


def test_a_result_carries_what_its_words_omit_after_them():
    window = [
        SystemMessage("s"),
        HumanMessage("h"),
        AIMessage("", tool_calls=[{"name": "read", "args": {"start": 1}, "id": "a"}]),
        ToolMessage(PAGE, tool_call_id="a", name="read"),
        AIMessage("", tool_calls=[{"name": "replan_review_context", "args": {}, "id": "b"}]),
        ToolMessage("the plan", tool_call_id="b", name="replan_review_context"),
    ]
    reads = reads_in(window)
    assert [r.call for r in reads] == ['read {"start": 1}']  # the toolkit's replies are no data
    assert (
        with_reads("Done: products 1-5.", reads)
        == f'Done: products 1-5.\n\n{READS_HEAD}\n\n[read {{"start": 1}}]\n{PAGE}'
    )
    shown = "\n".join(compact(r) for r in range(1, 6))
    assert with_reads(shown, reads) == shown
    assert made_calls(window) and not made_calls(window[:2])


def test_a_dropped_output_is_read_back_as_an_excerpt():
    dropped = mark_kept(ToolMessage("x", tool_call_id="a", name="read"), '[output "1/a" removed from context]', "1/a")
    window = [AIMessage("", tool_calls=[{"name": "read", "args": {}, "id": "a"}]), dropped]
    [read] = reads_in(window, lambda ident: "#7 Onyx Knife " * 2_000 if ident == "1/a" else None)
    assert read.text.startswith("#7 Onyx Knife") and len(read.text) < 11_000 and "read_output" in read.text


def test_progress_is_new_data_not_the_same_pages_again():
    assert adds_data(PAGE, None)
    assert not adds_data(PAGE, PAGE + "\nmore words")
    assert adds_data(page(5).replace("Ember", "Fjord").replace("P-0005", "P-0006"), PAGE) is False  # 2 new words
    assert adds_data("\n".join(compact(r).replace("Lamp", "Kettle") + " Kestrel Nimbus" for r in range(1, 4)), PAGE)


def test_records_are_items_and_a_lone_sentence_is_not():
    text = "Intro.\nitem-1: code 55\nitem-2: code 66\nitem-3: code 77\n\nIn 2023 it rained.\n- a bullet\n12. numbered"
    assert item_lines(text) == ["item-1: code 55", "item-2: code 66", "item-3: code 77", "- a bullet", "12. numbered"]


def test_an_item_is_shown_by_one_line_not_by_words_scattered_over_others():
    items = "\n".join([*(compact(r) for r in range(1, 6)), "#6 Amber Kettle: 19,898 units sold, rated 4.6"])
    answer = "\n".join(compact(r) for r in range(1, 6))  # "Amber" and "4.6" appear, not on one line with Kettle
    assert left_out(answer, [items]) == ["#6 Amber Kettle: 19,898 units sold, rated 4.6"]
    assert left_out(answer + "\n6. Amber Kettle — 19,898 sold", [items]) == []


def test_a_list_cut_short_says_so():
    assert elides("#1 A\n#2 B\n... and 17 more.") and elides("(+17 more)") and elides("[truncated]")
    assert not elides("We found 17 more products than last year.")


def test_an_announcement_is_told_from_an_answer():
    assert announces_call("I'll now call read_ranking to fetch products 51-55.", ["read_ranking"])
    assert announces_call("Next, I will fetch the second page.")
    assert announces_call("Let me use lookup_cities for the rest.", ["lookup_cities"])
    assert not announces_call("Here are all 19 products. Let me know if you need more.")
    assert not announces_call("Let me summarize: 19 products, every one listed above.")


def test_a_follow_up_whose_calls_return_something_new_made_progress_though_its_words_read_alike():
    crafted = "Crafted 1 minecraft:iron_ingot"
    before = [Read("inventory {}", "Inventory: [iron ingot] (4)"), Read('craft {"n": 1}', crafted)]
    parent = {"read_digests": read_digests(before)}
    grew = [Read("inventory {}", "Inventory: [iron ingot] (5)"), Read('craft {"n": 1}', crafted)]
    assert made_progress(crafted, grew, parent, crafted)  # the same words, an inventory that grew
    assert not made_progress(crafted, before, parent, crafted)  # the same calls, the same returns: a redo
    assert made_progress(PAGE, [], None, None)  # a first subtask that found data


def test_a_follow_up_that_reads_only_what_another_subtask_read_made_no_progress_whatever_its_words():
    pages = [Read(f'read {{"page": {n}}}', f"page {n}: item-{n}") for n in range(1, 4)]
    tasks = {"a": {"read_digests": read_digests(pages[:2])}, "b": {"read_digests": read_digests(pages[2:])}, "c": {}}
    parent = {"read_digests": read_digests(pages[2:])}  # b
    redo = pages[:2]  # what a read, asked again by an over-critical check of b: new to b, not to the run
    result = "page 1: item-1\npage 2: item-2"
    assert made_progress(result, redo, parent, "page 3: item-3")  # beside its parent alone it looks new
    assert not made_progress(result, redo, parent, "page 3: item-3", known_reads(tasks, "c"))
    assert made_progress(
        result, [*redo, Read('read {"page": 4}', "page 4: item-4")], parent, "", known_reads(tasks, "c")
    )
    assert known_reads(tasks, "a") == set(read_digests(pages[2:]))  # its own reads are not "known before"
