"""Required tools: the planner's tasks name the tools they need, the agent types are checked against
them (repair, retry with feedback, or a kept plan), and the executor warns about what is missing."""

from __future__ import annotations

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scripting import make_model, plan_of, run, subtask_of

from replangraph import AgentConfig, AgentProfile, build_graph
from replangraph.config import resolve_profiles
from replangraph.llm.formats import name_list
from replangraph.llm.reading import plan_specs
from replangraph.nodes.planning.planner import Planner, plan_schema
from replangraph.queue.plans import fit_required_tools
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

GOAL = "Read the report and write a summary"
RETRY_MARK = "could not be used"
FAST = {"retry_backoff_s": 0.0}


def read_file(path: str) -> str:
    """Read a file."""
    return f"text of {path}"


def write_file(path: str, text: str) -> str:
    """Write a file."""
    return "written"


def web_search(query: str) -> str:
    """Search the web."""
    return "results"


AGENTS = {
    "reader": AgentProfile(tools=[read_file], description="reads files"),
    "writer": AgentProfile(tools=[write_file], description="writes files"),
    "scout": AgentProfile(tools=[web_search, read_file], description="searches and reads"),
}
"""read_file: reader and scout; write_file: writer only; web_search: scout only; default has none."""


def planner_for(respond, agents=AGENTS, **config) -> Planner:
    return Planner(ScriptedChatModel(respond=respond), resolve_profiles(agents, ()), AgentConfig(**{**FAST, **config}))


def task(task_id, content="do something", agent_type=None, tools=None, depends_on=()):
    spec = {"id": task_id, "content": content, "depends_on": list(depends_on)}
    if agent_type:
        spec["agent_type"] = agent_type
    if tools is not None:
        spec["required_tools"] = tools
    return spec


def plan_call(*tasks):
    return tool_call("Plan", {"tasks": list(tasks)})


def retries_in(request: ScriptedRequest) -> int:
    return request.prompt.count(RETRY_MARK)


def planned_events(planner: Planner, monkeypatch) -> list[tuple[str, dict]]:
    events = []
    import replangraph.nodes.planning.planner as planner_module

    monkeypatch.setattr(planner_module, "emit", lambda name, **payload: events.append((name, payload)))
    planner({"messages": [("user", GOAL)]})
    return events


# --------------------------------------------------------------------------- reading


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("read_file", ["read_file"]),
        ("read_file, web_search", ["read_file", "web_search"]),
        ("read_file and web_search", ["read_file", "web_search"]),
        ('["read_file", "web_search"]', ["read_file", "web_search"]),
        ("- read_file\n- web_search", ["read_file", "web_search"]),
        (["`read_file()`", "read_file"], ["read_file"]),
        ([{"name": "read_file"}], ["read_file"]),
        (None, []),
        ("none", []),
        ("[read_file", ["read_file"]),
    ],
)
def test_tool_names_are_read_in_the_usual_shapes(value, names):
    assert name_list(value) == names


def test_plan_specs_read_required_tools_under_other_keys_and_only_when_given():
    specs = plan_specs(
        [
            {"id": "1", "content": "a", "tools": "read_file, web_search"},
            {"id": "2", "content": "b", "requiredTools": ["write_file"]},
            {"id": "3", "content": "c"},
        ]
    )
    assert specs[0]["required_tools"] == ["read_file", "web_search"]
    assert specs[1]["required_tools"] == ["write_file"]
    assert "required_tools" not in specs[2]


# --------------------------------------------------------------------------- schema and prompt


def task_properties(types, tools=()):
    parameters = convert_to_openai_tool(plan_schema(types, tools))["function"]["parameters"]
    return parameters["properties"]["tasks"]["items"]["properties"]


def test_schema_asks_for_required_tools_only_when_tools_can_choose_an_agent_type():
    field = task_properties(["default", "reader"], ["read_file", "web_search"])["required_tools"]
    assert field["type"] == "array" and field["items"]["enum"] == ["read_file", "web_search"]
    assert "required_tools" not in task_properties(["default", "reader"])
    assert "required_tools" not in task_properties(["default"], ["read_file"])


def test_prompt_lists_each_agent_type_s_tools():
    def respond(request):
        assert "- reader: reads files (tools: read_file)" in request.system
        assert "- scout: searches and reads (tools: web_search, read_file)" in request.system
        assert "- default: General-purpose agent. (no tools)" in request.system
        assert "`required_tools`" in request.system
        return plan_call(task("1"))

    tasks, calls, error, notes = planner_for(respond).plan(GOAL)
    assert calls == 1 and error == "" and notes == []
    assert "required_tools" not in tasks["1"]


def test_without_tools_or_with_one_agent_type_prompt_and_schema_are_as_before():
    def no_tools(request):
        assert "tools:" not in request.system and "required_tools" not in request.system
        return plan_call(task("1"))

    planner = planner_for(no_tools, agents={"reader": AgentProfile(description="reads files")})
    assert planner.tool_names == []
    planner.plan(GOAL)
    planner = planner_for(no_tools, agents=None)
    planner.plan(GOAL)
    shared = Planner(
        ScriptedChatModel(respond=no_tools), resolve_profiles(None, [read_file]), AgentConfig(**FAST)
    )  # one agent type: no choice to make
    assert shared.tool_names == []
    shared.plan(GOAL)


# --------------------------------------------------------------------------- names


def test_unknown_tool_is_dropped_with_a_note_in_plan_created(monkeypatch):
    planner = planner_for(lambda r: plan_call(task("1", agent_type="scout", tools=["web_serch", "web_search"])))
    [(name, payload)] = planned_events(planner, monkeypatch)
    assert name == "plan_created"
    assert payload["notes"] == ["task '1': unknown tool 'web_serch' dropped (known: read_file, web_search, write_file)"]
    assert payload["tasks"] == [
        {
            "id": "1",
            "content": "do something",
            "agent_type": "scout",
            "depends_on": [],
            "required_tools": ["web_search"],
        }
    ]


def test_loose_spellings_map_to_the_real_names_and_built_in_tools_are_left_out():
    planner = planner_for(
        lambda r: plan_call(
            task("1", agent_type="scout", tools="Web-Search, READ_FILE, read file, replan_split_and_handoff, ask_user")
        )
    )
    tasks, calls, _, notes = planner.plan(GOAL)
    assert calls == 1 and notes == []
    assert tasks["1"]["required_tools"] == ["web_search", "read_file"]


def test_the_known_names_in_a_note_are_capped():
    agents = {f"a{i}": AgentProfile(tools=[tool_named(f"tool_{i:02}")]) for i in range(20)}
    planner = planner_for(lambda r: plan_call(task("1", agent_type="a0", tools=["nope"])), agents=agents)
    _, _, _, notes = planner.plan(GOAL)
    assert notes[0].endswith("tool_11, … (20 in all))")


def tool_named(name):
    def tool(x: str) -> str:
        """A tool."""
        return x

    tool.__name__ = name
    return tool


# --------------------------------------------------------------------------- agent types


def test_a_type_that_lacks_a_tool_is_retried_with_the_types_that_have_it_and_the_fix_is_used():
    seen = []

    def respond(request):
        seen.append(request.prompt)
        if retries_in(request) == 0:
            return plan_call(task("1", agent_type="writer", tools=["read_file"]), task("2", agent_type="writer"))
        return plan_call(task("1", agent_type="reader", tools=["read_file"]), task("2", agent_type="writer"))

    tasks, calls, error, notes = planner_for(respond).plan(GOAL)
    assert calls == 2 and error == "" and notes == []
    assert "task '1' needs read_file, which agent type 'writer' lacks; give it an agent type that has it: " in seen[1]
    assert "reader, scout" in seen[1]
    assert tasks["1"]["agent_type"] == "reader" and tasks["1"]["required_tools"] == ["read_file"]


def test_a_default_task_that_only_one_type_can_do_runs_as_that_type_without_a_retry():
    planner = planner_for(lambda r: plan_call(task("1", tools=["write_file"]), task("2", agent_type="painter")))
    tasks, calls, _, notes = planner.plan(GOAL)
    assert calls == 1
    assert tasks["1"]["agent_type"] == "writer" and tasks["2"]["agent_type"] == "default"
    assert notes[-1] == "task '1' needs write_file: runs as 'writer', the only agent type with it, instead of 'default'"


def test_an_unknown_type_whose_tools_one_type_has_runs_as_that_type():
    planner = planner_for(lambda r: plan_call(task("1", agent_type="searcher", tools=["web_search", "read_file"])))
    tasks, calls, _, notes = planner.plan(GOAL)
    assert calls == 1 and tasks["1"]["agent_type"] == "scout"
    assert "'searcher' does not exist" in notes[0] and "runs as 'scout'" in notes[1]


def test_a_default_task_that_several_types_can_do_is_asked_about():
    def respond(request):
        if retries_in(request) == 0:
            return plan_call(task("1", tools=["read_file"]))
        assert "which agent type 'default' lacks; give it an agent type that has it: reader, scout" in request.prompt
        return plan_call(task("1", agent_type="scout", tools=["read_file"]))

    tasks, calls, _, notes = planner_for(respond).plan(GOAL)
    assert calls == 2 and tasks["1"]["agent_type"] == "scout" and notes == []


def test_tools_no_type_has_together_ask_for_a_split():
    def respond(request):
        if retries_in(request) == 0:
            return plan_call(task("1", agent_type="writer", tools=["web_search", "write_file"]))
        assert (
            "task '1' needs web_search, which agent type 'writer' lacks, and no agent type has all of web_search and "
            "write_file (web_search: scout; write_file: writer); split it" in request.prompt
        )
        return plan_call(
            task("1", agent_type="scout", tools=["web_search"]),
            task("2", agent_type="writer", tools=["write_file"], depends_on=["1"]),
        )

    tasks, calls, _, _ = planner_for(respond).plan(GOAL)
    assert calls == 2 and [t["agent_type"] for t in tasks.values()] == ["scout", "writer"]


def test_an_invalid_plan_hears_of_its_tool_problems_in_the_same_retry():
    def respond(request):
        if retries_in(request) == 0:
            return plan_call(
                task("1", agent_type="writer", tools=["read_file"], depends_on=["2"]),
                task("2", depends_on=["1"]),
            )
        assert "dependency cycle" in request.prompt and "needs read_file" in request.prompt
        return plan_call(task("1", agent_type="reader", tools=["read_file"]), task("2", depends_on=["1"]))

    tasks, calls, error, notes = planner_for(respond).plan(GOAL)
    assert calls == 2 and error == "" and notes == [] and tasks["1"]["agent_type"] == "reader"


def test_when_the_retries_run_out_the_plan_is_kept_with_a_note():
    stubborn = plan_call(task("1", agent_type="writer", tools=["read_file"]))
    tasks, calls, error, notes = planner_for(lambda r: stubborn, planner_retries=1).plan(GOAL)
    assert calls == 2 and error == ""  # no fallback plan
    assert tasks["1"]["agent_type"] == "writer" and tasks["1"]["required_tools"] == ["read_file"]
    assert notes == [
        "task '1' needs read_file, which agent type 'writer' lacks; give it an agent type that has it: reader, "
        "scout (kept as planned: no better plan came)"
    ]


def test_a_later_garbage_answer_or_a_failed_call_keeps_the_usable_plan():
    def garbage_after(request):
        if retries_in(request) == 0:
            return plan_call(task("1", agent_type="writer", tools=["read_file"]))
        return "no idea"

    tasks, calls, error, notes = planner_for(garbage_after).plan(GOAL)
    assert calls == 3 and error == "" and tasks["1"]["agent_type"] == "writer" and "kept as planned" in notes[0]

    def down_after(request):
        if retries_in(request) == 0:
            return plan_call(task("1", agent_type="writer", tools=["read_file"]))
        raise ValueError("model is down")

    tasks, calls, error, notes = planner_for(down_after, model_retries=0).plan(GOAL)
    assert calls == 2 and error == "" and tasks["1"]["agent_type"] == "writer" and "kept as planned" in notes[0]


def test_fit_required_tools_leaves_specs_without_them_alone():
    specs = [{"id": "1", "content": "a", "agent_type": "default", "depends_on": []}]
    assert fit_required_tools(specs, {"default": [], "reader": ["read_file"]}) == (specs, [], [])


# --------------------------------------------------------------------------- whole runs


def graph_with(plan, work=None, **settings):
    work = work or (lambda request: f"{subtask_of(request)} done")
    model = make_model(plan, work)
    return build_graph(model, agents=AGENTS, config=AgentConfig(**{**FAST, **settings}), checkpointer=InMemorySaver())


def test_a_kept_plan_s_step_started_warns_of_the_missing_tools():
    plan = plan_of(task("1", "read the report", agent_type="writer", tools=["read_file", "write_file"]))
    state, events = run(graph_with(plan, planner_retries=0), GOAL)
    [created] = [e for e in events if e["event"] == "plan_created"]
    assert "kept as planned" in created["notes"][0]
    [started] = [e for e in events if e["event"] == "step_started"]
    assert started["missing_tools"] == ["read_file"]
    assert state["tasks"]["1"]["status"] == "completed"  # a warning, not a stop
    assert state["tasks"]["1"]["required_tools"] == ["read_file", "write_file"]


def test_without_required_tools_nothing_changes():
    plan = plan_of(task("1", "read the report", agent_type="reader"), task("2", "write it up", depends_on=["1"]))
    state, events = run(graph_with(plan), GOAL)
    [created] = [e for e in events if e["event"] == "plan_created"]
    assert created["notes"] == [] and all("required_tools" not in t for t in created["tasks"])
    assert all("missing_tools" not in e for e in events if e["event"] == "step_started")
    assert all("required_tools" not in t for t in state["tasks"].values())


def test_a_fitting_plan_starts_its_steps_without_a_warning():
    plan = plan_of(task("1", "read the report", agent_type="reader", tools=["read_file"]))
    state, events = run(graph_with(plan), GOAL)
    [started] = [e for e in events if e["event"] == "step_started"]
    assert "missing_tools" not in started and state["tasks"]["1"]["status"] == "completed"


def test_plan_review_shows_required_tools_and_an_edit_keeps_the_user_s_agent_types():
    plan = plan_of(task("1", "read the report", agent_type="reader", tools=["read_file"]))
    graph = graph_with(plan, approve_plan=True)
    cfg = {"configurable": {"thread_id": "t"}}
    out = graph.invoke({"messages": [("user", GOAL)]}, cfg)
    shown = out["__interrupt__"][0].value["tasks"]
    assert shown[0]["required_tools"] == ["read_file"]
    edited = [{**shown[0], "agent_type": "writer", "required_tools": ["Read-File", "telepathy"]}]
    events = []
    for mode, chunk in graph.stream(Command(resume=edited), cfg, stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk)
        else:
            out = chunk
    assert out["tasks"]["1"]["agent_type"] == "writer" and out["tasks"]["1"]["required_tools"] == ["read_file"]
    [reviewed] = [e for e in events if e["event"] == "plan_reviewed"]
    assert "unknown tool 'telepathy' dropped" in reviewed["notes"][0]
    assert "which agent type 'writer' lacks" in reviewed["notes"][1]
    [started] = [e for e in events if e["event"] == "step_started"]
    assert started["missing_tools"] == ["read_file"]


def test_a_feedback_for_several_tools_names_the_types_that_have_them_all():
    specs = [{"id": "1", "content": "a", "agent_type": "writer", "required_tools": ["read_file", "web_search"]}]
    tools = {name: [t.__name__ for t in p.tools] for name, p in AGENTS.items()}
    _, notes, problems = fit_required_tools(specs, {"default": [], **tools})
    assert notes == []
    assert problems == [
        "task '1' needs read_file and web_search, which agent type 'writer' lacks; give it an agent type that has "
        "all of read_file and web_search: scout"
    ]


# --------------------------------------------------------------------------- the replanner


def flagged_queue():
    """``a`` failed asking for a replan; ``b`` (pending) waits on it."""
    from replangraph.queue.tasks import new_task

    a = new_task("a", "read the report", position=[0], agent_type="reader")
    a.update(status="failed", error="file moved", replan_request={"trigger": "failure", "reason": "file moved"})
    b = new_task("b", "write it up", position=[1], depends_on=["a"], agent_type="writer")
    return {"goal": GOAL, "tasks": {"a": a, "b": b}, "replans": []}


def replanner_for(respond, **config):
    from replangraph.nodes.planning.replanner import Replanner

    settings = {**FAST, "single_agent_fallback": False, **config}
    return Replanner(ScriptedChatModel(respond=respond), resolve_profiles(AGENTS, ()), AgentConfig(**settings))


def test_the_replanner_lists_tools_and_checks_the_new_tasks_required_tools():
    seen = []

    def respond(request):
        seen.append(request)
        if retries_in(request) == 0:
            return plan_call(task("a2", "search for the report", agent_type="writer", tools=["Web-Search"]))
        return plan_call(task("a2", "search for the report", agent_type="scout", tools=["web_search"]))

    update = replanner_for(respond)(flagged_queue())
    assert "(tools: web_search, read_file)" in seen[0].system and "required_tools" in seen[0].system
    assert "which agent type 'writer' lacks" in seen[1].prompt and "scout" in seen[1].prompt
    new = update["tasks"]["a2"]
    assert new["agent_type"] == "scout" and new["required_tools"] == ["web_search"]
    assert update["replans"][-1]["outcome"] == "replanned" and update["replans"][-1]["model_calls"] == 2


def test_the_replanner_reassigns_a_default_task_and_keeps_a_mismatch_with_a_note():
    only_writer = replanner_for(lambda r: plan_call(task("a2", "save it", tools=["write_file", "ask_user"])))
    update = only_writer(flagged_queue())
    assert update["tasks"]["a2"]["agent_type"] == "writer" and update["tasks"]["a2"]["required_tools"] == ["write_file"]
    stubborn = replanner_for(
        lambda r: plan_call(task("a2", "look it up", agent_type="reader", tools=["web_search", "teleport"])),
        replanner_retries=1,
    )
    update = stubborn(flagged_queue())
    record = update["replans"][-1]
    assert update["tasks"]["a2"]["agent_type"] == "reader" and record["model_calls"] == 2
    assert any("unknown tool 'teleport' dropped" in n for n in record["notes"])
    assert any("kept as planned" in n for n in record["notes"])


def test_a_team_with_the_tool_does_not_stop_the_only_agent_type_with_it_from_taking_a_default_task():
    tools = {"default": [], "web": ["fetch_page"], "webpanel": ["fetch_page"]}
    specs, notes, problems = fit_required_tools([task("1", tools=["fetch_page"])], tools, feature_types=["webpanel"])
    assert specs[0]["agent_type"] == "web" and problems == [] and "runs as 'web'" in notes[0]
    specs, _, problems = fit_required_tools([task("1", tools=["fetch_page"])], tools)  # not known as a team
    assert "agent_type" not in specs[0] and "web, webpanel" in problems[0]
