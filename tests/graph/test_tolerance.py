"""Whole runs with models that behave like real ones, not like our script."""

from __future__ import annotations

import warnings

import httpx
import pytest
from clocks import FakeClock
from langchain_core.messages import AIMessage
from langchain_openai.chat_models.base import OpenAIConnectionError, OpenAITimeoutError
from scripting import is_replan, kept, make_model, plan_of, run, subtask_of

import replangraph.clock as process_clock
from replangraph import AgentConfig, AgentProfile, build_graph
from replangraph.queue.tasks import ordered
from replangraph.testing import ScriptedChatModel, tool_call

FAST = {"retry_backoff_s": 0.0}
REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


def task(task_id, content, depends_on=(), agent_type=None):
    spec = {"id": task_id, "content": content, "depends_on": list(depends_on)}
    return {**spec, "agent_type": agent_type} if agent_type else spec


def statuses(state):
    return {t["id"]: t["status"] for t in ordered(state["tasks"])}


def test_invented_agent_types_in_plan_and_split_run_as_the_parent_s_type():
    def work(request):
        if "1_dyn" in request.prompt:
            return "rest of the items"
        if not request.tool_results:
            tasks = [{"content": "read the rest", "agent_type": "browser"}]
            return tool_call("replan_split_and_handoff", {"summary": "first items", "tasks": tasks})
        return "unexpected"

    plan = plan_of(task("1", "read the items", agent_type="browser"))
    state, events = run(build_graph(make_model(plan, work), config=AgentConfig(**FAST)))
    assert statuses(state) == {"1": "completed", "1_dyn_0": "completed"}
    assert {t["agent_type"] for t in state["tasks"].values()} == {"default"}
    [created] = [e for e in events if e["event"] == "plan_created"]
    assert "'browser' does not exist" in created["notes"][0]
    [added] = [e for e in events if e["event"] == "dynamic_tasks_added"]
    assert "'browser' does not exist" in added["notes"][0]
    assert "first items" in state["final_answer"] and "rest of the items" in state["final_answer"]


def test_a_repeated_refused_split_ends_the_subtask_and_the_replanner_takes_over_the_rest():
    bad = {"summary": "#1 A\n#2 B", "tasks": {"from": 3, "to": 4}}
    calls = {"bad": 0}

    def work(request):
        if "3-4" in subtask_of(request):
            return "#3 C\n#4 D"
        calls["bad"] += 1
        return tool_call("replan_split_and_handoff", bad, call_id=f"bad{len(request.tool_results)}")

    def replan(request):
        assert "repeated a refused replan_split_and_handoff call" in request.prompt
        assert "Partial result (kept): #1 A\n#2 B" in request.prompt
        return plan_of(task("r", "Extract items 3-4"))

    graph = build_graph(
        make_model(plan_of(task("1", "Extract items 1-4")), work, replan=replan),
        config=AgentConfig(**FAST, verify_results=False),
    )
    state, events = run(graph)
    assert calls["bad"] == 2  # refused once, repeated once, then stopped: not max_step_iterations
    assert statuses(state) == {"1": "completed", "r": "completed"}
    assert state["tasks"]["1"]["result"] == "#1 A\n#2 B"
    for item in ("#1 A", "#2 B", "#3 C", "#4 D"):  # the partial result reaches the final answer
        assert item in state["final_answer"]


def test_replanner_failure_skips_only_the_flagged_task_s_dependents():
    def work(request):
        if subtask_of(request) == "fetch prices":
            return "[REPLAN] the shop is down"
        return f"did {subtask_of(request)}"

    def replan(request):
        raise ValueError("replanner model rejected the request")

    plan = plan_of(
        task("a", "fetch prices"),
        task("b", "compare prices", ["a"]),
        task("c", "fetch specs"),
        task("d", "compare specs", ["c"]),
    )
    config = AgentConfig(**FAST, single_agent_fallback=False)  # about the report: no fallback before it
    state, events = run(build_graph(make_model(plan, work, replan=replan), config=config))
    assert statuses(state) == {"a": "failed", "b": "skipped", "c": "completed", "d": "completed"}
    [record] = state["replans"]
    assert record["outcome"] == "gave_up" and record["skipped_task_ids"] == ["b"]
    assert "did compare specs" in state["final_answer"]


def test_chatopenai_error_classes_are_retried():
    failures = [OpenAITimeoutError(request=REQUEST), OpenAIConnectionError(request=REQUEST)]

    def work(request):
        if failures:
            raise failures.pop(0)
        return "made it"

    state, _ = run(
        build_graph(make_model(plan_of(task("a", "x")), work), config=AgentConfig(**FAST, verify_results=False))
    )
    assert state["tasks"]["a"]["status"] == "completed" and state["tasks"]["a"]["model_calls"] == 3


def test_content_blocks_everywhere():
    def blocks(text):
        return AIMessage(content=[{"type": "text", "text": text}, {"type": "reasoning", "reasoning": "hmm"}])

    def respond(request):
        if is_replan(request):
            return blocks('```json\n{"tasks": [{"id": "r", "content": "try the archive"}]}\n```')
        if "Plan" in request.tool_names:
            return blocks('{"tasks": [{"id": "a", "content": "fetch the data"}]}')
        if request.tool_names:
            if subtask_of(request) == "fetch the data":
                return blocks("got nothing [REPLAN] the page is gone")
            if not request.tool_results:
                call = tool_call("replan_review_context", {})
                return AIMessage(content=[{"type": "text", "text": "Let me look."}], tool_calls=[call])
            return blocks("archived data: 42")
        return blocks("FINAL: " + request.prompt.split("Subtask results, in plan order:")[1].strip())

    state, _ = run(build_graph(ScriptedChatModel(respond=respond), config=AgentConfig(**FAST)))
    assert statuses(state) == {"a": "failed", "r": "completed"}
    assert state["tasks"]["r"]["result"] == "archived data: 42"
    assert state["final_answer"].startswith("FINAL:") and "archived data: 42" in state["final_answer"]


def test_a_crash_inside_a_step_fails_that_subtask_not_the_run():
    agents = {"broken": AgentProfile(prompt=None, description="misconfigured")}  # crashes the executor
    plan = plan_of(task("a", "use the broken agent", agent_type="broken"), task("b", "plain work"))
    config = AgentConfig(max_replans=0, single_agent_fallback=False)  # the crash's record, not a fallback's answer
    graph = build_graph(make_model(plan, lambda r: "done"), agents=agents, config=config)
    state, _ = run(graph)
    assert statuses(state) == {"a": "failed", "b": "completed"}
    assert state["tasks"]["a"]["error"].startswith("executor crashed: TypeError")


def test_a_budget_stop_names_the_limit_and_the_value_that_would_have_let_it_finish():
    def work(request):
        return f"done {subtask_of(request)}"

    plan = plan_of(*(task(str(i), f"job {i}") for i in range(6)))
    state, _ = run(build_graph(make_model(plan, work), config=AgentConfig(max_steps=3, verify_results=False)))
    assert "max_steps=3 was used up (the work queued so far needs at least max_steps=6)" in state["final_answer"]


def test_a_subtask_stopped_by_the_budget_keeps_what_it_had_read():
    def read(page: int) -> str:
        """Read a page."""
        return f"page {page}: item-{page}"

    def work(request):
        return tool_call("read", {"page": len(request.tool_results) + 1})

    graph = build_graph(
        make_model(plan_of(task("a", "read everything")), work), tools=[read], config=AgentConfig(max_steps=3)
    )
    state, _ = run(graph)
    stopped = state["tasks"]["a"]
    assert stopped["status"] == "failed" and "its window is kept as output a/window-at-failure" in stopped["error"]
    saved = kept(state, "a")
    outputs = sorted(text for key, text in saved.items() if key != "window-at-failure")
    assert outputs == ["page 1: item-1", "page 2: item-2", "page 3: item-3"]
    assert all(text in saved["window-at-failure"] for text in outputs)


def test_a_step_timeout_holds_across_retries(monkeypatch):
    """On a clock that moves only with the calls and the waits: the wait before the retry is cut to the time the
    step has left, and no try starts once it is spent, though five retries were allowed."""
    clock = FakeClock()
    monkeypatch.setattr(process_clock, "time", clock)  # the step's clock, and the retry waits' sleep
    calls = []

    def work(request):
        if subtask_of(request) != "x":
            return "the fallback's answer"
        calls.append(clock.now)
        clock.advance(36.0)  # the call fails after 36 of the step's 60 s
        raise OpenAIConnectionError(request=REQUEST)

    config = AgentConfig(step_timeout_s=60.0, retry_backoff_s=48.0, model_retries=5, max_replans=0)
    state, _ = run(build_graph(make_model(plan_of(task("a", "x")), work), config=config))
    assert state["tasks"]["a"]["error"] == "step exceeded step_timeout_s=60.0"
    assert len(calls) == 1  # one try: the retry found no time left
    assert clock.slept == [pytest.approx(24.0)]  # the wait was what was left, not the 36-60 s backoff


def test_a_split_refused_by_max_tasks_is_named_in_the_report():
    def work(request):
        if "_dyn_" in request.prompt or "rest" in subtask_of(request):
            return "rest"
        tasks = [{"content": f"part {i}"} for i in range(5)]
        return tool_call("replan_split_and_handoff", {"summary": "first part", "tasks": tasks})

    def replan(request):
        return plan_of()

    graph = build_graph(
        make_model(plan_of(task("1", "all parts")), work, replan=replan), config=AgentConfig(max_tasks=3, **FAST)
    )
    state, _ = run(graph)
    assert "max_tasks=3 refused follow-up tasks; max_tasks=6 would have let them in" in state["final_answer"]
    assert "first part" in state["final_answer"]  # the partial result is in the report


class OwnClientModel(ScriptedChatModel):
    """A chat model whose own (non-OpenAI) client retries, as ChatAnthropic's does (``max_retries``)."""

    max_retries: int = 2


def test_stacked_retries_are_warned_about_only_where_they_cannot_be_turned_off():
    from langchain_openai import ChatOpenAI

    with pytest.warns(UserWarning, match=r"model \(max_retries=2\) retries failed requests itself"):
        build_graph(OwnClientModel(respond=lambda request: "x"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_graph(ChatOpenAI(model="m", api_key="k"))  # its client's retries are off for replangraph's calls
        build_graph(OwnClientModel(respond=lambda request: "x", max_retries=0))
        build_graph(OwnClientModel(respond=lambda request: "x"), config=AgentConfig(model_retries=0))


def invalid_call(name, args, call_id="bad1"):
    return {"name": name, "args": args, "id": call_id, "error": "not valid JSON", "type": "invalid_tool_call"}


def test_tool_arguments_a_provider_could_not_parse_are_read_leniently():
    def work(request):
        if "1_dyn" in request.prompt:
            return "the rest"
        args = '```json\n{"summary": "first half", "tasks": ["the second half"]}\n```'
        return AIMessage(content="", invalid_tool_calls=[invalid_call("replan_split_and_handoff", args)])

    state, _ = run(build_graph(make_model(plan_of(task("1", "do it all")), work), config=AgentConfig(**FAST)))
    assert statuses(state) == {"1": "completed", "1_dyn_0": "completed"}
    assert state["tasks"]["1"]["result"] == "first half"


def test_tool_calls_without_an_id_get_one_and_their_answers_name_it():
    def work(request):
        if "1_dyn" in request.prompt:
            return "the rest"
        split = {"name": "replan_split_and_handoff", "args": {"summary": "half", "tasks": ["rest"]}, "id": None}
        return AIMessage(content="", tool_calls=[split])  # as some local servers send them

    state, _ = run(build_graph(make_model(plan_of(task("1", "do it all")), work), config=AgentConfig(**FAST)))
    assert statuses(state) == {"1": "completed", "1_dyn_0": "completed"}
    assert state["tasks"]["1"]["result"] == "half"


def test_unreadable_arguments_get_an_error_the_model_can_fix():
    def lookup(city: str) -> str:
        """Weather of a city."""
        return f"{city}: sunny"

    def work(request):
        if not request.tool_results:
            return AIMessage(content="", invalid_tool_calls=[invalid_call("lookup", '{"city": "Oslo",,')])
        if len(request.tool_results) == 1:
            [error] = request.tool_results
            assert error.status == "error" and "could not be read" in error.content
            return tool_call("lookup", {"city": "Oslo"})
        return request.tool_results[-1].content

    graph = build_graph(make_model(plan_of(task("a", "weather")), work), tools=[lookup], config=AgentConfig(**FAST))
    state, _ = run(graph)
    assert state["tasks"]["a"]["result"] == "Oslo: sunny"


def test_a_tool_call_written_as_text_is_run_and_other_json_answers_stay_answers():
    def lookup(city: str) -> str:
        """Weather of a city."""
        return f"{city}: sunny"

    def work(request):
        if subtask_of(request) == "report as json":
            return '```json\n{"name": "Oslo", "weather": "sunny"}\n```'  # an answer that happens to be JSON
        if not request.tool_results:
            return '{"name": "lookup", "arguments": {"city": "Bergen"}}'  # a local server without a tool parser
        return request.tool_results[-1].content

    plan = plan_of(task("a", "weather"), task("b", "report as json"))
    state, _ = run(build_graph(make_model(plan, work), tools=[lookup], config=AgentConfig(**FAST)))
    assert state["tasks"]["a"]["result"] == "Bergen: sunny"
    assert '"weather": "sunny"' in state["tasks"]["b"]["result"]


def test_absurdly_nested_arguments_are_refused_without_recursion_errors_even_with_a_checkpointer():
    from langgraph.checkpoint.memory import InMemorySaver

    deep: list = [{"content": "x"}]
    for _ in range(10_000):
        deep = [deep]
    seen = []

    def work(request):
        if not request.tool_results:
            return tool_call("replan_split_and_handoff", {"summary": "#1 A", "tasks": deep}, call_id="c1")
        seen.append(request.tool_results[-1].content)
        return "#1 A"

    graph = build_graph(
        make_model(plan_of(task("1", "job")), work), config=AgentConfig(**FAST), checkpointer=InMemorySaver()
    )
    state, _ = run(graph)
    assert state["tasks"]["1"]["status"] == "completed"
    assert "nests more than 20 levels deep" in seen[0]


def test_a_final_answer_that_is_cut_off_json_is_no_answer_and_the_report_says_so():
    broken = '{"tasks": [{"id": "1", "content": "find the'

    def respond(request):  # every request, the planner's and the checks' included, gets the same broken JSON
        return broken

    state, _ = run(build_graph(ScriptedChatModel(respond=respond), config=AgentConfig(**FAST)), goal="Where is Lima?")
    answer = state["final_answer"]
    assert answer != broken and answer.startswith("The run for this goal stopped before it was finished: ")
    assert (
        state["stop_reason"]
        == "the model's final answer was JSON that ends before its brackets close (cut off, unreadable)"
    )
    assert state["stop_reason"] in answer


@pytest.mark.parametrize("answer", ['```json\n{"city": "Lima", "country": "Peru"}\n```', "[1] Lima is in Peru."])
def test_a_final_answer_in_json_or_in_brackets_stays_the_answer(answer):
    plan = plan_of(task("a", "where is Lima"))
    model = make_model(plan, lambda request: "Lima is in Peru.", final=lambda request: answer)
    state, _ = run(build_graph(model, config=AgentConfig(**FAST, verify_results=False)))
    assert state["final_answer"] == answer and not state["stop_reason"]
