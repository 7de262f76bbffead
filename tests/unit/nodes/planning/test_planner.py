"""planner node: valid plans, lenient reading, retries with the error fed back, and the fallbacks."""

from __future__ import annotations

import json

import httpx
import pytest
from langchain_core.messages import AIMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai.chat_models.base import OpenAIRateLimitError

import replangraph.clock as process_clock
from replangraph.config import AgentConfig, AgentProfile, resolve_profiles
from replangraph.context.window_monitor import ContextMonitor
from replangraph.nodes.planning.planner import (
    RETRY_ERROR_CHARS,
    RETRY_PREVIOUS_CHARS,
    Planner,
    plan_schema,
    retry_quotes,
    retry_room,
)
from replangraph.queue.tasks import RESET
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

GOAL = "Compare the three cheapest flights to Oslo"
RETRY_MARK = "could not be used"
FAST = {"retry_backoff_s": 0.0}


def planner_for(respond, agents=None, **config) -> Planner:
    profiles = resolve_profiles(agents, ())
    return Planner(ScriptedChatModel(respond=respond), profiles, AgentConfig(**{**FAST, **config}))


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


def test_schema_lists_agent_types_as_an_enum_and_hides_the_field_when_only_default_exists():
    def task_properties(types):
        parameters = convert_to_openai_tool(plan_schema(types))["function"]["parameters"]
        return parameters["properties"]["tasks"]["items"]["properties"]

    assert "agent_type" not in task_properties(["default"])
    assert task_properties(["default", "browser"])["agent_type"]["enum"] == ["default", "browser"]


def test_the_planners_schema_asks_what_the_answer_should_be_and_the_replanners_does_not():
    def plan_properties(**given):
        return convert_to_openai_tool(plan_schema(["default"], **given))["function"]["parameters"]["properties"]

    assert plan_properties(answer_form=True)["answer_form"]["enum"] == ["items", "short"]
    assert "answer_form" not in plan_properties()  # the replanner's
    (shown,) = planner_for(lambda r: plan_call(task("1"))).tools
    assert "answer_form" in shown["function"]["parameters"]["properties"]  # the schema the planner's budget counts


@pytest.mark.parametrize(
    ("said", "kept"), [("short", "short"), (" Items ", "items"), ("brief", ""), (None, ""), (7, "")]
)
def test_the_plan_says_what_the_final_answer_should_be_and_anything_else_is_not_said(said, kept):
    answer = {"tasks": [task("1")], **({} if said is None else {"answer_form": said})}
    update = planner_for(lambda r: tool_call("Plan", answer))({"messages": [("user", GOAL)]})
    assert update["answer_form"] == kept


def test_a_fallback_plan_says_nothing_of_the_answer():
    update = planner_for(lambda r: "no plan here", planner_retries=0)({"messages": [("user", GOAL)]})
    assert update["answer_form"] == ""


def test_garbage_is_retried_twice_with_the_error_then_falls_back():
    prompts = []

    def respond(request):
        prompts.append(request.prompt)
        return "I think you should just book the first one."  # never a plan

    tasks, calls, error, _ = planner_for(respond).plan(GOAL)
    assert calls == 3
    assert list(tasks) == ["1"] and tasks["1"]["content"] == GOAL
    assert "not valid JSON" in error
    assert [p.count(RETRY_MARK) for p in prompts] == [0, 1, 1]
    assert "just book the first one" in prompts[1]


def test_invalid_plan_is_corrected_on_retry():
    def respond(request):
        if retries_in(request) == 0:
            return plan_call(task("a", depends_on=["b"]), task("b", depends_on=["a"]))
        assert "dependency cycle" in request.prompt
        return plan_call(task("a"), task("b", depends_on=["a"]))

    tasks, calls, error, _ = planner_for(respond).plan(GOAL)
    assert list(tasks) == ["a", "b"] and calls == 2 and error == ""


def test_unknown_agent_type_runs_as_default_with_a_note_and_no_retry():
    agents = {"browser": AgentProfile(description="reads web pages")}

    def respond(request):
        assert "- browser: reads web pages" in request.system
        assert retries_in(request) == 0
        return plan_call(task("a", agent_type="painter"), task("b", agent_type="Browser"))

    planner = planner_for(respond, agents=agents)
    tasks, calls, _, notes = planner.plan(GOAL)
    assert calls == 1
    assert tasks["a"]["agent_type"] == "default" and tasks["b"]["agent_type"] == "browser"
    assert notes == ["agent type 'painter' does not exist (known: browser, default); task a runs as 'default'"]


def test_plan_event_carries_the_notes():
    events = []
    planner = planner_for(lambda r: plan_call(task("a", agent_type="researcher")))
    import replangraph.nodes.planning.planner as planner_module

    original = planner_module.emit
    planner_module.emit = lambda name, **payload: events.append((name, payload))
    try:
        planner({"messages": [("user", GOAL)]})
    finally:
        planner_module.emit = original
    [(name, payload)] = events
    assert name == "plan_created" and "'researcher' does not exist" in payload["notes"][0]


def test_plan_as_fenced_json_text_numbers_for_ids_and_loose_dependencies_is_accepted():
    text = """Here is the plan:
```json
{"tasks": [{"id": 1, "task": "search flights"},
           {"id": 2, "description": "compare them", "depends_on": "task 1"},
           {"id": 3, "content": "write it up", "dependencies": [1, 2]}]}
```"""
    tasks, calls, error, notes = planner_for(lambda r: AIMessage(content=[{"type": "text", "text": text}])).plan(GOAL)
    assert calls == 1 and error == ""
    assert [(t["id"], t["content"], t["depends_on"]) for t in tasks.values()] == [
        ("1", "search flights", []),
        ("2", "compare them", ["1"]),
        ("3", "write it up", ["1", "2"]),
    ]
    assert notes == ["task '2': dependency 'task 1' read as '1'"]


def test_tasks_sent_as_a_json_string_inside_the_call_are_accepted():
    args = {"tasks": '[{"id": "a", "content": "search"}, {"id": "b", "content": "compare", "depends_on": ["a"]}]'}
    tasks, calls, _, _ = planner_for(lambda r: tool_call("Plan", args)).plan(GOAL)
    assert list(tasks) == ["a", "b"] and calls == 1


def test_plan_over_max_tasks_is_rejected():
    many = [task(str(i)) for i in range(5)]
    tasks, calls, error, _ = planner_for(lambda r: plan_call(*many), max_tasks=3).plan(GOAL)
    assert calls == 3 and list(tasks) == ["1"] and "limit is 3" in error


def test_model_that_keeps_failing_is_retried_with_backoff_then_falls_back():
    def respond(request):
        raise ConnectionError("no route to host")

    tasks, calls, error, _ = planner_for(respond, planner_retries=1, model_retries=2).plan(GOAL)
    assert calls == 3  # one ask, retried twice; no further asks once the model is down
    assert list(tasks) == ["1"] and "no route to host" in error


def test_a_rate_limit_window_is_waited_out(monkeypatch):
    waits, seen = [], []
    monkeypatch.setattr(process_clock, "wait", waits.append)
    monkeypatch.setattr(process_clock, "jitter", lambda: 0.0)
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")

    def respond(r):
        seen.append(1)
        if len(seen) < 3:
            response = httpx.Response(429, headers={"retry-after": "0.75"}, request=request)
            raise OpenAIRateLimitError("rate limited", response=response, body=None)
        return plan_call(task("a"))

    tasks, calls, error, _ = planner_for(respond, retry_backoff_s=0.5).plan(GOAL)
    assert list(tasks) == ["a"] and calls == 3 and error == ""
    assert waits == [0.75, 0.75]  # the provider's Retry-After each time


def test_malformed_plan_arguments_are_retried():
    def respond(request):
        if retries_in(request) == 0:
            return tool_call("Plan", {"tasks": "not a list"})
        return plan_call(task("only"))

    tasks, calls, _, _ = planner_for(respond).plan(GOAL)
    assert list(tasks) == ["only"] and calls == 2


def test_rule_based_fallback_respects_max_tasks_and_keeps_tasks_short():
    goal = ", ".join(f"find item {i}" for i in range(5_000)) + ", then write a report"
    assert len(goal) > 60_000
    tasks, _, _, _ = planner_for(lambda r: "no plan", max_tasks=10).plan(goal)
    assert 2 <= len(tasks) <= 10
    assert all(len(t["content"]) <= 300 for t in tasks.values())
    assert list(tasks.values())[-1]["depends_on"] == ["1"]


def test_single_task_fallback_holds_a_preview_of_a_huge_goal():
    goal = "x" * 200_000
    tasks, _, _, _ = planner_for(lambda r: "no plan").plan(goal)
    assert list(tasks) == ["1"] and len(tasks["1"]["content"]) <= 300


def test_goal_key_is_used_when_the_last_message_is_not_human():
    planner = planner_for(lambda r: plan_call(task("x", content=r.prompt)))
    update = planner({"messages": [AIMessage("earlier answer")], "goal": GOAL})
    assert update["goal"] == GOAL
    assert update["messages"][0].content == GOAL
    assert update["tasks"]["x"]["content"] == GOAL


# --------------------------------------------------------------------------- cut and text-format plans

BIG_PLAN = [task(str(i), f"Extract items {i * 5 - 4}-{i * 5}") for i in range(1, 98)]
CUT_MARK = "cut off"


def cut_json(tasks) -> str:
    """A plan's JSON cut by the output limit in the middle of a task: its first inner objects are whole."""
    text = json.dumps({"tasks": tasks})
    return text[: len(text) // 2]


@pytest.mark.parametrize(
    "cut",
    [
        AIMessage("", invalid_tool_calls=[{"name": "Plan", "args": cut_json(BIG_PLAN), "id": "c1", "error": None}]),
        # a streamed call whose partial parse closed the brackets: only the finish reason tells
        AIMessage(
            "", tool_calls=[tool_call("Plan", {"tasks": BIG_PLAN[:1]})], response_metadata={"finish_reason": "length"}
        ),
        AIMessage(f'<tool_call>{{"name": "Plan", "arguments": {cut_json(BIG_PLAN)}'),
        AIMessage(f"Here is the plan:\n```json\n{cut_json(BIG_PLAN)}"),
    ],
    ids=["invalid call", "finish reason length", "text call", "fenced text"],
)
def test_a_cut_plan_is_refused_and_asked_again_for_a_shorter_answer(cut):
    prompts = []

    def respond(request):
        prompts.append(request.prompt)
        return plan_call(*BIG_PLAN) if CUT_MARK in request.prompt else cut

    tasks, calls, why, _ = planner_for(respond, max_tasks=200, batch_size=5).plan(GOAL)  # 5 items a task: no merge
    assert len(tasks) == 97 and calls == 2 and why == ""  # never one task read from the cut JSON
    assert "shorter" in prompts[1]


def test_a_plan_cut_every_time_falls_back_instead_of_running_a_fragment():
    cut = AIMessage("", invalid_tool_calls=[{"name": "Plan", "args": cut_json(BIG_PLAN), "id": "c1", "error": None}])
    tasks, calls, why, _ = planner_for(lambda r: cut, max_tasks=200).plan(GOAL)
    assert calls == 3 and CUT_MARK in why
    assert [t["content"] for t in tasks.values()] != [BIG_PLAN[0]["content"]]


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "Plan", "arguments": %s}\n</tool_call>',
        '[TOOL_CALLS] [{"name": "Plan", "arguments": %s}]',
        '<|python_tag|>{"name": "Plan", "parameters": %s}<|eom_id|>',
        "<function=Plan>%s</function>",
        'I will plan first.\n```json\n{"name": "plan", "arguments": %s}\n```',
    ],
    ids=["qwen", "mistral", "llama", "llama function", "fenced"],
)
def test_a_plan_written_as_a_text_tool_call_is_read(text):
    plan = {"tasks": [task("search"), task("compare", depends_on=["search"])]}
    planner = planner_for(lambda r: "<think>two steps</think>" + text % json.dumps(plan))
    tasks, calls, why, _ = planner.plan(GOAL)
    assert list(tasks) == ["search", "compare"] and calls == 1 and why == ""


def test_a_small_window_keeps_at_most_a_quarter_for_a_retry_which_then_quotes_less():
    monitor = ContextMonitor(AgentConfig())
    full = retry_room(monitor, 2)
    assert retry_room(monitor, 2, budget=100_000) == full  # a large window keeps room for the whole retry
    assert retry_room(monitor, 2, budget=600) == 150 < full
    assert retry_room(monitor, 0, budget=600) == 0
    error_chars, previous_chars = retry_quotes(monitor, 150)
    assert error_chars < RETRY_ERROR_CHARS and previous_chars < RETRY_PREVIOUS_CHARS
    assert retry_quotes(monitor, full) == (RETRY_ERROR_CHARS, RETRY_PREVIOUS_CHARS)
