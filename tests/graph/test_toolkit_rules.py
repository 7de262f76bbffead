"""The replan toolkit and the tools node that runs it."""

from __future__ import annotations

import json
from typing import Annotated
from unittest.mock import patch

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId
from langgraph.types import Command
from scripting import kept

from replangraph import AgentConfig
from replangraph.config import AgentProfile, resolve_profiles
from replangraph.nodes.execution.tools_node import ToolRunner
from replangraph.queue.index import apply_writes
from replangraph.queue.tasks import new_task, ordered
from replangraph.testing import tool_call
from replangraph.tools import REQUEST_REPLAN_TOOL, REVIEW_TOOL, SPLIT_TOOL, ReplanSession, replan_toolkit

AGENTS = ["default", "browser"]


def running_queue():
    tasks = {
        "1": {**new_task("1", "extract 19 products", position=[0], agent_type="browser"), "status": "in_progress"},
        "2": new_task("2", "write the report", position=[1], depends_on=["1"]),
    }
    tasks["1"]["metadata"] = {"site": "shop"}
    return tasks


def session(tasks=None, **config):
    return ReplanSession("1", tasks or running_queue(), AGENTS, AgentConfig(**config), goal="top 19")


def call(tools, name, **args):
    """The reply to the agent and the state update of one toolkit call."""
    reply = {t.name: t for t in tools}[name].invoke({"name": name, "args": args, "id": "c1", "type": "tool_call"})
    if not isinstance(reply, Command):
        return reply, {}
    update = dict(reply.update)
    (message,) = update.pop("messages")
    assert message.tool_call_id == "c1" and message.name == name
    return message, update


def queued(update):
    """The follow-up tasks an update adds (every task but the running one)."""
    return {k: v for k, v in update["tasks"].items() if k != "1"}


def split_args(*contents, summary="products 1-5: A, B, C, D, E", **extra):
    return {"summary": summary, "tasks": json.dumps([{"content": c, **extra} for c in contents])}


def test_toolkit_names_and_schemas():
    tools = replan_toolkit(None)
    assert [t.name for t in tools] == [REVIEW_TOOL, SPLIT_TOOL, REQUEST_REPLAN_TOOL]
    assert tools[1].args["tasks"]["type"] == "string"  # shown as a JSON string; arrays are accepted too


def test_split_and_handoff_records_the_result_and_the_new_tasks():
    s = session()
    reply, update = call(
        replan_toolkit(s), SPLIT_TOOL, **split_args("products 6-10", "products 11-15", agent_type=None)
    )
    assert reply.status == "success" and "1_dyn_0, 1_dyn_1" in reply.content
    assert update["tasks"]["1"]["status"] == "completed" and update["windows"] == {"1": None}
    assert update["tasks"]["1"]["result"] == "products 1-5: A, B, C, D, E"
    new = queued(update)
    assert list(new) == ["1_dyn_0", "1_dyn_1"]
    assert all(t["depends_on"] == ["1"] and t["parent_id"] == "1" for t in new.values())
    assert all(t["agent_type"] == "browser" and t["metadata"] == {"site": "shop"} for t in new.values())
    merged = apply_writes(running_queue(), [new])
    assert [t["id"] for t in ordered(merged)] == ["1", "1_dyn_0", "1_dyn_1", "2"]
    # the subtask has ended: further calls are refused
    again, _ = call(replan_toolkit(s), REVIEW_TOOL)
    assert again.status == "error" and "already ended" in again.content


@pytest.mark.parametrize(
    "args, message",
    [
        ({"summary": "s", "tasks": "[{'content': 'x'"}, "not valid JSON"),
        ({"summary": "s", "tasks": "[]"}, "empty list"),
        ({"summary": "s", "tasks": '[{"content": ""}]'}, "has no 'content'"),
        ({"summary": "s", "tasks": '{"range": "6-19"}'}, "keys given: range"),
        ({"summary": "s", "tasks": 7}, "must be a list of tasks"),
        ({"summary": "s", "tasks": "[" * 5_000 + "]" * 5_000}, "levels deep"),
        ({"summary": "s", "tasks": [[[[[[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]]]]]}, "levels deep"),
        ({"summary": " ", "tasks": '[{"content": "x"}]'}, "`summary` is empty"),
        ({"summary": "s"}, "invalid arguments (tasks: Field required)"),
    ],
)
def test_bad_split_input_is_an_error_for_the_agent_and_changes_nothing(args, message):
    s = session()
    before = json.dumps(s.tasks, sort_keys=True)
    reply, update = call(replan_toolkit(s), SPLIT_TOOL, **args)
    assert reply.status == "error" and message in reply.content
    assert "RecursionError" not in reply.content
    assert update == {} and not s.ended and json.dumps(s.tasks, sort_keys=True) == before
    ok, _ = call(replan_toolkit(s), SPLIT_TOOL, **split_args("rest"))  # the subtask can still hand off
    assert ok.status == "success"


@pytest.mark.parametrize(
    "tasks",
    [
        '[{"content": "products 6-10"}, {"content": "products 11-15"}]',  # the documented JSON string
        [{"content": "products 6-10"}, {"content": "products 11-15"}],  # a real JSON array
        '```json\n[{"content": "products 6-10"}, {"content": "products 11-15"}]\n```',  # fenced
        ["products 6-10", "products 11-15"],  # plain strings
        "- products 6-10\n- products 11-15",  # one task per line
        {"tasks": [{"task": "products 6-10"}, {"description": "products 11-15"}]},  # wrapped, other key names
        'Remaining: [{"content": "products 6-10"}, {"content": "products 11-15"}] (see [1])',  # JSON inside prose
        "[{'content': 'products 6-10'}, {'content': 'products 11-15'},]",  # a Python literal, trailing comma
    ],
)
def test_split_accepts_the_shapes_models_send(tasks):
    s = session()
    reply, update = call(replan_toolkit(s), SPLIT_TOOL, summary="products 1-5", tasks=tasks)
    assert reply.status == "success", reply.content
    assert [t["content"] for t in queued(update).values()] == ["products 6-10", "products 11-15"]


def test_split_accepts_other_field_names_and_a_list_as_summary():
    s = session()
    reply, update = call(
        replan_toolkit(s), SPLIT_TOOL, partial_result=["#1 A", "#2 B"], follow_up_tasks=["products 3-5"]
    )
    assert reply.status == "success", reply.content
    assert update["tasks"]["1"]["result"] == "#1 A\n#2 B" and list(queued(update)) == ["1_dyn_0"]


def test_unknown_agent_type_in_a_split_runs_as_the_parent_s_type_and_the_reply_says_so():
    s = session()
    reply, update = call(replan_toolkit(s), SPLIT_TOOL, **split_args("a", "b", agent_type="researcher"))
    assert reply.status == "success"
    assert "agent type 'researcher' does not exist" in reply.content and "run as 'browser'" in reply.content
    assert {t["agent_type"] for t in queued(update).values()} == {"browser"}
    reply, update = call(replan_toolkit(session()), SPLIT_TOOL, **split_args("a", agent_type="Default"))
    assert update["tasks"]["1_dyn_0"]["agent_type"] == "default" and "Note" not in reply.content


def test_caps_are_errors_for_the_agent():
    reply, update = call(replan_toolkit(session(max_tasks=3)), SPLIT_TOOL, **split_args("a", "b"))
    assert reply.status == "error" and "at most 3 tasks" in reply.content
    assert update == {"tasks": {"1": {"limits_hit": {"max_tasks": 4}}}}  # recorded, nothing else changed
    deep = running_queue()
    deep["1"]["depth"] = 1
    reply, update = call(replan_toolkit(session(deep, max_split_depth=1)), SPLIT_TOOL, **split_args("a"))
    assert reply.status == "error" and "max_split_depth is 1" in reply.content
    assert update == {"tasks": {"1": {"limits_hit": {"max_split_depth": 2}}}}


def test_toolkit_does_not_exist_outside_its_subtask():
    unbound, _ = call(replan_toolkit(None), REVIEW_TOOL)
    assert unbound.status == "error" and "only available while a subtask runs" in unbound.content
    s = session()
    s.close()
    closed, _ = call(replan_toolkit(s), SPLIT_TOOL, **split_args("x"))
    assert closed.status == "error" and "subtask 1 is closed" in closed.content


def test_request_replan_fails_the_subtask_with_the_reason():
    s = session()
    reply, update = call(replan_toolkit(s), REQUEST_REPLAN_TOOL, reason="login wall")
    assert reply.status == "success" and s.ended
    assert update["tasks"]["1"]["status"] == "failed" and update["windows"] == {"1": None}
    assert update["tasks"]["1"]["replan_request"] == {"trigger": "tool", "reason": "login wall"}
    empty, update = call(replan_toolkit(session()), REQUEST_REPLAN_TOOL, reason="")
    assert empty.status == "error" and update == {}


def test_review_shows_the_plan_around_the_current_subtask(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    tasks = running_queue()
    tasks["0"] = {**new_task("0", "find the shop", position=[-1]), "status": "completed", "result": "shop.example"}
    text = call(replan_toolkit(session(tasks, workspace_dir=str(tmp_path))), REVIEW_TOOL)[0].content
    assert "Goal: top 19" in text
    assert "Current subtask: 1: extract 19 products" in text
    assert "[X] 0: find the shop (Result: shop.example)" in text
    assert "[ ] 2: write the report" in text
    assert "notes.txt (5 bytes)" in text


def test_review_is_bounded_however_long_the_queue_gets():
    tasks = running_queue()
    for i in range(300):
        done = {**new_task(f"d{i}", "old work " * 10, position=[-300 + i]), "status": "completed", "result": "r" * 300}
        tasks[done["id"]] = done
        tasks[f"p{i}"] = new_task(f"p{i}", "future work " * 10, position=[2 + i])
    text = call(replan_toolkit(session(tasks, review_context_chars=3_000)), REVIEW_TOOL)[0].content
    assert len(text) <= 3_000
    assert "earlier completed subtasks not shown" in text and "later pending subtasks not shown" in text
    assert "d299" in text and "p0" in text  # the nearest neighbours stay


# --------------------------------------------------------------------------- tools node


def runner_state(*calls, tasks=None):
    window = [SystemMessage("s"), HumanMessage("h"), AIMessage("", tool_calls=list(calls))]
    return {"tasks": tasks or running_queue(), "windows": {"1": window}, "goal": "top 19"}


def make_runner(*tools, **config):
    profiles = resolve_profiles({"browser": AgentProfile(tools=list(tools))}, ())
    return ToolRunner(profiles, AgentConfig(**config))


def test_handoff_completes_the_parent_adds_tasks_and_closes_the_window():
    update = make_runner()(runner_state(tool_call(SPLIT_TOOL, split_args("6-10"))))
    assert update["tasks"]["1"]["status"] == "completed"
    assert update["tasks"]["1"]["result"] == "products 1-5: A, B, C, D, E"
    assert update["tasks"]["1_dyn_0"]["status"] == "pending"
    assert update["windows"] == {"1": None}


def test_splitting_two_levels_deep_through_the_node():
    runner = make_runner()
    tasks = running_queue()
    tasks = apply_writes(
        tasks, [runner(runner_state(tool_call(SPLIT_TOOL, split_args("a", "b")), tasks=tasks))["tasks"]]
    )
    tasks["1_dyn_0"]["status"] = "in_progress"
    state = runner_state(tool_call(SPLIT_TOOL, split_args("a1", "a2")), tasks=tasks)
    state["windows"] = {"1_dyn_0": state["windows"]["1"]}
    tasks = apply_writes(tasks, [runner(state)["tasks"]])
    order = [t["id"] for t in ordered(tasks)]
    assert order == ["1", "1_dyn_0", "1_dyn_0_dyn_0", "1_dyn_0_dyn_1", "1_dyn_1", "2"]


def test_a_user_tool_may_return_a_command_updating_the_queue():
    def remember(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Queues a follow-up and notes it on the running task."""
        follow_up = new_task("9", "check the notes", position=[5])
        reply = ToolMessage("queued 9", tool_call_id=tool_call_id, name="remember")
        return Command(update={"tasks": {"9": follow_up, "1": {"metadata": {"noted": True}}}, "messages": [reply]})

    def hijack() -> Command:
        """Tries to move the graph."""
        return Command(goto="finalize", update={"goal": "something else"})

    update = make_runner(remember, hijack)(
        runner_state(tool_call("remember", {}, call_id="a"), tool_call("hijack", {}, call_id="b"))
    )
    assert update["tasks"]["9"]["status"] == "pending" and update["tasks"]["1"]["metadata"] == {"noted": True}
    first, second = update["windows"]["1"][3:]  # the subtask goes on with both replies
    assert first.content == "queued 9" and first.status == "success"
    assert second.status == "error" and "cannot apply (key 'goal', goto)" in second.content


def test_a_user_tool_may_end_its_subtask_with_a_command():
    def finish(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Ends the subtask."""
        reply = ToolMessage("done", tool_call_id=tool_call_id, name="finish")
        change = {"status": "completed", "result": "finished by a tool"}
        return Command(update={"tasks": {"1": change}, "messages": [reply]})

    update = make_runner(finish)(runner_state(tool_call("finish", {}), tool_call(REVIEW_TOOL, {})))
    assert update["tasks"]["1"]["status"] == "completed" and update["windows"] == {"1": None}


def test_a_command_may_remove_a_task_but_not_touch_another_subtask_s_window():
    def drop(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Removes task 2; answers with a reply naming another call."""
        reply = ToolMessage("dropped", tool_call_id="someone-else", name="drop")
        return Command(update={"tasks": {"2": None}, "messages": [reply]})

    def close_other() -> Command:
        """Tries to close another subtask's window."""
        return Command(update={"windows": {"2": None}})

    update = make_runner(drop, close_other)(
        runner_state(tool_call("drop", {}, call_id="a"), tool_call("close_other", {}, call_id="b"))
    )
    assert update["tasks"]["2"] is None  # the removal goes through as the queue write it is
    first, second = update["windows"]["1"][3:]
    assert first.tool_call_id == "a" and first.content == "dropped"  # relabelled: every call gets its answer
    assert second.status == "error" and "window '2'" in second.content


def test_a_command_may_not_remove_a_running_task():
    def drop_self(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Removes its own task."""
        return Command(update={"tasks": {"1": None}, "messages": [ToolMessage("gone", tool_call_id=tool_call_id)]})

    update = make_runner(drop_self)(runner_state(tool_call("drop_self", {}, call_id="a")))
    assert update["tasks"]["1"] == {"elapsed_s": update["tasks"]["1"]["elapsed_s"]}  # still there, still running
    reply = update["windows"]["1"][-1]
    assert reply.status == "error" and "removal of running task '1'" in reply.content


def test_a_crash_keeps_the_outputs_the_step_had_already_read(monkeypatch):
    def fetch() -> str:
        """A long page."""
        return "p" * 5_000

    def broken() -> Command:
        """Returns an update LangGraph could never apply."""
        return Command(update=["not", "a", "mapping"])

    update = make_runner(fetch, broken, max_observation_chars=1_000)(
        runner_state(tool_call("fetch", {}, call_id="f"), tool_call("broken", {}, call_id="b"))
    )
    assert update["tasks"]["1"]["status"] == "failed" and "tools crashed" in update["tasks"]["1"]["error"]
    assert kept(update, "1")["f"] == "p" * 5_000


def test_a_crash_after_a_handoff_fails_that_subtask_only_and_its_events_never_go_out(monkeypatch):
    import replangraph.nodes.execution.tools_node as executor_module

    def crash_for_1(task_id, *args, **kwargs):  # the hand-off ran; ending the subtask crashes
        raise RuntimeError("bug after the handoff")

    monkeypatch.setattr(executor_module, "combined_ending", crash_for_1)
    tasks = running_queue()
    tasks["2"] = {**tasks["2"], "status": "in_progress", "depends_on": []}
    state = runner_state(tool_call(SPLIT_TOOL, split_args("rest"), call_id="s"), tasks=tasks)
    state["windows"]["2"] = runner_state(tool_call(REVIEW_TOOL, {}, call_id="r"))["windows"]["1"]
    events = []
    with patch("replangraph.events.get_stream_writer", return_value=events.append):
        update = make_runner()(state)
    assert update["tasks"]["1"]["status"] == "failed" and "bug after the handoff" in update["tasks"]["1"]["error"]
    assert "1_dyn_0" not in update["tasks"]  # the handoff's update was lost with the crash ...
    assert [e["event"] for e in events] == ["step_failed"]  # ... so it was never announced
    assert update["windows"]["2"][-1].name == REVIEW_TOOL  # the sibling went on


def test_bad_tool_calls_become_error_messages():
    def explode(x: int) -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    update = make_runner(explode)(
        runner_state(
            tool_call("nope", {}, call_id="a"),
            tool_call("explode", {"x": 1}, call_id="b"),
            tool_call("explode", {"x": "not a number"}, call_id="c"),
        )
    )
    replies = update["windows"]["1"][3:]
    assert [m.status for m in replies] == ["error"] * 3
    assert "no tool named 'nope'" in replies[0].content
    assert "disk on fire" in replies[1].content
    assert "x" in replies[2].content and replies[2].tool_call_id == "c"


def test_calls_around_a_handoff_run_once_each():
    runs = []

    def side_effect() -> str:
        """Counts calls."""
        runs.append(1)
        return "ran"

    update = make_runner(side_effect)(
        runner_state(
            tool_call("side_effect", {}, call_id="before"),
            tool_call(SPLIT_TOOL, split_args("rest"), call_id="split"),
            tool_call("side_effect", {}, call_id="after"),
        )
    )
    assert len(runs) == 2 and update["tasks"]["1"]["status"] == "completed"  # see test_handoff_turn.py


def test_nothing_to_do_returns_no_update():
    state = runner_state(tool_call(REVIEW_TOOL, {}))
    state["tasks"]["1"]["status"] = "completed"
    assert make_runner()(state) == {}
    state = runner_state()
    state["windows"]["1"] = state["windows"]["1"][:2]
    assert make_runner()(state) == {}


def test_long_outputs_are_cut_with_a_marker():
    def big() -> str:
        """Big output."""
        return "q" * 50_000

    update = make_runner(big, max_observation_chars=2_000)(runner_state(tool_call("big", {})))
    reply = update["windows"]["1"][-1]
    assert isinstance(reply, ToolMessage) and len(reply.content) <= 2_000
    assert f'read_output(output_id="1/{reply.tool_call_id}", offset=' in reply.content
    assert kept(update, "1")[reply.tool_call_id] == "q" * 50_000


# --------------------------------------------------------------------------- repeat guard


def test_the_same_refusal_twice_ends_the_subtask_keeping_the_summary_for_the_replanner():
    bad = {"summary": "#1 A\n#2 B", "tasks": '{"range": "3-19"}'}
    runner = make_runner()
    first = runner(runner_state(tool_call(SPLIT_TOOL, bad, call_id="a")))
    refusal = first["windows"]["1"][-1]
    assert refusal.status == "error" and "keys given: range" in refusal.content
    assert set(first.get("tasks", {}).get("1", {})) <= {"elapsed_s"}  # still running: the agent may correct itself
    window = [*first["windows"]["1"], AIMessage("", tool_calls=[tool_call(SPLIT_TOOL, bad, call_id="b")])]
    second = runner({"tasks": running_queue(), "windows": {"1": window}, "goal": "top 19"})
    task = second["tasks"]["1"]
    assert task["status"] == "completed" and task["result"] == "#1 A\n#2 B"  # later tasks may build on it
    assert "repeated a refused replan_split_and_handoff call" in task["replan_request"]["reason"]
    assert task["replan_request"]["trigger"] == "failure"
    assert second["windows"] == {"1": None}


def split_twice(args: dict) -> dict:
    """The task after the agent sent the same split call twice."""
    runner = make_runner()
    first = runner(runner_state(tool_call(SPLIT_TOOL, args, call_id="a")))
    window = [*first["windows"]["1"], AIMessage("", tool_calls=[tool_call(SPLIT_TOOL, args, call_id="b")])]
    return runner({"tasks": running_queue(), "windows": {"1": window}, "goal": "g"})["tasks"]["1"]


def test_a_repeated_refusal_without_a_summary_fails_the_subtask():
    task = split_twice({"summary": "", "tasks": "[]"})
    assert task["status"] == "failed" and "repeated a refused" in task["error"] and task["replan_request"]


def test_a_corrected_call_after_a_refusal_goes_through():
    runner = make_runner()
    first = runner(runner_state(tool_call(SPLIT_TOOL, {"summary": "s", "tasks": "[]"}, call_id="a")))
    fixed = AIMessage("", tool_calls=[tool_call(SPLIT_TOOL, split_args("rest"), call_id="b")])
    second = runner({"tasks": running_queue(), "windows": {"1": [*first["windows"]["1"], fixed]}, "goal": "g"})
    assert second["tasks"]["1"]["status"] == "completed" and "1_dyn_0" in second["tasks"]


def test_a_limit_refusal_is_recorded_with_the_value_that_would_fit():
    update = make_runner(max_tasks=3)(runner_state(tool_call(SPLIT_TOOL, split_args("a", "b", "c"))))
    assert update["tasks"]["1"]["limits_hit"] == {"max_tasks": 5}
    assert update["windows"]["1"][-1].status == "error"


def test_the_repeat_guard_keeps_data_sent_under_an_unknown_name():
    task = split_twice({"found": "#1 A\n#2 B", "tasks": "[]"})
    assert task["status"] == "completed" and "#1 A" in task["result"]
    assert "still yours" not in task["replan_request"]["reason"]  # the refusal is quoted, not its advice
