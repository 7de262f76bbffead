"""Rule-based decomposition used when the planner model keeps failing."""

from __future__ import annotations

from replangraph.nodes.planning.rule_plan import clause_kind, rule_based_plan, split_clauses
from replangraph.queue.plans import validate_plan


def shape(goal):
    plan = rule_based_plan(goal)
    return None if plan is None else [(t["id"], t["depends_on"]) for t in plan]


def test_gather_analyse_write_chain():
    goal = "Find the prices of the three cheapest flights to Oslo, compare them and write a short report"
    assert shape(goal) == [("1", []), ("2", ["1"]), ("3", ["2"])]
    plan = rule_based_plan(goal)
    assert plan[0]["content"].startswith("Find the prices of the three cheapest flights to Oslo")
    assert plan[1]["content"].startswith("Compare them")
    assert plan[2]["content"] == "Write a short report"  # the whole goal is in every subtask's prompt anyway
    validate_plan(plan, agent_types=["default"])


def test_more_clauses_than_max_tasks_merge_into_one_task_per_kind():
    goal = "Find A, find B, find C, compare them and write a report"
    assert len(rule_based_plan(goal)) == 5
    merged = rule_based_plan(goal, max_tasks=3)
    assert [(t["content"], t["depends_on"]) for t in merged] == [
        ("Find A; find B; find C", []),
        ("Compare them", ["1"]),
        ("Write a report", ["2"]),
    ]
    assert rule_based_plan(goal, max_tasks=2) is None  # three kinds cannot fit: the single-task fallback


def test_several_gathers_feed_the_analysis():
    goal = "Search for laptop reviews; look up their prices; then compare them"
    assert shape(goal) == [("1", []), ("2", []), ("3", ["1", "2"])]


def test_write_step_depends_on_gathers_when_there_is_no_analysis():
    assert shape("Collect the release notes of 3.12, then summarise them") == [("1", []), ("2", ["1"])]


def test_nouns_joined_by_and_stay_in_one_clause():
    assert split_clauses("Look up the population of Norway and Sweden and compare them") == [
        "Look up the population of Norway and Sweden",
        "compare them",
    ]


def test_goals_without_known_verbs_or_with_one_step_give_no_plan():
    assert rule_based_plan("Hello there") is None
    assert rule_based_plan("Write a poem about autumn") is None
    assert rule_based_plan("The weather, and then compare it") is None


def test_clause_kind():
    assert clause_kind("look up the docs") == "gather"
    assert clause_kind("Analyze the logs") == "analysis"
    assert clause_kind("summarize") == "final"
    assert clause_kind("lookout for birds") is None
