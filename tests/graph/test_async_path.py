"""The async path (``ainvoke``, ``astream``, a LangGraph server): nodes await their models and tools, so up to
``max_concurrency`` subtasks run at once, and time limits, crashes and middleware behave as on the sync path.

Overlap is proven with barriers (a call waits until the others are running too), never with timings."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading

import pytest
from clocks import GUARD_S, FakeClock, InFlight
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import StructuredTool
from langgraph.store.base import PutOp
from langgraph.store.base.batch import AsyncBatchedBaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command
from scripting import invoke, look_review_hand_off, make_model, plan_of, run, subtask_of
from test_toolkit_rules import make_runner, runner_state

import replangraph.clock as process_clock
from replangraph import AgentConfig, build_graph
from replangraph.events import emit
from replangraph.llm import aio, structured
from replangraph.llm import answers as schema_answers
from replangraph.llm.errors import StepTimeout
from replangraph.testing import ScriptedChatModel, tool_call

MORE_THAN_ASYNCIO_POOL = min(32, (os.cpu_count() or 1) + 4) + 1
"""More subtasks than asyncio's default thread pool holds (cores + 4, at most 32): where sync nodes stopped."""


def independent(n: int) -> dict:
    return plan_of(*({"id": str(i), "content": f"work on item {i}"} for i in range(n)))


def call_work_once(request):
    return "done" if request.called("work") else tool_call("work", {"item": subtask_of(request)})


def test_under_ainvoke_sync_tools_of_max_concurrency_subtasks_run_at_once():
    n = MORE_THAN_ASYNCIO_POOL
    meter = InFlight(barrier_parties=n)  # each call waits until all n run: fails after a minute if they never do

    def work(item: str) -> str:
        """Works on an item."""
        return f"worked on {item}"

    config = AgentConfig(max_concurrency=n, verify_results=False)
    graph = build_graph(make_model(independent(n), call_work_once), [meter.wrap(work)], config=config)
    state = invoke(graph, {"messages": [("user", "go")]}, way="ainvoke")
    assert all(t["status"] == "completed" for t in state["tasks"].values())
    assert meter.calls == n and meter.peak == n


def test_under_ainvoke_async_tools_are_awaited_together_on_the_event_loop():
    n = MORE_THAN_ASYNCIO_POOL
    threads: set[str] = set()
    barrier: list[asyncio.Barrier] = []

    async def work(item: str) -> str:
        """Works on an item."""
        threads.add(threading.current_thread().name)
        barrier or barrier.append(asyncio.Barrier(n))
        await asyncio.wait_for(barrier[0].wait(), GUARD_S)  # all n are running at once
        return f"worked on {item}"

    tool = StructuredTool.from_function(coroutine=work, name="work", description="Works on an item.")
    config = AgentConfig(max_concurrency=n, verify_results=False)
    graph = build_graph(make_model(independent(n), call_work_once), [tool], config=config)
    state = invoke(graph, {"messages": [("user", "go")]}, way="ainvoke")
    assert all(t["status"] == "completed" for t in state["tasks"].values())
    assert len(threads) == 1  # one event loop's thread, no pool


def stuck_world(tool, way: str, clock: FakeClock) -> dict:
    """A subtask whose model turn takes 4.9 of its 5 s (on ``clock``, the steps' clock), then calls ``tool``,
    which gets the 0.1 s left, however slow the machine; the final task."""

    def answer(request):
        if request.called("wait_a_bit"):
            return "gave up"
        clock.advance(4.9)
        return tool_call("wait_a_bit", {})

    config = AgentConfig(step_timeout_s=5.0, max_step_iterations=10, verify_results=False)
    model = make_model(plan_of({"id": "1", "content": "wait"}), answer)
    return invoke(build_graph(model, [tool], config=config), {"messages": [("user", "go")]}, way=way)["tasks"]["1"]


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """The clock every step reads."""
    fake = FakeClock()
    monkeypatch.setattr(process_clock, "time", fake)
    return fake


def test_a_stuck_sync_tool_fails_its_step_the_same_way_on_both_paths(way, clock):
    release = threading.Event()

    def wait_a_bit() -> str:
        """Waits."""
        release.wait(GUARD_S)  # stuck until the test ends
        return "too late"

    try:
        task = stuck_world(wait_a_bit, way, clock)
    finally:
        release.set()
    assert task["status"] == "failed"
    assert "step exceeded step_timeout_s=5 in tool 'wait_a_bit'" in task["error"]


def test_a_stuck_async_tool_is_cancelled_when_the_step_time_runs_out(clock):
    cancelled = threading.Event()

    async def wait_a_bit() -> str:
        """Waits."""
        try:
            await asyncio.sleep(GUARD_S)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "too late"

    tool = StructuredTool.from_function(coroutine=wait_a_bit, name="wait_a_bit", description="Waits.")
    task = stuck_world(tool, "ainvoke", clock)
    assert task["status"] == "failed" and "step exceeded step_timeout_s=5 in tool 'wait_a_bit'" in task["error"]
    assert cancelled.is_set()


class AsyncOnly(ScriptedChatModel):
    """A scripted model with async code of its own, whose subtask answers never come."""

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        if self.bound_tools and any("Your subtask" in str(m.content) for m in messages):
            await asyncio.sleep(GUARD_S)  # cancelled by the step's time limit
        return self._generate(messages, stop, **kwargs)


def test_a_model_that_never_answers_fails_the_step_under_ainvoke():
    model = AsyncOnly(respond=make_model(plan_of({"id": "1", "content": "think"}), lambda r: "x").respond)
    config = AgentConfig(step_timeout_s=0.2, verify_results=False, single_agent_fallback=False)
    state = invoke(build_graph(model, config=config), {"messages": [("user", "go")]}, way="ainvoke")
    task = state["tasks"]["1"]
    assert task["status"] == "failed" and "step exceeded step_timeout_s=0.2" in task["error"]


class Counting(AgentMiddleware):
    """Middleware with only async hooks (LangChain's ``awrap_*``), counting the calls it wraps."""

    def __init__(self):
        super().__init__()
        self.models = self.tools = 0

    async def awrap_model_call(self, request, handler):
        self.models += 1
        return await handler(request)

    async def awrap_tool_call(self, request, handler):
        self.tools += 1
        return await handler(request)


def test_async_only_middleware_wraps_every_call_on_both_paths(way):
    def work(item: str) -> str:
        """Works on an item."""
        return f"worked on {item}"

    counting = Counting()
    config = AgentConfig(verify_results=False)
    graph = build_graph(make_model(independent(2), call_work_once), [work], config=config, middleware=[counting])
    state, _ = run(graph, way=way)
    assert all(t["status"] == "completed" for t in state["tasks"].values())
    assert (counting.models, counting.tools) == (4, 2)  # two turns and one tool call per subtask


def test_an_async_only_hook_runs_from_sync_code_inside_a_running_loop():
    """``graph.invoke`` in a notebook: the thread already runs an event loop, and the hook still runs."""
    from replangraph.nodes.execution.middleware import Hook

    async def hook(request, handler):
        return await handler(request + 1)

    async def in_a_loop():
        return Hook(None, hook)(1, lambda request: request * 10)

    assert asyncio.run(in_a_loop()) == 20


def timeless(update: dict) -> dict:
    return {
        **update,
        "tasks": {k: {f: v for f, v in (t or {}).items() if f != "elapsed_s"} for k, t in update["tasks"].items()},
    }


def test_the_tools_node_gives_the_same_update_on_both_paths():
    """The same crash, keeping what the step had read, from ``__call__`` and from ``acall``."""

    def fetch() -> str:
        """A long page."""
        return "p" * 5_000

    def broken() -> Command:
        """Returns an update LangGraph could never apply."""
        return Command(update=["not", "a", "mapping"])

    state = runner_state(tool_call("fetch", {}, call_id="f"), tool_call("broken", {}, call_id="b"))
    runner = make_runner(fetch, broken, max_observation_chars=1_000)
    sync, not_sync = runner(state), asyncio.run(runner.acall(state))
    assert not_sync["tasks"]["1"]["status"] == "failed" and "tools crashed" in not_sync["tasks"]["1"]["error"]
    assert timeless(not_sync) == timeless(sync)


def test_acall_with_timeout_tells_a_timeout_from_the_call_s_own_timeout_error():
    async def hangs():
        await asyncio.sleep(GUARD_S)

    async def raises():
        raise TimeoutError("the call's own")

    with pytest.raises(StepTimeout):
        asyncio.run(aio.acall_with_timeout(hangs, 0.01))
    with pytest.raises(TimeoutError, match="the call's own"):
        asyncio.run(aio.acall_with_timeout(raises, GUARD_S))
    with pytest.raises(StepTimeout, match="no time left"):
        asyncio.run(aio.acall_with_timeout(raises, 0.0))


def test_async_retries_follow_the_sync_policy(monkeypatch):
    waits: list[float] = []

    async def waited(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(aio, "await_wait", waited)
    monkeypatch.setattr(process_clock, "jitter", lambda: 0.0)
    tries: list[int] = []

    async def flaky():
        tries.append(1)
        if len(tries) < 3:
            raise ConnectionError("reset")
        return "ok"

    result = asyncio.run(aio.acall_with_retries(flaky, retries=3, backoff_s=1.0, transient=lambda e: True))
    assert result == ("ok", 3) and waits == [1.0, 2.0]

    async def refused():
        raise ValueError("bad request")

    with pytest.raises(ValueError) as raised:
        asyncio.run(aio.acall_with_retries(refused, retries=3, backoff_s=1.0, transient=lambda e: False))
    assert raised.value.attempts == 1


def test_a_model_without_async_code_is_called_in_replangraph_s_pool():
    scripted = ScriptedChatModel(respond=lambda r: AIMessage("hi"))
    assert not aio.awaits_natively(scripted) and not aio.awaits_natively(scripted.bind_tools([]))
    assert aio.awaits_natively(AsyncOnly(respond=lambda r: "hi"))
    reply = asyncio.run(aio.ainvoke_model(scripted, "hello"))
    assert reply.content == "hi"


def test_under_ainvoke_the_completion_checks_run_together():
    n = MORE_THAN_ASYNCIO_POOL
    meter = InFlight(barrier_parties=n)  # every check waits until all n are being made

    def respond(request):
        if "Verdict" in request.tool_names and request.prompt.startswith("Goal:"):  # the goal check, once at the end
            return tool_call("Verdict", {"complete": True, "reason": "all there", "remaining_tasks": []})
        if "Verdict" in request.tool_names:
            with meter:
                return tool_call("Verdict", {"complete": True, "reason": "all there", "remaining_tasks": []})
        if "Plan" in request.tool_names:
            return independent(n)
        return "done" if request.tool_names else "FINAL"

    config = AgentConfig(max_concurrency=n, verify_results=True)
    state = invoke(
        build_graph(ScriptedChatModel(respond=respond), config=config), {"messages": [("user", "go")]}, way="ainvoke"
    )
    assert all(t["status"] == "completed" and t["verdict"]["complete"] for t in state["tasks"].values())
    assert meter.calls == n and meter.peak == n


def test_the_awaited_structured_loop_asks_again_after_an_unreadable_answer():
    from pydantic import BaseModel

    from replangraph.llm.reading import UnreadableInput

    class Pick(BaseModel):
        number: int

    answers = iter([tool_call("Pick", {"number": "many"}), tool_call("Pick", {"number": 7})])
    model = schema_answers.bind_schema(ScriptedChatModel(respond=lambda r: next(answers)), Pick)

    def read(answer):
        args = schema_answers.read_arguments(answer, "Pick")
        if not isinstance(args.get("number"), int):
            raise UnreadableInput("number must be an integer")
        return args["number"]

    steps = structured.structured_steps(model, [("user", "pick")], read, retries=1, config=AgentConfig(), awaited=True)
    asked = asyncio.run(aio.arun_steps(steps, off_loop=False))
    assert (asked.value, asked.calls) == (7, 2)


class LoopBoundStore(AsyncBatchedBaseStore):
    """An in-memory store that refuses sync calls on its event loop, as ``langgraph dev``'s ``BatchedStore`` does
    (``_check_loop``: ``asyncio.InvalidStateError``); from other threads they go through the loop."""

    def __init__(self):
        super().__init__()
        self.inner = InMemoryStore()
        self.batches: list[list] = []

    async def abatch(self, ops):
        ops = list(ops)
        self.batches.append(ops)
        return await self.inner.abatch(ops)


def test_under_ainvoke_no_store_call_blocks_the_event_loop():
    """Reads, writes and searches of the results workspace under ``ainvoke`` on a store bound to the loop: long tool
    outputs kept, a dependency's result read by the router, read_output, the completion check, the report."""

    def fetch(item: str) -> str:
        """A long page about an item."""
        return f"{item}: " + "p" * 3_000

    def work(request):
        if subtask_of(request) == "sum up":
            if request.called("read_output"):
                return "summed up"
            return tool_call("read_output", {"output_id": "1/result"})
        return "fetched" if request.called("fetch") else tool_call("fetch", {"item": subtask_of(request)})

    def respond(request):
        if "Verdict" in request.tool_names:
            return tool_call("Verdict", {"complete": True, "reason": "all there", "remaining_tasks": []})
        return world.respond(request)

    plan = plan_of(
        {"id": "1", "content": "fetch a"},
        {"id": "2", "content": "fetch b"},
        {"id": "3", "content": "sum up", "dependencies": ["1", "2"]},
    )
    world = make_model(plan, work)
    config = AgentConfig(max_observation_chars=1_000, max_concurrency=2)

    async def go():
        store = LoopBoundStore()
        graph = build_graph(ScriptedChatModel(respond=respond), [fetch], config=config, store=store)
        cfg = {"configurable": {"thread_id": "loop"}}
        return store, await graph.ainvoke({"messages": [("user", "go")]}, cfg)

    store, state = asyncio.run(go())
    assert {t["status"] for t in state["tasks"].values()} == {"completed"}, state["tasks"]
    assert "summed up" in state["final_answer"]
    kept = {item.key for item in store.inner.search(("replangraph", "loop"), limit=100)}
    assert {"plan:1:step:1:result", "plan:1:step:3:result"} <= kept
    assert any(":output:" in key for key in kept)  # the long pages were cut and kept
    writes = [len(ops) for ops in store.batches if ops and all(isinstance(op, PutOp) for op in ops)]
    assert max(writes) > 1  # a node's entries go out in one batch


def look(name: str) -> str:
    """Looks a thing up."""
    return f"about {name}: " + "x" * 2_000


def test_with_a_store_both_paths_keep_the_same_entries_and_send_the_same_events():
    """The toolkit's hand-off, a cut output and the completion check off the loop under ``astream`` (a store
    bound to the loop) do what they do under ``stream`` (an in-memory store): same events, same entries."""

    def graph(store):
        model = make_model(plan_of({"id": "1", "content": "look x up"}), look_review_hand_off)
        config = AgentConfig(max_observation_chars=1_000, verify_results=True)
        return build_graph(model, [look], config=config, store=store)

    given, cfg = {"messages": [("user", "look x up")]}, {"configurable": {"thread_id": "same"}}
    sync_store = InMemoryStore()
    sync_events = [c for m, c in graph(sync_store).stream(given, cfg, stream_mode=["custom"]) if m == "custom"]

    async def collect():
        store = LoopBoundStore()
        parts = [part async for part in graph(store).astream(given, cfg, stream_mode=["custom"])]
        return store.inner, [c for m, c in parts if m == "custom"]

    async_store, async_events = asyncio.run(collect())

    def names(events):
        return [(e["event"], e.get("task_id")) for e in events]

    def entries(store):
        return {i.key: i.value["content"] for i in store.search(("replangraph", "same"), limit=100)}

    assert names(async_events) == names(sync_events)
    assert ("step_completed", "1_dyn_0") in names(async_events)
    assert entries(async_store) == entries(sync_store) and any(":output:" in k for k in entries(sync_store))


def test_with_a_store_the_events_of_a_crashed_tools_step_never_go_out_on_either_path():
    """The tools step runs off the loop under ``astream`` with a store; the events its tools emitted are still held
    by the step and dropped with it when it crashes, as under ``stream``."""

    def announce() -> str:
        """Says something to the stream."""
        emit("tool_said", task_id="1")
        return "said"

    def broken() -> Command:
        """Returns an update LangGraph could never apply."""
        return Command(update=["not", "a", "mapping"])

    def work(request):
        if request.called("broken") or subtask_of(request) != "say it":
            return "done"
        return AIMessage("", tool_calls=[tool_call("announce", {}, call_id="a"), tool_call("broken", {}, call_id="b")])

    def graph(store):
        model = make_model(plan_of({"id": "1", "content": "say it"}), work)
        config = AgentConfig(verify_results=False, single_agent_fallback=False)
        return build_graph(model, [announce, broken], config=config, store=store)

    given, cfg = {"messages": [("user", "say it")]}, {"configurable": {"thread_id": "crash"}}
    sync_events = [c for m, c in graph(InMemoryStore()).stream(given, cfg, stream_mode=["custom"]) if m == "custom"]

    async def collect():
        parts = [part async for part in graph(LoopBoundStore()).astream(given, cfg, stream_mode=["custom"])]
        return [c for m, c in parts if m == "custom"]

    async_events = asyncio.run(collect())
    assert [e["event"] for e in async_events] == [e["event"] for e in sync_events]
    assert "step_failed" in [e["event"] for e in sync_events] and "tool_said" not in [e["event"] for e in sync_events]


@pytest.mark.parametrize("off_loop", [False, True])
def test_cancelled_steps_clean_up_in_their_own_context(off_loop):
    """A run cancelled while its steps wait on a call closes them at once: their ``finally`` resets the context
    variable they set, in the context they set it in (on the loop, or in the steps' own context off it)."""
    var = contextvars.ContextVar("held", default=None)
    cleaned: list[str] = []
    started: list[asyncio.Event] = []

    async def forever():
        started[0].set()
        await asyncio.sleep(GUARD_S)

    def steps():
        token = var.set("held")
        try:
            yield forever()
        finally:
            var.reset(token)  # ValueError in any other context
            cleaned.append("done")

    async def go():
        started.append(asyncio.Event())
        task = asyncio.ensure_future(aio.arun_steps(steps(), off_loop=off_loop))
        await asyncio.wait_for(started[0].wait(), GUARD_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return list(cleaned)  # before the loop ends and collects what is left

    assert asyncio.run(go()) == ["done"]
