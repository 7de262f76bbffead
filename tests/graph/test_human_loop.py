"""Human in the loop: ask_user questions, plan approval, cancel and slash commands (scripted models, in memory)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scripting import make_model, plan_of, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.hosting import RUN_CAN_PAUSE
from replangraph.nodes.human.interrupts import CheckpointerRequired
from replangraph.testing import tool_call
from replangraph.tools import SPLIT_TOOL

TWO_TASKS = plan_of({"id": "1", "content": "paint the door"}, {"id": "2", "content": "paint the gate"})
ONE_TASK = plan_of({"id": "1", "content": "paint the door"})


def graph_for(work, plan=ONE_TASK, **settings):
    """A graph asking questions; the completion check is off (its requests would reach ``work``)."""
    settings.setdefault("verify_results", False)
    return build_graph(make_model(plan, work), config=AgentConfig(**settings), checkpointer=InMemorySaver())


def start(graph, thread="t", goal="paint"):
    cfg = {"configurable": {"thread_id": thread}}
    return graph.invoke({"messages": [("user", goal)]}, cfg), cfg


def counting_fetch(fetched: Counter):
    """A ``fetch`` tool that counts its calls by item in ``fetched``."""

    def fetch(item: str) -> str:
        """Fetch an item."""
        fetched[item] += 1
        return f"{item} is in stock"

    return fetch


def questions(out) -> list[str]:
    return [i.value["question"] for i in out.get("__interrupt__", [])]


def answers(request) -> list[str]:
    return [m.text for m in request.tool_results if request.tool_name(m) == "ask_user"]


def test_a_subtask_asks_two_rounds_and_each_answer_reaches_it():
    turns = Counter()

    def work(request):
        turns[subtask_of(request)] += 1
        got = answers(request)
        if not got:
            return tool_call("ask_user", {"question": "Which colour?"})
        if len(got) == 1:
            return tool_call("ask_user", {"question": "Which finish?"})
        return f"door painted {got[0]}, {got[1]}"

    graph = graph_for(work)
    out, cfg = start(graph)
    assert questions(out) == ["Please confirm: Which colour?"]
    value = out["__interrupt__"][0].value
    assert value | {"question": "", "action_requests": [], "review_configs": []} == {
        "kind": "question",
        "question": "",
        "task_id": "1",
        "task": "paint the door",
        "agent_type": "default",
        "tool_call_id": value["tool_call_id"],
        "action_requests": [],
        "review_configs": [],
    }
    (action,) = value["action_requests"]  # LangChain v1's HITL request: a reply box in HITL chat UIs
    assert action["name"] == "ask_user" and action["args"] == {"question": value["question"], "answer": ""}
    assert value["review_configs"] == [{"action_name": "ask_user", "allowed_decisions": ["respond", "edit", "reject"]}]
    out = graph.invoke(Command(resume="green"), cfg)
    assert questions(out) == ["Please confirm: Which finish?"]
    out = graph.invoke(Command(resume="matte"), cfg)
    assert "door painted green, matte" in out["final_answer"]
    assert out["tasks"]["1"]["clarifications"] == [
        {"question": "Which colour?", "answer": "green"},
        {"question": "Which finish?", "answer": "matte"},
    ]
    assert turns["paint the door"] == 3  # no model turn ran twice across the two resumes


def test_no_model_or_tool_call_before_the_question_runs_again_on_resume():
    turns, fetched = Counter(), Counter()
    fetch = counting_fetch(fetched)

    def work(request):
        turns[subtask_of(request)] += 1
        if not request.called("fetch"):  # one turn: a tool call and a question together
            return [tool_call("fetch", {"item": "paint"}), tool_call("ask_user", {"question": "Which colour?"})]
        return f"bought {answers(request)[0]} paint ({request.last_result('fetch')})"

    graph = build_graph(make_model(ONE_TASK, work), tools=[fetch], checkpointer=InMemorySaver())
    out, cfg = start(graph)
    assert questions(out) and fetched["paint"] == 1 and turns["paint the door"] == 1
    out = graph.invoke(Command(resume="red"), cfg)
    assert "bought red paint (paint is in stock)" in out["final_answer"]
    assert fetched["paint"] == 1 and turns["paint the door"] == 2


def test_the_same_question_again_is_answered_from_the_first_answer_without_asking():
    seen = []

    def work(request):
        seen.append(request.tool_results[-1].text if request.tool_results else "")
        got = answers(request)
        if len(got) < 2:
            return tool_call("ask_user", {"question": "which colour?" if got else "Which colour?"})
        return f"done: {got[-1]}"

    graph = graph_for(work)
    out, cfg = start(graph)
    out = graph.invoke(Command(resume="blue"), cfg)
    assert "__interrupt__" not in out  # the repeat was not shown to the user
    assert "You asked this already and the user answered: blue" in seen[-1]
    assert out["tasks"]["1"]["clarifications"] == [{"question": "Which colour?", "answer": "blue"}]


def test_max_clarifications_ends_the_asking_and_withdraws_the_tool():
    offered = []

    def work(request):
        offered.append("ask_user" in request.tool_names)
        got = [m.text for m in request.tool_results]
        if not got:
            return tool_call("ask_user", {"question": "Which colour?"})
        if len(got) == 1:
            return tool_call("ask_user", {"question": "Which finish?"})  # a model may call it anyway
        return "done: " + " | ".join(got)

    graph = graph_for(work, max_clarifications=1)
    out, cfg = start(graph)
    out = graph.invoke(Command(resume="blue"), cfg)
    assert "__interrupt__" not in out
    assert "No more questions: this subtask has asked 1 (max_clarifications=1)" in out["final_answer"]
    assert offered == [True, False, False]

    silent = graph_for(lambda r: f"offered: {'ask_user' in r.tool_names}", max_clarifications=0)
    assert "offered: False" in start(silent)[0]["final_answer"]


def test_two_subtasks_ask_at_once_and_each_gets_its_own_answer():
    def work(request):
        got = answers(request)
        if not got:
            return tool_call("ask_user", {"question": f"Colour for {subtask_of(request)}?"})
        return f"{subtask_of(request)}: {got[0]}"

    graph = graph_for(work, TWO_TASKS, max_concurrency=2)
    out, cfg = start(graph)
    pending = {i.value["task_id"]: i.id for i in out["__interrupt__"]}
    assert set(pending) == {"1", "2"} and len(set(pending.values())) == 2
    out = graph.invoke(Command(resume={pending["1"]: "red", pending["2"]: "white"}), cfg)
    assert "paint the door: red" in out["final_answer"] and "paint the gate: white" in out["final_answer"]


@pytest.mark.parametrize(
    "args",
    [
        {"questions": ["Which colour?"]},  # an array for a string, under another name
        {"q": [{"type": "text", "text": "Which colour?"}]},  # content blocks
        {"text": "Which colour?"},
        {"anything": "Which colour?"},  # one text field with an invented name
    ],
)
def test_sloppy_question_arguments_are_read(args):
    graph = graph_for(lambda r: f"got {answers(r)}" if answers(r) else tool_call("ask_user", args))
    out, cfg = start(graph)
    assert questions(out) == ["Please confirm: Which colour?"]


def test_an_empty_question_is_refused_to_the_agent_without_asking():
    def work(request):
        if not request.tool_results:
            return tool_call("ask_user", {"question": "  "})
        return "told: " + request.tool_results[-1].text

    out, _ = start(graph_for(work))
    assert "__interrupt__" not in out
    assert "ask_user needs `question`" in out["final_answer"]


def test_the_prefix_and_an_empty_answer_are_handled():
    graph = graph_for(lambda r: f"got {answers(r)}" if answers(r) else tool_call("ask_user", {"question": "Go?"}))
    cfg = {"configurable": {"thread_id": "p"}}
    out = graph.invoke({"messages": [("user", "paint")]}, cfg, context={"question_prefix": "Q: "})
    assert questions(out) == ["Q: Go?"]
    out = graph.invoke(Command(resume=""), cfg)
    assert "The user gave no answer" in out["final_answer"]


def test_without_a_checkpointer_ask_user_is_not_offered_and_a_call_to_it_is_refused_to_the_agent():
    offered = []

    def work(request):
        if SPLIT_TOOL in request.tool_names:  # the agent's turns (not the completion check's)
            offered.append("ask_user" in request.tool_names)
        if not request.tool_results:  # called anyway (a model that remembers the tool): refused, the run goes on
            return tool_call("ask_user", {"question": "Go?"})
        return f"went on: {request.tool_results[-1].text}"

    out = build_graph(make_model(ONE_TASK, work)).invoke({"messages": [("user", "paint")]})
    assert offered == [False, False]
    assert out["tasks"]["1"]["status"] == "completed"
    assert "No user can be asked in this run" in out["tasks"]["1"]["result"]


def test_a_run_kept_elsewhere_pauses_without_a_checkpointer_of_its_own():
    """On Temporal a node runs as an activity, whose config has no checkpointer, while the workflow keeps the run:
    the run's metadata says so (RUN_CAN_PAUSE), and ask_user is offered and pauses the run."""
    offered = []

    def work(request):
        offered.append("ask_user" in request.tool_names)
        return tool_call("ask_user", {"question": "Go?"})

    graph = build_graph(make_model(ONE_TASK, work), config=AgentConfig(verify_results=False))
    out = graph.invoke({"messages": [("user", "paint")]}, {"metadata": {RUN_CAN_PAUSE: True}})
    assert offered == [True]
    assert questions(out) == ["Please confirm: Go?"]  # LangGraph ends a run without a checkpointer there


def asking_graph(**settings):
    """Two subtasks, one after the other, each asking its own question ("Colour of the door?", "... gate?")."""

    def work(request):
        got = answers(request)
        if got:
            return f"{subtask_of(request)} in {got[0]}"
        return tool_call("ask_user", {"question": f"Colour of the {subtask_of(request).split()[-1]}?"})

    plan = plan_of(
        {"id": "1", "content": "paint the door"}, {"id": "2", "content": "paint the gate", "depends_on": ["1"]}
    )
    return graph_for(work, plan, **settings)


def test_a_slash_command_sent_while_a_question_waits_is_answered_and_the_question_stays():
    graph = asking_graph()
    out, cfg = start(graph)
    asked = out["__interrupt__"][0]
    out = graph.invoke({"messages": [("user", "/status")]}, cfg)
    reply = next(m for m in reversed(out["messages"]) if isinstance(m, AIMessage)).text
    assert "1 in progress" in reply and '1: "Colour of the door?"' in reply
    assert isinstance(out["messages"][-1], AIMessage)  # a chat client draws the question's form under it
    assert questions(out) == [asked.value["question"]]  # asked again
    out = graph.invoke({"messages": [("user", "/plan")]}, cfg)
    assert questions(out) == [asked.value["question"]]
    out = graph.invoke(Command(resume="/plan"), cfg)  # a command given as the answer works too
    assert "[>] 1: paint the door" in out["messages"][-1].text or "1: paint the door" in out["messages"][-1].text
    assert questions(out) == [asked.value["question"]]
    out = graph.invoke(Command(resume="red"), cfg)
    out = graph.invoke(Command(resume="blue"), cfg)
    assert "paint the door in red" in out["final_answer"] and "paint the gate in blue" in out["final_answer"]


def test_a_path_is_an_answer_not_a_command():
    graph = asking_graph()
    out, cfg = start(graph)
    out = graph.invoke(Command(resume="/home/me/colours.csv"), cfg)
    assert questions(out) == ["Please confirm: Colour of the gate?"]  # task 2 asks next
    assert out["tasks"]["1"]["clarifications"][0]["answer"] == "/home/me/colours.csv"


def test_commands_unknown_custom_failing_and_on_a_fresh_thread():
    def todo(args, state):
        return f"noted {args!r}; {len(state.get('tasks') or {})} tasks"

    def broken(args, state):
        raise RuntimeError("disk full")

    graph = build_graph(
        make_model(ONE_TASK, lambda r: "done"),
        checkpointer=InMemorySaver(),
        commands={"todo": todo, "/broken": broken},
    )
    cfg = {"configurable": {"thread_id": "c"}}

    def say(text):
        return graph.invoke({"messages": [("user", text)]}, cfg)["messages"][-1].text

    assert say("/status") == "No run on this thread yet: send a goal to start one."
    assert say("/plan") == "No plan yet: send a goal to start a run."
    assert say("/cancel") == "Nothing to cancel: no run is in progress on this thread."
    assert say("/nope") == "Unknown command /nope. Known commands: /broken, /cancel, /plan, /resume, /status, /todo."
    assert say("/TODO buy milk") == "noted 'buy milk'; 0 tasks"
    assert say("/broken") == "Command /broken failed: RuntimeError: disk full"
    assert not graph.get_state(cfg).values.get("tasks")  # no plan was made for any of them
    for bad in ({"/cancel": todo}, {"to do": todo}, {"/x": "not callable"}):
        with pytest.raises(ValueError):
            build_graph(make_model(ONE_TASK, lambda r: "done"), commands=bad)


@pytest.mark.parametrize("how", ["resume", "input", "custom word"])
def test_cancel_during_a_question_skips_the_rest_and_reports_what_was_done(how):
    def work(request):
        if "gate" in subtask_of(request) and not answers(request):
            return [tool_call("ask_user", {"question": "Colour?"})]
        return f"{subtask_of(request)} done"

    plan = plan_of(
        {"id": "1", "content": "paint the door"},
        {"id": "2", "content": "paint the gate", "depends_on": ["1"]},
        {"id": "3", "content": "paint the fence", "depends_on": ["2"]},
    )
    graph = graph_for(work, plan, **({"cancel_word": "stop"} if how == "custom word" else {}))
    out, cfg = start(graph)
    assert questions(out)
    if how == "input":
        out = graph.invoke({"messages": [("user", "/cancel")]}, cfg)
    else:
        out = graph.invoke(Command(resume="STOP " if how == "custom word" else "/cancel"), cfg)
    assert "__interrupt__" not in out
    assert {t: out["tasks"][t]["status"] for t in "123"} == {"1": "completed", "2": "skipped", "3": "skipped"}
    assert out["final_answer"].startswith("The run for this goal stopped before it was finished: the user cancelled")
    assert "- 1: paint the door\n  Result: paint the door done" in out["final_answer"]
    assert graph.get_state(cfg).next == ()


def test_each_answer_is_announced_once():
    graph = asking_graph()
    out, cfg = start(graph)
    events = []
    for mode, chunk in graph.stream(Command(resume="red"), cfg, stream_mode=["custom", "updates"]):
        if mode == "custom":
            events.append(chunk["event"])
    assert events.count("question_answered") == 1


# --------------------------------------------------------------------------- plan approval

PLAN = plan_of({"id": "1", "content": "step A"}, {"id": "2", "content": "step B", "depends_on": ["1"]})


def approval_graph(**settings):
    return graph_for(lambda r: f"{subtask_of(r)} done", PLAN, approve_plan=True, **settings)


def test_the_plan_waits_for_approval_and_runs_once_approved():
    graph = approval_graph()
    out, cfg = start(graph)
    shown = out["__interrupt__"][0].value
    assert shown["kind"] == "plan" and [t["id"] for t in shown["tasks"]] == ["1", "2"]
    assert shown["tasks"][1] == {"id": "2", "content": "step B", "agent_type": "default", "depends_on": ["1"]}
    assert out["tasks"]["1"]["status"] == "pending" and out["tasks"]["1"]["model_calls"] == 0
    out = graph.invoke(Command(resume="Approve."), cfg)
    assert "step A done" in out["final_answer"] and "step B done" in out["final_answer"]
    assert graph.get_state(cfg).values["plan_review"] == "approved"


def test_an_edited_plan_replaces_the_planned_one():
    graph = approval_graph()
    out, cfg = start(graph)
    tasks = '[{"id": "x", "content": "step X"}, {"id": "y", "content": "step Y", "depends_on": ["x"]}]'
    edited = f'```json\n{{"tasks": {tasks}}}\n```'
    out = graph.invoke(Command(resume=edited), cfg)
    assert set(out["tasks"]) == {"x", "y"}
    assert "step X done" in out["final_answer"] and "step A" not in out["final_answer"]
    assert graph.get_state(cfg).values["plan_review"] == "edited"


def test_an_invalid_edit_comes_back_as_a_new_interrupt_with_the_error():
    graph = approval_graph()
    out, cfg = start(graph)
    cycle = [{"id": "a", "content": "A", "depends_on": ["b"]}, {"id": "b", "content": "B", "depends_on": ["a"]}]
    out = graph.invoke(Command(resume=cycle), cfg)
    error = out["__interrupt__"][0].value["error"]
    assert "dependency cycle" in error and "was not used" in error
    out = graph.invoke(Command(resume=[{"id": "a", "content": "A", "agent_type": "wizard"}]), cfg)
    assert "unknown agent_type 'wizard'" in out["__interrupt__"][0].value["error"]
    out = graph.invoke(Command(resume="make it shorter"), cfg)
    assert "'make it shorter' is not a decision" in out["__interrupt__"][0].value["error"]
    out = graph.invoke(Command(resume=[{"id": "a", "content": "step A2"}]), cfg)
    assert set(out["tasks"]) == {"a"} and "step A2 done" in out["final_answer"]


def test_cancelling_the_plan_skips_every_task():
    graph = approval_graph()
    out, cfg = start(graph)
    out = graph.invoke(Command(resume="/cancel"), cfg)
    assert {t["status"] for t in out["tasks"].values()} == {"skipped"}
    assert "the user cancelled the run" in out["final_answer"] and "nothing was completed" in out["final_answer"]


def test_a_command_while_the_plan_waits_keeps_it_waiting():
    graph = approval_graph()
    out, cfg = start(graph)
    out = graph.invoke({"messages": [("user", "/status")]}, cfg)
    assert "Waiting for approval of the plan" in out["messages"][-1].text
    assert out["__interrupt__"][0].value["kind"] == "plan"
    out = graph.invoke(Command(resume=True), cfg)
    assert "step B done" in out["final_answer"]


def test_approval_without_a_checkpointer_names_the_fix():
    graph = build_graph(make_model(PLAN, lambda r: "done"), config=AgentConfig(approve_plan=True))
    with pytest.raises(CheckpointerRequired, match="approve_plan=False"):
        graph.invoke({"messages": [("user", "go")]})


def test_an_invented_spelling_of_the_tool_name_is_read_and_a_call_without_questions_allowed_is_refused():
    def work(request):
        if not request.tool_results:
            return tool_call("AskUser", {"question": "Colour?"})
        return "told: " + request.tool_results[-1].text

    out, cfg = start(graph_for(work))
    assert questions(out) == ["Please confirm: Colour?"]
    out, _ = start(graph_for(work, max_clarifications=0), thread="none")
    assert "No user can be asked in this run (max_clarifications=0)" in out["final_answer"]


# --------------------------------------------------------------------------- review fixes


def test_a_command_to_a_run_stopped_between_steps_changes_nothing_until_resume():
    turns, fetched = Counter(), Counter()
    fetch = counting_fetch(fetched)

    def work(request):
        turns[subtask_of(request)] += 1
        if not request.called("fetch"):
            return tool_call("fetch", {"item": "paint"})
        return f"bought paint ({request.last_result('fetch')})"

    graph = build_graph(make_model(ONE_TASK, work), tools=[fetch], checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "s"}}
    graph.invoke({"messages": [("user", "paint")]}, cfg, interrupt_before=["tools"])  # as if it crashed there
    out = graph.invoke({"messages": [("user", "/status")]}, cfg)
    assert "1 in progress" in out["messages"][-1].text
    assert turns["paint the door"] == 1 and fetched["paint"] == 0 and graph.get_state(cfg).next == ()
    out = graph.invoke({"messages": [("user", "/resume")]}, cfg)
    assert "bought paint (paint is in stock)" in out["final_answer"]
    assert turns["paint the door"] == 2 and fetched["paint"] == 1  # the waiting call ran first, once
    assert graph.invoke({"messages": [("user", "/resume")]}, cfg)["messages"][-1].text.startswith("Nothing to resume")


def test_the_cancel_word_works_as_input_and_inside_an_answer_object():
    graph = asking_graph(cancel_word="stop")
    out, cfg = start(graph)
    out = graph.invoke({"messages": [("user", "Stop")]}, cfg)
    assert "the user cancelled" in out["final_answer"]
    graph = asking_graph()
    out, cfg = start(graph, thread="a")
    out = graph.invoke(Command(resume={"answer": "/cancel"}), cfg)
    assert "the user cancelled" in out["final_answer"]


def test_status_after_a_cancelled_approval_waits_for_nothing():
    graph = approval_graph()
    out, cfg = start(graph)
    graph.invoke(Command(resume={"action": "cancel"}), cfg)
    reply = graph.invoke({"messages": [("user", "/status")]}, cfg)["messages"][-1].text
    assert "The run was cancelled." in reply and "Waiting" not in reply


def test_plan_edits_read_loose_keys_and_report_repairs():
    graph = approval_graph()
    out, cfg = start(graph)
    out = graph.invoke(Command(resume={"approve": False}), cfg)
    assert "not a decision" not in out["__interrupt__"][0].value["error"]
    assert "not approved" in out["__interrupt__"][0].value["error"]
    reviewed = []
    edit = [{"id": "a", "content": "A", "agent_type": "Default"}, {"id": "b", "content": "B", "depends": ["task a"]}]
    for mode, chunk in graph.stream(Command(resume=edit), cfg, stream_mode=["custom", "values"]):
        if mode == "custom" and chunk["event"] == "plan_reviewed":
            reviewed.append(chunk)
    state = graph.get_state(cfg).values
    assert state["tasks"]["b"]["depends_on"] == ["a"] and state["tasks"]["a"]["agent_type"] == "default"
    assert reviewed[0]["decision"] == "edited"
    assert "task 'b': dependency 'task a' read as 'a'" in reviewed[0]["notes"]
    assert "task 'a': agent type 'Default' read as 'default'" in reviewed[0]["notes"]


def test_answers_stay_in_view_when_old_outputs_leave_the_window():
    seen = []

    def fetch(item: str) -> str:
        """Fetch an item."""
        return f"{item} data"

    def work(request):
        results = [m.text for m in request.tool_results]
        seen.append(results)
        if not answers(request):
            return tool_call("ask_user", {"question": "Which colour?"})
        if len(results) < 4:
            return tool_call("fetch", {"item": f"item{len(results)}"})
        return "done"

    graph = build_graph(
        make_model(ONE_TASK, work),
        tools=[fetch],
        config=AgentConfig(max_observations=1, verify_results=False),
        checkpointer=InMemorySaver(),
    )
    out, cfg = start(graph)
    graph.invoke(Command(resume="teal"), cfg)
    assert "teal" in seen[-1]  # the answer was never replaced by a "removed from context" note


def test_an_agent_that_keeps_asking_a_refused_question_is_stopped():
    graph = graph_for(lambda r: tool_call("ask_user", {"question": "Colour?"}), max_clarifications=1)
    out, cfg = start(graph)
    out = graph.invoke(Command(resume="red"), cfg)
    task = out["tasks"]["1"]
    assert "repeated a refused ask_user call" in (task["error"] or "") or any(
        "repeated a refused ask_user call" in r["reason"] for r in out["replans"]
    )
    assert task["model_calls"] < 6


def test_the_compressor_keeps_the_answers_in_its_summary():
    from replangraph.nodes.human.questions import answers_note

    note = answers_note({"clarifications": [{"question": "Colour?", "answer": "red"}]})
    assert note == "\nThe user's answers to your questions:\n- Colour? -> red"
    assert answers_note({}) == ""


def test_two_questions_both_answered_with_the_cancel_word_cancel_once():
    def work(request):
        return (
            f"{subtask_of(request)} {answers(request)}"
            if answers(request)
            else tool_call("ask_user", {"question": "?"})
        )

    graph = graph_for(work, TWO_TASKS, max_concurrency=2)
    out, cfg = start(graph)
    out = graph.invoke(Command(resume={i.id: "/cancel" for i in out["__interrupt__"]}), cfg)
    assert {t["status"] for t in out["tasks"].values()} == {"skipped"}
    assert "the user cancelled the run" in out["final_answer"]


def test_plan_edits_in_content_blocks_and_the_outcome_in_the_output():
    graph = approval_graph()
    out, cfg = start(graph)
    blocks = [{"type": "text", "text": '```json\n[{"id": "z", "content": "step Z"}]\n```'}]
    out = graph.invoke(Command(resume=blocks), cfg)
    assert set(out["tasks"]) == {"z"} and out["plan_review"] == "edited"
    graph = approval_graph()
    out, cfg = start(graph, thread="c")
    out = graph.invoke(Command(resume="/cancel"), cfg)
    assert out["cancelled"] is True and out["plan_review"] == "cancelled"


def test_options_are_shown_with_the_question_and_an_unknown_tool_error_names_ask_user():
    def work(request):
        if not request.tool_results:
            return [
                tool_call("ask_human", {"q": "?"}),
                tool_call("ask_user", {"question": "Size?", "options": ["S", "M"]}),
            ]
        return "told: " + request.tool_results[0].text

    graph = graph_for(work)
    out, cfg = start(graph)
    assert questions(out) == ["Please confirm: Size? (options: S / M)"]
    out = graph.invoke(Command(resume="M"), cfg)
    assert (
        "no tool named 'ask_human'" in out["final_answer"] and "ask_user" in out["final_answer"].split("Available")[1]
    )


# --------------------------------------------------------------------------- questions carry over


def test_a_follow_up_asking_its_parents_question_gets_the_answer_without_asking_the_user():
    def work(request):
        got = answers(request)
        if subtask_of(request) == "paint the door":
            if not got:
                return tool_call("ask_user", {"question": "Which colour?"})
            follow_up = json.dumps([{"content": "paint the second coat"}])
            return tool_call(SPLIT_TOOL, {"summary": f"first coat in {got[0]}", "tasks": follow_up})
        if not got:  # the follow-up asks the same question again, as handed-off agents do
            return tool_call("ask_user", {"question": "which colour"})
        return f"second coat: {got[0]}"

    graph = graph_for(work)
    out, cfg = start(graph)
    assert questions(out) == ["Please confirm: Which colour?"]
    out = graph.invoke(Command(resume="green"), cfg)
    assert "__interrupt__" not in out  # not asked again
    (child,) = [t for t in out["tasks"].values() if t.get("parent_id") == "1"]
    assert child["status"] == "completed"
    assert child["result"].startswith("second coat: The user answered this already in this run")
    assert "(asked by subtask 1: paint the door): green" in child["result"]
    assert not child.get("clarifications")  # the user was asked once, by the parent
    assert out["tasks"]["1"]["clarifications"] == [{"question": "Which colour?", "answer": "green"}]


def test_a_later_subtask_is_told_the_answers_the_user_gave_earlier_in_the_run():
    openings = {}

    def work(request):
        openings.setdefault(subtask_of(request), request.prompt)
        if subtask_of(request) == "paint the door" and not answers(request):
            return tool_call("ask_user", {"question": "Which colour?"})
        return f"{subtask_of(request)} done"

    graph = graph_for(work, TWO_TASKS, max_concurrency=1)  # independent subtasks, one after the other
    out, cfg = start(graph)
    out = graph.invoke(Command(resume="green"), cfg)
    assert "__interrupt__" not in out and "paint the gate done" in out["final_answer"]
    told = openings["paint the gate"]
    assert "The user already answered these questions in this run" in told
    assert "- Which colour? -> green (asked by subtask 1)" in told
    assert "already answered" not in openings["paint the door"]  # nothing was answered when it started
