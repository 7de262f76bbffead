"""Features on Temporal (loopback server, workers as processes) give what they give in-process: a team's members
and judge as activities with the same winner; the token budget ending the run with the same stop reason; the
deadline, whose rule runs in the workflow on the run's clock, stopping the run in a way its replay repeats."""

from __future__ import annotations

import pytest
from temporal_graphs import budgeted, team_panel
from temporal_support import new_queue, on_temporal, replay, worker_process

pytestmark = pytest.mark.system  # a Temporal dev server and worker processes


def statuses(out: dict) -> dict[str, str]:
    return {t["id"]: t["status"] for t in out["tasks"].values()}


def test_a_team_keeps_the_member_the_judge_picks_as_in_process(temporal_address):
    local = team_panel().invoke({"messages": [("user", "answer it")]})
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:team_panel"):
        out, activities, pairs = on_temporal(temporal_address, queue, "answer it")
    assert statuses(out) == statuses(local) == {"1": "completed", "2": "completed"}
    team = out["tasks"]["1"]["team"]
    assert (team["strategy"], team["winner"]) == ("best", "fast") == (local["tasks"]["1"]["team"]["strategy"], "fast")
    assert out["tasks"]["1"]["result"] == local["tasks"]["1"]["result"] == "answer from fast"
    assert out["final_answer"] == local["final_answer"]
    assert [c["event"] for m, c in pairs if m == "custom" and c["event"] == "team_merged"] == ["team_merged"]


def test_the_token_budget_ends_the_run_as_in_process(temporal_address):
    local = budgeted().invoke({"messages": [("user", "look the items up")]}, {"configurable": {"thread_id": "t"}})
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:budgeted"):
        out, _, pairs = on_temporal(temporal_address, queue, "look the items up")
    assert local["stop_reason"].startswith("the token budget token_budget=2,500 was spent (")
    assert out["stop_reason"] == local["stop_reason"]
    assert statuses(out) == statuses(local)
    assert out["budget_spent"] == local["budget_spent"]
    assert [c["event"] for m, c in pairs if m == "custom" and c["event"] == "budget_spent"] == ["budget_spent"]


def test_the_deadline_stops_the_run_and_its_replay_decides_the_same(temporal_address):
    """The deadline passes midway; replayed later (every clock reading now past the deadline), the workflow's
    rules read the times its history recorded and take the same path. A rule reading the process's clock would
    stop at the first decision on replay, and the replay would fail as non-deterministic."""
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:deadlined", "3", "1"):
        out, _, pairs = on_temporal(temporal_address, queue, "look the items up")
    assert out["stop_reason"].startswith("the deadline deadline_s=3 passed (")
    done = [t for t in out["tasks"].values() if t["status"] == "completed"]
    assert 0 < len(done) < 6
    assert [c["event"] for m, c in pairs if m == "custom" and c["event"] == "deadline_passed"] == ["deadline_passed"]
    assert replay(temporal_address, queue, "temporal_graphs:deadlined", "3", "1").startswith("replayed ")
