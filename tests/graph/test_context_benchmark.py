"""The context benchmark: its world scores answers, its scripted model lists exactly what it sees, its table prints."""

from __future__ import annotations

import io

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from benchmarks import context_table
from benchmarks.context_world import (
    DROPPED_SUMMARY,
    READ_OUTPUT,
    TOOL,
    FaithfulModel,
    InventoryWorld,
    codes_in,
)
from replangraph.nodes.compression.prompts import SUMMARIZER_PROMPT
from replangraph.testing import ScriptedRequest, tool_call

HAS_LANGCHAIN = context_table.langchain_available()
needs_langchain = pytest.mark.skipif(
    not HAS_LANGCHAIN, reason="langchain>=1.0 is not installed (pip install -e .[bench])"
)


def worker_request(*messages, tools=(TOOL,)) -> ScriptedRequest:
    return ScriptedRequest(messages=list(messages), tool_names=tuple(tools))


def page_result(world: InventoryWorld, start: int, call_id: str) -> list:
    call = tool_call(TOOL, {"start": start}, call_id)
    return [AIMessage("", tool_calls=[call]), ToolMessage(world.read(start), tool_call_id=call_id, name=TOOL)]


def test_world_scores_every_code_once_and_partial_answers_partially():
    world = InventoryWorld(20)
    assert len(set(world.codes)) == 20 and all(codes_in(code) == [code] for code in world.codes)
    assert world.score(" ".join(world.codes)) == 20
    assert world.score("found: " + ", ".join(world.codes[:7])) == 7
    assert world.score("no codes here, IC-ABC and IC-ABCDEFG") == 0
    assert world.score(world.codes[3] + " " + world.codes[3]) == 1


def test_pages_carry_their_codes_and_say_where_the_next_page_starts():
    world = InventoryWorld(12)
    first, last = world.read(1), world.read(11)
    assert codes_in(first) == world.codes[:5] and first.endswith(f"{TOOL}(start=6).")
    assert codes_in(last) == world.codes[10:] and "last page" in last
    assert "only 12 items" in world.read(13)


def test_worker_pages_forward_then_lists_exactly_the_codes_it_sees():
    world, model = InventoryWorld(12), FaithfulModel()
    goal = HumanMessage(world.goal)
    assert model(worker_request(goal))["args"] == {"start": 1}
    assert model(worker_request(goal, *page_result(world, 1, "a")))["args"] == {"start": 6}
    # A summary of pages 1-5 (codes 1-3 only: the summarizer lost two), then the last page.
    summary = HumanMessage("Summary: " + ", ".join(world.codes[:3]) + f". Next: {TOOL}(start=11).")
    answer = model(worker_request(goal, summary, *page_result(world, 11, "c")))
    assert isinstance(answer, str)
    assert codes_in(answer) == world.codes[:3] + world.codes[10:]
    assert model.calls == {"worker": 3}


def test_worker_goes_by_the_furthest_page_it_has_seen():
    world, model = InventoryWorld(12), FaithfulModel()
    summary = HumanMessage(f"Codes so far: none. Paging: read the next page with {TOOL}(start=11).")
    assert model(worker_request(summary, *page_result(world, 1, "a")))["args"] == {"start": 11}


def test_worker_follows_read_output_notes_before_answering_and_only_with_the_tool():
    world, model = InventoryWorld(12), FaithfulModel()
    note = (
        '[… output "1/call_x": characters 400-9000 of 9000 are not shown here; '
        'read them with read_output(output_id="1/call_x", offset=400) …]'
    )
    window = [HumanMessage(world.goal), HumanMessage("Earlier pages " + note), *page_result(world, 11, "c")]
    assert isinstance(model(worker_request(*window)), str)  # no read_output tool: it answers
    call = model(worker_request(*window, tools=(TOOL, READ_OUTPUT)))
    assert call["name"] == READ_OUTPUT and call["args"] == {"output_id": "1/call_x", "offset": 400}
    page = f'output "1/call_x", characters 400-9000 of 9000:\n{world.codes[5]} and more'
    followed = [*window, AIMessage("", tool_calls=[call]), ToolMessage(page, tool_call_id=call["id"], name=READ_OUTPUT)]
    answer = model(worker_request(*followed, tools=(TOOL, READ_OUTPUT)))
    assert isinstance(answer, str) and world.codes[5] in codes_in(answer)


def test_replangraph_summarizer_lists_exactly_the_codes_in_its_input():
    world, model = InventoryWorld(12), FaithfulModel()
    text = f"Earlier summary:\nCodes: {world.codes[0]}\n\nMessages to fold in:\nTOOL {TOOL}: {world.read(6)}"
    summary = model(ScriptedRequest([SystemMessage(SUMMARIZER_PROMPT), HumanMessage(text)], ()))
    assert codes_in(summary) == [world.codes[0], *world.codes[5:10]]
    assert f"{TOOL}(start=11)" in summary
    assert model.calls == {"summarizer": 1}


@needs_langchain
def test_middleware_summarizer_is_recognized_and_lists_exactly_the_codes_in_its_input():
    from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT

    world, model = InventoryWorld(12), FaithfulModel()
    prompt = DEFAULT_SUMMARY_PROMPT.format(messages=world.read(1))
    summary = model(ScriptedRequest([HumanMessage(prompt)], ()))
    assert codes_in(summary) == world.codes[:5]
    assert model.calls == {"summarizer": 1}


def test_planner_gets_one_subtask_and_finalizer_lists_the_codes():
    world, model = InventoryWorld(12), FaithfulModel()
    plan = model(ScriptedRequest([SystemMessage("You are the planner."), HumanMessage(world.goal)], ("Plan",)))
    assert plan["name"] == "Plan" and plan["args"] == {"tasks": [{"id": "1", "content": world.goal}]}
    final = model(ScriptedRequest([SystemMessage("You write the final answer."), HumanMessage(world.read(1))], ()))
    assert codes_in(final) == world.codes[:5]


def test_dropped_summaries_are_counted_once_each():
    model = FaithfulModel()
    dropped = HumanMessage(f"Here is a summary of the conversation to date:\n\n{DROPPED_SUMMARY}", id="s1")
    model(worker_request(dropped))
    model(worker_request(dropped))
    assert model.dropped == 1


def run_table(*args: str) -> str:
    out = io.StringIO()
    assert context_table.main(["--windows", "9000", "--items", "20", "--runs", "1", *args], out=out) == 0
    return out.getvalue()


def rows(table: str) -> dict[str, list[str]]:
    found = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 11 and cells[0] == "9000":
            found[cells[3]] = cells
    return found


@needs_langchain
def test_table_prints_both_agents_side_by_side():
    table = run_table("--keep-last", "3")
    assert table.startswith("Machine: ") and "langchain " in table
    default = context_table.summarization_defaults()["trim_tokens_to_summarize"]
    assert f"trim_tokens_to_summarize left at its default, {default}" in table
    found = rows(table)
    assert set(found) == {context_table.REPLANGRAPH, context_table.SUMMARIZATION}
    ours = found[context_table.REPLANGRAPH]
    assert ours[1:3] == ["20", "3"]
    assert ours[4] == "**20/20**", ours
    for cells in found.values():
        assert int(cells[5]) > 4  # at least one call per page
        assert cells[8].endswith("/ 9.0k") or cells[8].endswith("/ 9.0k ⚠")


def test_without_langchain_the_summarization_rows_are_skipped_with_a_note(monkeypatch):
    monkeypatch.setattr(context_table, "langchain_available", lambda: False)
    table = run_table("--keep-last", "3")
    assert "ReAct + SummarizationMiddleware rows skipped: langchain is not installed" in table
    assert set(rows(table)) == {context_table.REPLANGRAPH}


def test_a_crashing_agent_is_a_row_with_its_error(monkeypatch):
    def crash(model, world):
        raise RuntimeError("mid-edit")

    monkeypatch.setattr(context_table, "replangraph_agent", lambda **config: crash)
    monkeypatch.setattr(context_table, "langchain_available", lambda: False)
    found = rows(run_table("--keep-last", "3"))
    assert found[context_table.REPLANGRAPH][4] == "**0/20** (RuntimeError)"
