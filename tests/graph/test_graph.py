"""End-to-end runs of the compiled graph with scripted models (no network)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from scripting import invoke, make_model, plan_of, run, subtask_of
from typing_extensions import is_typeddict

from replangraph import AgentConfig, AgentProfile, ReplanState, build_graph
from replangraph.app.demo import build_demo_graph, expected_products, read_ranking
from replangraph.nodes.finalize.chat_markdown import chat_markdown
from replangraph.plan_message import PLAN_MESSAGE_ID
from replangraph.queue.tasks import ordered
from replangraph.testing import tool_call

GOAL = "Extract the top 19 products from the store's bestseller ranking, with units sold and rating."


def test_nineteen_products_end_to_end(way):
    out = invoke(build_demo_graph(), {"messages": [("user", GOAL)]}, way=way)
    for name in expected_products(19):
        assert name in out["final_answer"]
    assert "Tundra Thermos" not in out["final_answer"]  # rank 20 was not asked for
    order = [t["id"] for t in ordered(out["tasks"])]
    assert order == ["1", "1_dyn_0", "1_dyn_1", "1_dyn_2"]
    assert all(t["status"] == "completed" for t in out["tasks"].values())
    assert out["tasks"]["1_dyn_1"]["depends_on"] == ["1"]
    assert out["tasks"]["1_dyn_1"]["parent_id"] == "1"
    assert isinstance(out["messages"][-1], AIMessage)
    assert out["messages"][-1].content == chat_markdown(out["final_answer"])  # the final answer, as Markdown


def test_events_are_emitted_in_order(way):
    _, events = run(build_demo_graph(AgentConfig(max_concurrency=1)), GOAL, way=way)  # one subtask at a time
    names = [(e["event"], e.get("task_id") or e.get("parent_id")) for e in events]
    assert names == [
        ("plan_created", None),
        ("step_started", "1"),
        ("dynamic_tasks_added", "1"),
        ("step_completed", "1"),
        ("step_started", "1_dyn_0"),
        ("step_verified", "1_dyn_0"),  # the completion check is on by default
        ("step_completed", "1_dyn_0"),
        ("step_started", "1_dyn_1"),
        ("step_verified", "1_dyn_1"),  # the completion check is on by default
        ("step_completed", "1_dyn_1"),
        ("step_started", "1_dyn_2"),
        ("step_verified", "1_dyn_2"),  # the completion check is on by default
        ("step_completed", "1_dyn_2"),
        ("goal_checked", None),  # every result against the goal, once, before the final answer
        ("plan_completed", None),
    ]
    added = next(e for e in events if e["event"] == "dynamic_tasks_added")
    assert added["task_ids"] == ["1_dyn_0", "1_dyn_1", "1_dyn_2"]


def test_parallel_siblings_give_the_same_result(way):
    sequential = build_demo_graph(AgentConfig(max_concurrency=1)).invoke({"messages": [("user", GOAL)]})
    parallel = invoke(build_demo_graph(AgentConfig(max_concurrency=3)), {"messages": [("user", GOAL)]}, way=way)
    assert parallel["final_answer"] == sequential["final_answer"]

    def timeless(tasks):
        return {k: {f: v for f, v in t.items() if f not in ("started_at", "elapsed_s")} for k, t in tasks.items()}

    assert timeless(parallel["tasks"]) == timeless(sequential["tasks"])


def node_runs(graph, **config) -> list[str]:
    """The nodes a run started, in order."""
    chunks = graph.stream({"messages": [("user", "three things")]}, config, stream_mode="tasks")
    return [c["name"] for c in chunks if "input" in c]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_model_turns_join_once_in_the_tools_node(concurrency):
    turns = []

    def answer_or_look(request):
        item = subtask_of(request)
        turns.append(item)
        if item == "b" and not request.tool_results:
            return tool_call("look", {"name": item})
        return f"done: {item}"

    def look(name: str) -> str:
        """Looks."""
        return name

    model = make_model(plan_of({"content": "a"}, {"content": "b"}, {"content": "c"}), answer_or_look)
    runs = node_runs(build_graph(model, [look], config=AgentConfig(max_concurrency=concurrency, verify_results=False)))
    # b's call runs as a task of its own, started by the tools node (it shows in the stream after it)
    if concurrency == 1:  # a: answer; b: tool call, its result, answer; c: answer; each turn then the join
        turn = ["executor", "tools"]
        assert runs == ["run_start", "planner", *turn, *turn, "tool_call", *turn, *turn, "finalize"]
    else:  # all three at once; the tools node joins the branches once, then b's second turn
        assert runs == [
            "run_start",
            "planner",
            *["executor"] * 3,
            "tools",
            "tool_call",
            "executor",
            "tools",
            "finalize",
        ]
    assert sorted(turns) == ["a", "b", "b", "c"]  # nothing ran twice


def test_async_stream_runs_siblings_concurrently():
    async def collect():
        graph = build_demo_graph(AgentConfig(max_concurrency=3))
        events, state = [], {}
        async for mode, chunk in graph.astream({"messages": [("user", GOAL)]}, stream_mode=["custom", "values"]):
            if mode == "custom":
                events.append(chunk["event"])
            else:
                state = chunk
        return events, state

    events, state = asyncio.run(collect())
    # the three handed-off subtasks start in one step, before any of them completes
    assert events[4:7] == ["step_started"] * 3
    assert all(name in state["final_answer"] for name in expected_products(19))


def test_graph_nodes_and_mermaid():
    graph = build_demo_graph()
    nodes = set(graph.get_graph().nodes)
    assert {"planner", "executor", "replanner", "compressor", "tools", "finalize"} <= nodes
    mermaid = graph.get_graph().draw_mermaid()
    assert "tools -.-> executor" in mermaid
    assert "tools -.-> replanner" in mermaid
    assert "executor --> tools" in mermaid  # a plain edge: model turns join in the tools node
    assert "executor -.-> finalize" not in mermaid


def test_state_schema_is_typing_extensions_typeddict():
    assert is_typeddict(ReplanState)
    assert type(ReplanState).__module__ == "typing_extensions"
    schema = build_demo_graph().get_input_jsonschema()
    assert {"messages", "goal"} <= set(schema["properties"])


def test_compiled_graph_as_node_of_a_messages_state_graph():
    inner = build_demo_graph()
    parent = StateGraph(MessagesState)
    parent.add_node("research", inner)
    parent.add_edge(START, "research")
    app = parent.compile()
    out = app.invoke({"messages": [HumanMessage(GOAL)]}, {"recursion_limit": inner.config["recursion_limit"]})
    assert [type(m).__name__ for m in out["messages"]] == ["HumanMessage", "AIMessage", "AIMessage"]
    assert out["messages"][1].id.startswith(PLAN_MESSAGE_ID)  # the plan, updated in place as the run went
    assert "**Plan**: 4 of 4 done" in out["messages"][1].content
    assert "\n  - [x] 1_dyn_0: " in out["messages"][1].content  # handed-off work, nested
    assert all(name in out["messages"][-1].content for name in expected_products(19))


def test_goal_key_is_accepted_and_recorded_as_a_message():
    out = build_demo_graph().invoke({"messages": [], "goal": GOAL})
    assert out["goal"] == GOAL
    assert out["messages"][0].content == GOAL
    assert "Sable Leather Wallet" in out["final_answer"]


def test_second_run_on_a_thread_starts_a_fresh_queue():
    graph = build_demo_graph(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "same"}}
    graph.invoke({"messages": [("user", GOAL)]}, cfg)
    out = graph.invoke({"messages": [("user", "Extract the top 3 products from the ranking.")]}, cfg)
    assert list(out["tasks"]) == ["1"]
    assert out["final_answer"].startswith("Top 3 bestsellers")
    assert len(out["messages"]) == 6  # each goal: the goal, its plan, its answer


def test_dependency_results_reach_dependent_subtasks_including_handed_off_work():
    seen = {}

    def work(request):
        if "compile" in subtask_of(request):
            seen["prompt"] = request.prompt
            return "compiled"
        return demo_work(request)

    from replangraph.app.demo import demo_responder as demo_work

    plan = plan_of(
        {"id": "1", "content": "Extract products ranked 1-12 from the bestseller ranking.", "depends_on": []},
        {"id": "2", "content": "compile the list", "depends_on": ["1"]},
    )
    graph = build_graph(make_model(plan, work), tools=[read_ranking])
    out, _ = run(graph)
    assert [t["id"] for t in ordered(out["tasks"])] == ["1", "1_dyn_0", "1_dyn_1", "2"]
    assert out["tasks"]["2"]["status"] == "completed"
    # 2 ran after the handed-off tasks and saw their results
    assert "#12 Lumen Reading Light" in seen["prompt"] and "#1 Aurora Desk Lamp" in seen["prompt"]


def test_agent_profiles_get_their_own_tools_and_prompt():
    seen = {}

    def search_web(query: str) -> str:
        """Search the web."""
        return "result for " + query

    def work(request):
        seen[subtask_of(request)] = (request.tool_names, request.system.split("\n")[0])
        return "ok"

    plan = plan_of(
        {"id": "1", "content": "look it up", "agent_type": "browser", "depends_on": []},
        {"id": "2", "content": "write it up", "depends_on": ["1"]},
    )
    agents = {"browser": AgentProfile(tools=[search_web], prompt="You browse.", description="web research")}
    run(build_graph(make_model(plan, work), agents=agents))
    assert "search_web" in seen["look it up"][0] and seen["look it up"][1] == "You browse."
    assert "search_web" not in seen["write it up"][0]
    assert "replan_split_and_handoff" in seen["write it up"][0]


def test_small_context_window_triggers_compression():
    def big_page(n: int) -> str:
        """Read page n."""
        return f"page {n}: " + "lorem ipsum " * 600

    def work(request):
        seen = [int(n) for n in re.findall(r"page (\d+):", " ".join(str(m.content) for m in request.tool_results))]
        after = max(seen, default=-1) + 1
        return tool_call("big_page", {"n": after}) if after < 6 else "read all pages"

    plan = plan_of({"id": "a", "content": "read pages", "depends_on": []})
    config = AgentConfig(context_window=9_000, reserved_output=1_000, keep_last_messages=4)
    out, events = run(build_graph(make_model(plan, work), tools=[big_page], config=config))
    compressed = [e for e in events if e["event"] == "context_compressed"]
    assert compressed and all(e["tokens_after"] < e["tokens_before"] for e in compressed)
    assert out["tasks"]["a"]["status"] == "completed"


def test_bad_config_and_model_are_rejected_clearly():
    with pytest.raises(TypeError, match="chat model"):
        build_graph("gpt-4o")
    with pytest.raises(ValueError):
        AgentConfig(max_steps=0)
    with pytest.raises(ValueError, match="extra"):
        AgentConfig(max_stepz=3)

    def request_replan(reason: str) -> str:
        """A user tool that would shadow the toolkit."""
        return reason

    with pytest.raises(ValueError, match="request_replan"):
        build_graph(make_model(plan_of(), str), tools=[request_replan])


def test_split_args_survive_as_json_string():
    def work(request):
        if "part" in subtask_of(request):
            return "part done"
        if not request.tool_results:
            return tool_call(
                "replan_split_and_handoff", {"summary": "half", "tasks": json.dumps([{"content": "part"}])}
            )
        return "unreachable"

    plan = plan_of({"id": "x", "content": "big job", "depends_on": []})
    out, _ = run(build_graph(make_model(plan, work)))
    assert out["tasks"]["x"]["result"] == "half"
    assert out["tasks"]["x_dyn_0"]["result"] == "part done"
