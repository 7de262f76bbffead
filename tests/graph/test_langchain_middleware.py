"""LangChain's own middleware around the executor's calls: ``build_graph(middleware=[...])`` end to end."""

from __future__ import annotations

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    LLMToolSelectorMiddleware,
    ModelCallLimitMiddleware,
    ModelFallbackMiddleware,
    SummarizationMiddleware,
    ToolCallLimitMiddleware,
    ToolRetryMiddleware,
)
from scripting import make_model, plan_of, run

from replangraph import AgentConfig, build_graph
from replangraph.testing import ScriptedChatModel, tool_call

PLAN = plan_of({"id": "1", "content": "look x up"})


def look(name: str) -> str:
    """Looks a thing up."""
    return f"about {name}"


def other(name: str) -> str:
    """Does something else."""
    return f"other {name}"


def finish_after_look(request):
    """Call look once, then answer with what it said."""
    if not request.called("look"):
        return tool_call("look", {"name": "x"})
    return "done: " + request.last_result("look")


def test_model_fallback_answers_when_the_first_model_fails(way):
    def broken(request):
        raise RuntimeError("primary is down")

    fallback = ScriptedChatModel(respond=finish_after_look)
    graph = build_graph(make_model(PLAN, broken), [look], middleware=[ModelFallbackMiddleware(fallback)])
    state, _ = run(graph, way=way)
    assert state["tasks"]["1"]["status"] == "completed"
    assert state["tasks"]["1"]["result"] == "done: about x"


def test_tool_selector_narrows_the_tools_the_executor_s_model_sees(way):
    seen: list[tuple[str, ...]] = []

    def work(request):
        seen.append(request.tool_names)
        return finish_after_look(request)

    selector = ScriptedChatModel(respond=lambda r: tool_call("ToolSelectionResponse", {"tools": ["look"]}))
    graph = build_graph(
        make_model(PLAN, work),
        [look, other],
        config=AgentConfig(verify_results=False),
        middleware=[LLMToolSelectorMiddleware(model=selector)],
    )
    state, _ = run(graph, way=way)
    assert state["tasks"]["1"]["result"] == "done: about x"
    assert seen and all(names == ("look",) for names in seen)


def test_tool_retry_runs_a_flaky_tool_again(way):
    tries = []

    def flaky(name: str) -> str:
        """Fails the first time."""
        tries.append(name)
        if len(tries) == 1:
            raise ConnectionError("flaky")
        return f"flaky {name}"

    def work(request):
        if not request.called("flaky"):
            return tool_call("flaky", {"name": "x"})
        return "done: " + request.last_result("flaky")

    retry = ToolRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)
    state, _ = run(build_graph(make_model(PLAN, work), [flaky], middleware=[retry]), way=way)
    assert state["tasks"]["1"]["result"] == "done: flaky x"
    assert tries == ["x", "x"]


def test_without_retry_middleware_the_crash_is_the_agent_s_error_reply(way):
    def boom(name: str) -> str:
        """Always fails."""
        raise ConnectionError("down")

    def work(request):
        if not request.called("boom"):
            return tool_call("boom", {"name": "x"})
        return "saw: " + request.last_result("boom")

    state, _ = run(build_graph(make_model(PLAN, work), [boom]), way=way)
    assert state["tasks"]["1"]["result"] == "saw: Error: ConnectionError: down"


def test_first_middleware_is_outermost(way):
    order: list[str] = []

    class Note(AgentMiddleware):
        def __init__(self, label: str):
            super().__init__()
            self.label = label

        @property
        def name(self) -> str:
            return self.label

        def wrap_model_call(self, request, handler):
            order.append(f"{self.label} in")
            response = handler(request)
            order.append(f"{self.label} out")
            return response

    graph = build_graph(make_model(PLAN, lambda r: "answer"), middleware=[Note("a"), Note("b")])
    run(graph, way=way)
    assert order == ["a in", "b in", "b out", "a out"]


def test_a_middleware_without_wrap_hooks_contributes_nothing(way):
    state, _ = run(build_graph(make_model(PLAN, lambda r: "answer"), middleware=[AgentMiddleware()]), way=way)
    assert state["tasks"]["1"]["result"] == "answer"


@pytest.mark.parametrize(
    ("middleware", "hook"),
    [
        (
            SummarizationMiddleware(model=ScriptedChatModel(respond=lambda r: "s"), trigger=("messages", 50)),
            "before_model",
        ),
        (ModelCallLimitMiddleware(run_limit=3), "before_model"),
        (ToolCallLimitMiddleware(run_limit=3), "after_model"),
    ],
)
def test_middleware_that_makes_no_sense_in_a_subtask_is_refused_at_build_time(middleware, hook):
    with pytest.raises(ValueError) as refused:
        build_graph(make_model(PLAN, lambda r: "answer"), middleware=[middleware])
    text = str(refused.value)
    assert type(middleware).__name__ in text and hook in text and "subtask" in text


def test_middleware_with_tools_or_state_keys_of_its_own_is_refused():
    class WithTools(AgentMiddleware):
        tools = [look]  # noqa: RUF012

        def wrap_tool_call(self, request, handler):
            return handler(request)

    with pytest.raises(ValueError, match="WithTools.*tools of its own"):
        build_graph(make_model(PLAN, lambda r: "answer"), middleware=[WithTools()])


def test_middleware_limits_still_hold_with_the_config(way):
    """The executor's own turn limit holds whatever user middleware does: the subtask stops after 3 model calls,
    and the rest of its work goes on in a continuation (until max_steps ends the run)."""

    def forever(request):
        return tool_call("look", {"name": str(len(request.tool_results))})

    fallback = ModelFallbackMiddleware(make_model(PLAN, forever))
    config = AgentConfig(max_step_iterations=3, max_steps=8)
    state, _ = run(build_graph(make_model(PLAN, forever), [look], config=config, middleware=[fallback]), way=way)
    first, after = state["tasks"]["1"], state["tasks"]["1_dyn_0"]
    assert first["model_calls"] == 3 and first["status"] == "completed"
    assert after["follow_up"] == {"kind": "continuation", "by": "limit"}
    assert "max_step_iterations=3" in after["content"]


def test_something_that_is_no_middleware_is_refused_at_build_time():
    import pytest

    def plain(request, handler):  # a function, not an object with the hook
        return handler(request)

    for item in (plain, object()):
        with pytest.raises(ValueError, match="neither wrap_model_call nor wrap_tool_call"):
            build_graph(ScriptedChatModel(respond=lambda r: "x"), middleware=[item])


def test_a_tool_middleware_that_answers_nothing_gives_the_agent_an_error_reply(way):
    class Silent:
        def wrap_tool_call(self, request, handler):
            return None

    def look(name: str) -> str:
        """Looks a thing up."""
        return f"about {name}"

    def work(request):
        if request.tool_results:
            return "answer: " + request.tool_results[-1].content
        return tool_call("look", {"name": "x"})

    graph = build_graph(make_model(plan_of({"id": "1", "content": "look x up"}), work), [look], middleware=[Silent()])
    state, _ = run(graph, way=way)
    assert state["tasks"]["1"]["status"] == "completed"
    assert "no reply came back for this look call" in state["tasks"]["1"]["result"]
