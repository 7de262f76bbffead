"""Tools written as LangChain writes them (``ToolRuntime``, ``InjectedState``, ``InjectedStore``,
``InjectedToolCallId``) get what LangGraph's ``ToolNode`` would give them, on both paths; a tool's ``Command`` that
would update the graph state is refused with an error the agent can act on."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain.tools import InjectedState, InjectedStore, ToolRuntime, tool
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command
from scripting import make_model, plan_of

from replangraph import AgentConfig, build_graph
from replangraph.nodes.execution.injection import injected_call
from replangraph.nodes.execution.middleware import ToolCallRequest
from replangraph.testing import tool_call

PLAN = plan_of({"id": "1", "content": "look up the user"})
CONFIG = AgentConfig(verify_results=False)


def run_with(graph, way: str, context: Any = None, callbacks: list | None = None) -> dict:
    """The final state of one run, on the sync path (``invoke``) or the async one (``ainvoke``)."""
    given = {"messages": [("user", "look up the user")]}
    config = {"configurable": {"thread_id": "t"}, "callbacks": callbacks or []}
    if way == "ainvoke":
        return asyncio.run(graph.ainvoke(given, config, context=context))
    return graph.invoke(given, config, context=context)


def answer_with(*names: str):
    """A subtask's agent that calls ``names`` in one turn, then answers with what they returned."""

    def work(request):
        if request.tool_results:
            return "results: " + " | ".join(f"{m.name}={m.content}" for m in request.tool_results)
        return [tool_call(name, {"x": 7}, call_id=f"call-{name}") for name in names]

    return work


def injecting_tools(seen: dict) -> list:
    """Tools as LangChain's docs write them; each notes what it was given in ``seen``."""

    @tool
    def with_runtime(x: int, runtime: ToolRuntime) -> str:
        """Looks x up with the run's runtime."""
        seen["runtime"] = runtime
        return f"runtime {x}"

    @tool
    def with_state(
        x: int,
        state: Annotated[dict, InjectedState],
        messages: Annotated[list, InjectedState("messages")],
        tool_call_id: Annotated[str, InjectedToolCallId],
        store: Annotated[BaseStore, InjectedStore()],
    ) -> str:
        """Looks x up with the subtask's state and the store."""
        seen.update(state=state, messages=messages, tool_call_id=tool_call_id, store=store)
        return f"state {x}"

    return [with_runtime, with_state]


# langchain-core dumps a validated ToolRuntime, and pydantic warns about its context (an AgentConfig): ToolNode too.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_langchain_tools_get_the_runtime_state_call_id_and_store(way):
    seen: dict = {}
    store, context = InMemoryStore(), AgentConfig(max_steps=40)
    model = make_model(PLAN, answer_with("with_runtime", "with_state"))
    graph = build_graph(model, injecting_tools(seen), config=CONFIG, store=store)
    state = run_with(graph, way, context=context)

    task = state["tasks"]["1"]
    assert task["status"] == "completed"
    assert "with_runtime=runtime 7" in task["result"] and "with_state=state 7" in task["result"]
    runtime = seen["runtime"]
    assert isinstance(runtime, ToolRuntime) and runtime.tool_call_id == "call-with_runtime"
    assert runtime.context is context and runtime.store is store
    assert runtime.state["task_id"] == "1" and runtime.state["task"]["content"] == "look up the user"
    assert runtime.state["goal"] == "look up the user" and "1" in runtime.state["tasks"]
    assert runtime.config["configurable"]["thread_id"] == "t"
    assert {t.name for t in runtime.tools} >= {"with_runtime", "with_state"}
    assert seen["tool_call_id"] == "call-with_state" and seen["store"] is store
    assert seen["state"]["task_id"] == "1" and seen["messages"] is seen["state"]["messages"]
    # the window as the model saw it: each call runs as a task of its own, beside the turn's other calls
    last = seen["messages"][-1]
    assert isinstance(last, AIMessage) and [c["id"] for c in last.tool_calls] == [
        "call-with_runtime",
        "call-with_state",
    ]
    assert not any(isinstance(m, ToolMessage) for m in seen["messages"])


def test_an_async_tool_gets_its_runtime_under_ainvoke():
    seen: dict = {}

    @tool
    async def fetch(x: int, runtime: ToolRuntime) -> str:
        """Fetches x."""
        seen["runtime"] = runtime
        runtime.stream_writer({"event": "fetching", "x": x})
        return f"fetched {x}"

    store = InMemoryStore()
    graph = build_graph(make_model(PLAN, answer_with("fetch")), [fetch], config=CONFIG, store=store)
    state = run_with(graph, "ainvoke")
    assert "fetch=fetched 7" in state["tasks"]["1"]["result"]
    assert seen["runtime"].store is store and seen["runtime"].tool_call_id == "call-fetch"


def test_the_model_never_sees_injected_arguments():
    class BoundTools(BaseCallbackHandler):
        """Notes the tool schemas each model call was bound to."""

        def __init__(self):
            self.tools: dict[str, dict] = {}

        def on_chat_model_start(self, serialized, messages, **kwargs):
            for schema in (kwargs.get("invocation_params") or {}).get("tools") or []:
                self.tools[schema["function"]["name"]] = schema["function"]["parameters"]

    bound = BoundTools()
    model = make_model(PLAN, answer_with("with_runtime", "with_state"))
    graph = build_graph(model, injecting_tools({}), config=CONFIG, store=InMemoryStore())
    run_with(graph, "invoke", callbacks=[bound])
    assert set(bound.tools["with_runtime"]["properties"]) == {"x"}
    assert set(bound.tools["with_state"]["properties"]) == {"x"}


def test_tool_middleware_gets_the_runtime_and_its_state_reaches_the_tool(way):
    seen: dict = {}

    class AddsUser:
        def wrap_tool_call(self, request, handler):
            seen["request_runtime"] = request.runtime
            return handler(request.override(state={**request.state, "user": "ada"}))

    @tool
    def greet(x: int, user: Annotated[str, InjectedState("user")], runtime: ToolRuntime) -> str:
        """Greets the user."""
        seen["runtime"] = runtime
        return f"hello {user}"

    graph = build_graph(make_model(PLAN, answer_with("greet")), [greet], config=CONFIG, middleware=[AddsUser()])
    state = run_with(graph, way)
    assert "greet=hello ada" in state["tasks"]["1"]["result"]
    request_runtime = seen["request_runtime"]
    assert isinstance(request_runtime, ToolRuntime) and request_runtime.tool_call_id == "call-greet"
    assert request_runtime.state["task_id"] == "1" and seen["runtime"].state["user"] == "ada"


def test_what_cannot_be_injected_is_an_error_reply_and_the_run_goes_on(way):
    @tool
    def save(x: int, store: Annotated[BaseStore, InjectedStore()]) -> str:
        """Saves x."""
        return "saved"

    @tool
    def read_key(x: int, user: Annotated[str, InjectedState("user")]) -> str:
        """Reads the user."""
        return user

    graph = build_graph(make_model(PLAN, answer_with("save", "read_key")), [save, read_key], config=CONFIG)
    state = run_with(graph, way)  # no store
    result = state["tasks"]["1"]["result"]
    assert state["tasks"]["1"]["status"] == "completed" and state["final_answer"]
    assert "needs a store (InjectedStore)" in result and "build_graph(store=...)" in result
    assert "asks for state key 'user'" in result and "messages, task_id, task, tasks, goal" in result


def test_values_the_model_writes_for_injected_arguments_are_dropped():
    @tool
    def who(x: int, tool_call_id: Annotated[str, InjectedToolCallId], state: Annotated[dict, InjectedState]) -> str:
        """Says who called."""
        return f"{tool_call_id} {state['task_id']}"

    forged = tool_call("who", {"x": 1, "tool_call_id": "forged", "state": {"task_id": "forged"}}, call_id="real")
    request = ToolCallRequest(forged, who, {"task_id": "1", "messages": []}, None)
    call = injected_call(request)
    assert call["args"] == {"x": 1, "state": {"task_id": "1", "messages": []}}
    assert who.invoke(call).content == "real 1"


def test_a_tool_returning_a_command_gets_a_clear_error_and_the_run_finishes(way):
    @tool
    def update_user_info(x: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Looks up and stores the user's information (as LangGraph's docs write it for ToolNode)."""
        reply = ToolMessage("Successfully looked up user information", tool_call_id=tool_call_id)
        return Command(update={"user_name": "Ada", "messages": [reply]})

    model = make_model(PLAN, answer_with("update_user_info"))
    state = run_with(build_graph(model, [update_user_info], config=CONFIG), way)
    task = state["tasks"]["1"]
    assert task["status"] == "completed" and state["final_answer"] and "user_name" not in state
    result = task["result"]
    assert "cannot apply (key 'user_name')" in result
    assert "cannot update the graph state directly" in result and "ToolRuntime.store" in result
    assert "Go on with the tool's own reply: Successfully looked up user information" in result
