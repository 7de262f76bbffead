"""Judges and voters answering through their schema tools (`Pick`, `Ballot`, `Fusion`); the prose answers
are covered by test_teams.py and test_judge_reading.py."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from scripting import run
from test_teams import MEMBERS, Calls, team_graph

from replangraph.llm.reading import UnreadableInput
from replangraph.nodes.teams.judging import read_ballot, read_fused, read_pick
from replangraph.testing import tool_call


def scores(*pairs: tuple[int, float]) -> dict:
    return tool_call("Ballot", {"scores": [{"candidate": c, "score": s} for c, s in pairs]})


def test_the_judge_picks_through_the_pick_tool():
    calls, tools = Calls(), []

    def judge(request):
        tools.append(request.tool_names)
        return tool_call("Pick", {"winner": 3, "reason": "thorough checked it"})

    out, events = run(team_graph(calls, judge=judge))
    record = out["tasks"]["1"]["team"]
    assert tools == [("Pick",)] and record["winner"] == "thorough" and record["reason"] == "thorough checked it"
    assert out["tasks"]["1"]["result"] == "answer from thorough" and record["model_calls"] == 1


def test_an_unreadable_pick_call_is_asked_about_once_more_through_the_tool():
    calls, asked = Calls(), []

    def judge(request):
        asked.append(request.prompt)
        again = "could not be read" in request.prompt
        return tool_call("Pick", {"winner": 2 if again else 7, "reason": "r"})

    out, _ = run(team_graph(calls, judge=judge))
    assert out["tasks"]["1"]["result"] == "answer from fast" and calls.counts["judge"] == 2
    assert "candidate 7 does not exist (1-3)" in asked[1] and "calling the Pick tool" in asked[1]
    assert '"winner": 7' in asked[1]  # the previous answer, quoted


def test_a_pick_call_unreadable_twice_leaves_the_first_successful_result():
    calls = Calls()
    out, _ = run(team_graph(calls, judge=lambda r: tool_call("Pick", {"reason": "all fine"})))
    record = out["tasks"]["1"]["team"]
    assert record["winner"] == "careful" and "could not be read, twice" in record["reason"]
    assert calls.counts["judge"] == 2 and record["model_calls"] == 2


def test_the_voters_score_through_the_ballot_tool():
    calls = Calls()
    votes = {
        "careful": scores((1, 6), (2, 8)),  # fast, thorough
        "fast": scores((1, 7), (2, 5)),  # careful, thorough
        "thorough": tool_call("Ballot", {"scores": [{"candidate": "1", "score": "7"}, {"candidate": 2, "score": 9}]}),
    }
    out, events = run(team_graph(calls, merge="vote", votes=votes))
    record = out["tasks"]["1"]["team"]
    assert record["scores"] == {"1.m1": 14, "1.m2": 15, "1.m3": 13} and record["winner"] == "fast"


def test_an_unreadable_ballot_is_dropped_and_noted():
    calls = Calls()
    votes = {
        "careful": tool_call("Ballot", {"scores": []}),
        "fast": scores((1, 7), (2, 9)),  # careful, thorough
        "thorough": scores((1, 2), (2, 10)),  # careful, fast
    }
    out, _ = run(team_graph(calls, merge="vote", votes=votes))
    record = out["tasks"]["1"]["team"]
    assert record["winner"] == "fast" and "careful's vote could not be read" in record["reason"]


def test_the_judge_fuses_through_the_fusion_tool():
    calls = Calls()
    out, _ = run(team_graph(calls, merge="fusion", judge=lambda r: tool_call("Fusion", {"result": "all of it"})))
    assert out["tasks"]["1"]["result"] == "all of it"


def test_an_empty_fusion_falls_back_to_the_first_result():
    calls = Calls()
    out, _ = run(team_graph(calls, merge="fusion", judge=lambda r: tool_call("Fusion", {"result": " "})))
    record = out["tasks"]["1"]["team"]
    assert out["tasks"]["1"]["result"] == "answer from careful" and "could not be used" in record["reason"]


# --------------------------------------------------------------------------- the readers


def structured(reply) -> dict:
    """A structured answer as `with_structured_output(..., include_raw=True)` gives it."""
    return {"raw": reply, "parsed": None, "parsing_error": None}


def test_the_readers_take_tool_calls_loosely_and_text_as_the_fallback():
    names = list(MEMBERS)
    pick = read_pick(names)
    assert pick(structured(AIMessage("", tool_calls=[tool_call("Pick", {"winner": "2", "reason": "x"})]))) == (1, "x")
    assert pick(structured(AIMessage("<think>1?</think>I pick candidate 3.")))[0] == 2
    ballot = read_ballot(names[:2])
    assert ballot(structured(AIMessage("", tool_calls=[scores((1, 70), (2, 40))]))) == {0: 7, 1: 4}
    assert ballot(structured(AIMessage("Candidate 1: 7/10\nCandidate 2: 5/10"))) == {0: 7, 1: 5}
    assert read_fused(structured(AIMessage("", tool_calls=[tool_call("Fusion", {"result": "both"})]))) == "both"
    assert read_fused(structured(AIMessage("Here is the combined result:\nboth"))) == "both"


def test_the_readers_take_calls_written_as_text():
    names = list(MEMBERS)
    qwen = '<think>3 is best?</think><tool_call>{"name": "Pick", "arguments": {"winner": 2, "reason": "x"}}</tool_call>'
    assert read_pick(names)(structured(AIMessage(qwen))) == (1, "x")
    mistral = '[TOOL_CALLS] [{"name": "Ballot", "arguments": {"scores": [{"candidate": 1, "score": 7}]}}]'
    assert read_ballot(names[:1])(structured(AIMessage(mistral))) == {0: 7}
    llama = '<|python_tag|>{"name": "Fusion", "parameters": {"result": "both"}}'
    assert read_fused(structured(AIMessage(llama))) == "both"
    with pytest.raises(UnreadableInput, match="cut off"):
        read_fused(structured(AIMessage('<tool_call>{"name": "Fusion", "arguments": {"result": "bo')))
