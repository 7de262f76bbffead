"""planner node: valid plans, retries with the error fed back, and the single-task fallback."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from replangraph.config import AgentConfig, AgentProfile, resolve_profiles
from replangraph.nodes.planner import Planner
from replangraph.queue import RESET
from replangraph.scripted import ScriptedChatModel, ScriptedRequest, tool_call

GOAL = "Compare the three cheapest flights to Oslo"
RETRY_MARK = "could not be used"


def planner_for(respond, agents=None, **config) -> Planner:
    profiles = resolve_profiles(agents, ())
    return Planner(ScriptedChatModel(respond=respond), profiles, AgentConfig(**config))


def plan_call(*tasks):
    return tool_call("Plan", {"tasks": list(tasks)})


def task(task_id, content="do something", depends_on=(), agent_type="default"):
    return {"id": task_id, "content": content, "depends_on": list(depends_on), "agent_type": agent_type}


def retries_in(request: ScriptedRequest) -> int:
    return request.prompt.count(RETRY_MARK)


def test_valid_plan_becomes_pending_tasks_in_order():
    planner = planner_for(lambda r: plan_call(task("search"), task("compare", depends_on=["search"])))
    update = planner({"messages": [("user", GOAL)]})
    tasks = update["tasks"]
    assert tasks[RESET] is True
    assert [tasks[i]["position"] for i in ("search", "compare")] == [[0], [1]]
    assert tasks["compare"]["depends_on"] == ["search"]
    assert all(tasks[i]["status"] == "pending" for i in ("search", "compare"))
    assert update["goal"] == GOAL and update["planner_calls"] == 1
    assert "messages" not in update  # the goal already is a message


def test_garbage_is_retried_twice_with_the_error_then_falls_back():
    prompts = []

    def respond(request):
        prompts.append(request.prompt)
        return "I think you should just book the first one."  # never a Plan tool call

    tasks, calls, error = planner_for(respond).plan(GOAL)
    assert calls == 3
    assert list(tasks) == ["1"] and tasks["1"]["content"] == GOAL
    assert "not a valid Plan" in error
    assert [p.count(RETRY_MARK) for p in prompts] == [0, 1, 1]
    assert "just book the first one" in prompts[1]


def test_invalid_plan_is_corrected_on_retry():
    def respond(request):
        if retries_in(request) == 0:
            return plan_call(task("a", depends_on=["b"]), task("b", depends_on=["a"]))
        assert "dependency cycle" in request.prompt
        return plan_call(task("a"), task("b", depends_on=["a"]))

    tasks, calls, error = planner_for(respond).plan(GOAL)
    assert list(tasks) == ["a", "b"] and calls == 2 and error == ""


def test_unknown_agent_type_is_an_invalid_plan():
    agents = {"browser": AgentProfile(description="reads web pages")}

    def respond(request):
        assert "- browser: reads web pages" in request.system
        if retries_in(request) == 0:
            return plan_call(task("a", agent_type="painter"))
        assert "unknown agent_type 'painter'" in request.prompt
        return plan_call(task("a", agent_type="browser"))

    tasks, _, _ = planner_for(respond, agents=agents).plan(GOAL)
    assert tasks["a"]["agent_type"] == "browser"


def test_plan_over_max_tasks_is_rejected():
    many = [task(str(i)) for i in range(5)]
    tasks, calls, error = planner_for(lambda r: plan_call(*many), max_tasks=3).plan(GOAL)
    assert calls == 3 and list(tasks) == ["1"] and "limit is 3" in error


def test_model_that_raises_falls_back_without_crashing():
    def respond(request):
        raise ConnectionError("no route to host")

    tasks, calls, error = planner_for(respond, planner_retries=1).plan(GOAL)
    assert calls == 2 and list(tasks) == ["1"] and "no route to host" in error


def test_malformed_plan_arguments_are_retried():
    def respond(request):
        if retries_in(request) == 0:
            return tool_call("Plan", {"tasks": "not a list"})
        return plan_call(task("only"))

    tasks, calls, _ = planner_for(respond).plan(GOAL)
    assert list(tasks) == ["only"] and calls == 2


def test_goal_key_is_used_when_the_last_message_is_not_human():
    planner = planner_for(lambda r: plan_call(task("x", content=r.prompt)))
    update = planner({"messages": [AIMessage("earlier answer")], "goal": GOAL})
    assert update["goal"] == GOAL
    assert update["messages"][0].content == GOAL
    assert update["tasks"]["x"]["content"] == GOAL
