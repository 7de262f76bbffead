"""The router is an ordered list of named rules, each owned by a feature; the first that decides wins."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from replangraph import AgentConfig
from replangraph.context.window_monitor import ContextMonitor
from replangraph.names import COMPRESSOR, EXECUTOR, FINALIZE, REPLANNER
from replangraph.nodes.human.hooks import human_rules
from replangraph.nodes.teams.names import TEAM, TEAM_MERGE
from replangraph.nodes.teams.routing import team_rules
from replangraph.nodes.teams.teams import Team
from replangraph.queue.tasks import PLAN_MESSAGE_TASKS, new_task
from replangraph.routing import HOLD, Route, Rule, default_rules, make_router, next_turn

CONFIG = AgentConfig()


def names(rules) -> list[str]:
    return [rule.name for rule in rules]


def test_the_engine_s_rules_alone():
    assert names(default_rules(ContextMonitor(CONFIG), {})) == [
        "unanswered_tool_calls",
        "replan_requested",
        "budget_spent",
        "dispatch",
    ]


def test_features_rules_take_their_stages_in_a_documented_order_with_an_owner_each():
    rules = default_rules(ContextMonitor(CONFIG), {}, rules=human_rules())
    assert names(rules) == [
        "cancelled",
        "slash_command",
        "plan_review",
        "unanswered_tool_calls",
        "replan_requested",
        "budget_spent",
        "questions",
        "dispatch",
    ]
    assert {rule.owner for rule in rules} == {"human", "execution", "planning", "engine"}


def test_teams_add_their_rules_ahead_of_the_budget_and_the_dispatch_steps():
    before, task_rules = team_rules({"panel": Team(members=["default", "default"])})
    rules = default_rules(ContextMonitor(CONFIG), {}, rules=[*human_rules(), *before], task_rules=task_rules)
    assert names(rules).index("merge_on_spent_budget") == names(rules).index("budget_spent") - 1
    assert [r.owner for r in before + task_rules] == ["teams", "teams"]


def test_the_first_rule_that_decides_wins():
    seen = []

    def never(route: Route):
        seen.append("never")
        return None

    def always(route: Route):
        seen.append("always")
        return REPLANNER

    route = make_router(CONFIG, [Rule("never", "test", never), Rule("always", "test", always), Rule("x", "t", never)])
    assert route({"tasks": {}}) == REPLANNER
    assert seen == ["never", "always"]


def test_no_rule_deciding_finalizes():
    assert make_router(CONFIG, [])({"tasks": {}}) == FINALIZE


def queue(*tasks):
    return {t["id"]: t for t in tasks}


def test_a_team_task_holds_no_slot_and_merges_once_its_members_ended():
    before, task_rules = team_rules({"panel": Team(members=["default", "default"])})
    rules = default_rules(ContextMonitor(CONFIG), {}, rules=before, task_rules=task_rules)
    route = make_router(CONFIG, rules)
    team = {**new_task("1", "x", position=[0], agent_type="panel"), "status": "in_progress"}
    team["team"] = {"members": ["1.m1", "1.m2"]}
    member = {**new_task("1.m1", "x", position=[0, 0], parent_id="1"), "status": "completed"}
    running = {**new_task("1.m2", "x", position=[0, 1], parent_id="1"), "status": "in_progress"}
    waiting = route({"tasks": queue(team, member, running), "windows": {}})
    assert [s.node for s in waiting] == [EXECUTOR]  # the member's turn; the team's task waits (HOLD)
    ended = route({"tasks": queue(team, member, {**running, "status": "completed"}), "windows": {}})
    assert ended == [TEAM_MERGE]
    ready = route({"tasks": queue({**new_task("2", "y", position=[1], agent_type="panel")}), "windows": {}})
    assert [s.node for s in ready] == [TEAM] and ready[0].arg["queue_size"] == 1
    assert HOLD not in ended


def test_a_rule_in_no_known_stage_is_refused():
    import pytest

    with pytest.raises(ValueError, match="stage"):
        default_rules(ContextMonitor(CONFIG), {}, rules=[Rule("odd", "test", lambda route: None, "later")])


def test_a_follow_up_gets_its_parents_inputs_instead_of_its_parents_result():
    from replangraph.queue.plans import split_task
    from replangraph.routing import subtask_inputs

    def done(task, result):
        return {**task, "status": "completed", "result": result}

    data = done(new_task("data", "Read records 1-8", position=[0]), "record-1 ... record-8")
    rank = done(new_task("rank", "Rank every record", position=[1], depends_on=["data"]), "ranked 1-4")
    tasks = {"data": data, "rank": rank}
    [child] = split_task(tasks, "rank", [{"content": "Rank records 5-8"}], agent_types=["default"], **LIMITS).values()
    tasks[child["id"]] = done(child, "ranked 5-6")
    [grandchild] = split_task(tasks, child["id"], [{"content": "Rank 7-8"}], agent_types=["default"], **LIMITS).values()
    assert [t["id"] for t in subtask_inputs(tasks, rank)] == ["data"]
    assert [t["id"] for t in subtask_inputs(tasks, child)] == ["data"]  # not rank's "ranked 1-4"
    assert [t["id"] for t in subtask_inputs(tasks, grandchild)] == ["data"]


LIMITS = {"max_tasks": 10, "max_split_depth": 3}


def test_a_window_sent_to_the_compressor_carries_a_bounded_plan():
    """The plan re-injected with a summary is the plan message (`PLAN_MESSAGE_TASKS` tasks listed, the rest
    counted), not a line per task: a compression's bytes and work do not grow with the queue."""
    tasks = {str(i): new_task(str(i), f"note {i}", position=(i,)) for i in range(500)}
    running = tasks["0"] = {**tasks["0"], "status": "in_progress", "context_overflow": {"tokens": 9_999}}
    state = {"tasks": tasks, "windows": {"0": [HumanMessage("a long window")]}}
    route = Route(state, CONFIG, tasks, state["windows"], [running])
    send = next_turn(ContextMonitor(CONFIG), {})(route, running)
    assert send.node == COMPRESSOR
    plan = send.arg["plan"]
    listed = [line for line in plan.splitlines() if line.lstrip().startswith("- [")]
    assert plan.startswith("**Plan**: 0 of 500 done") and len(listed) == PLAN_MESSAGE_TASKS
    assert f"{500 - PLAN_MESSAGE_TASKS} more" in plan and "0: note 0" in plan
