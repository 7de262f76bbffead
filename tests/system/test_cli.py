"""Console script and the Studio factory."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from replangraph.app import cli, console, session, studio


def test_demo_prints_the_changing_queue_and_all_19_products():
    out = io.StringIO()
    assert cli.main(["demo"], out=out) == 0
    text = out.getvalue()
    assert "SCRIPTED" in text
    assert "[ ] 1_dyn_2: Extract products ranked 16-19" in text
    assert "Check: 19/19 products in the final answer." in text


def test_run_without_a_key_exits_with_a_clear_message(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert cli.main(["run", "anything"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def test_studio_factory_loads_without_a_key_and_reads_configurable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    graph = studio.make_graph({"configurable": {"max_steps": 7, "model": "gpt-4.1-mini", "unrelated": 1}})
    assert {"planner", "executor", "replanner", "compressor"} <= set(graph.get_graph().nodes)
    assert graph.checkpointer is None
    assert graph.config["recursion_limit"] > 7


def test_missing_key_surfaces_at_call_time_not_as_a_crash(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    graph = studio.make_graph({})
    out = graph.invoke({"messages": [("user", "hello")]})
    assert out["tasks"]["1"]["status"] == "failed"
    assert "OPENAI_API_KEY is not set" in out["tasks"]["1"]["error"]
    assert "## Not finished" in out["final_answer"]


def test_config_from_configurable_rejects_bad_values():
    with pytest.raises(ValueError):
        studio.config_from_configurable({"max_steps": -1})


def test_every_event_has_a_readable_line():
    from replangraph import EVENT_NAMES
    from replangraph.app.feature_cli import feature_clis

    samples = {
        "plan_created": {"tasks": [{}], "fallback_reason": "model down", "notes": ["agent type 'x' does not exist"]},
        "step_started": {"task_id": "a", "agent_type": "default", "content": "read"},
        "step_completed": {"task_id": "a", "result_preview": "done"},
        "step_failed": {"task_id": "a", "error": "boom"},
        "dynamic_tasks_added": {"parent_id": "a", "task_ids": ["a_dyn_0"]},
        "replanning": {
            "task_id": "a",
            "trigger": "tool",
            "reason": "blocked",
            "outcome": "replanned",
            "new_task_ids": ["x"],
        },
        "context_compressed": {"task_id": "a", "tokens_before": 900, "tokens_after": 300},
        "plan_completed": {"counts": {"completed": 2, "failed": 0}},
        "answer_cut": {"task_id": "a", "part": "result", "limit": 256},
        "answer_completed": {"items": 9},
        # each feature's events, as its folder's cli.py shows them
        **{name: payload for cli in feature_clis() for name, payload in cli.event_samples.items()},
    }
    assert set(samples) == set(EVENT_NAMES)  # a feature that emits an event gives an example of it
    lines = {name: console.describe({"event": name, **payload}) for name, payload in samples.items()}
    assert not [line for name, line in lines.items() if line.startswith(f"{name}: {{")]  # none prints its payload
    assert lines["replanning"] == "replanning after a (tool: blocked): replanned, new tasks x"
    assert lines["context_compressed"] == "a context compressed: 900 -> 300 tokens"
    assert lines["plan_completed"] == "plan completed: completed 2"
    assert lines["plan_reviewed"] == "plan edited (1 task(s))"
    assert lines["question_answered"] == "a asked 'Which year?': 2024"
    assert lines["team_merged"] == "a team best: kept careful (complete)"
    assert lines["answer_cut"] == "a result cut at the output limit of 256 tokens (max_output_tokens)"
    assert "fallback: model down" in lines["plan_created"]
    assert "agent type 'x' does not exist" in lines["plan_created"]
    assert lines["step_verified"] == "a checked: incomplete (ranks 6-19 missing); queued a_dyn_0"
    assert lines["dynamic_tasks_added"] == "a handed off work: added a_dyn_0"
    added_by_check = {"event": "dynamic_tasks_added", "parent_id": "a", "task_ids": ["a_dyn_0"], "source": "verifier"}
    assert console.describe(added_by_check) == "a: the check added a_dyn_0"  # the check's words (its cli.py)
    fallback = {**samples["replanning"], "event": "replanning", "fallback_task_id": "f1"}
    assert console.describe(fallback) == f"{lines['replanning']}; single-agent fallback f1 queued"
    assert lines["deadline_passed"] == "deadline_passed: the deadline deadline_s=60 passed (2.5 s ago)"
    assert lines["check_stood_down"] == "a_dyn_0: the check stood down (its follow-up a_dyn_0 found nothing a had not)"
    assert lines["answer_completed"] == "the final answer left out 9 items of the results: added after it"
    assert lines["budget_spent"] == "budget_spent: the token budget token_budget=10 was spent"
    assert lines["goal_checked"] == (
        "goal checked against every result: incomplete (ranks 20-25 missing); queued goal_check_1"
    )


def test_waiting_questions_are_listed_plan_first_then_by_task_id():
    from langgraph.types import Interrupt

    ids = ("10", "2", "1_b")
    items = [Interrupt(value={"kind": "question", "task_id": tid, "question": "?"}, id=f"i{tid}") for tid in ids]
    items.append(Interrupt(value={"kind": "plan", "tasks": []}, id="plan"))
    assert [i.id for i in session.sorted_interrupts(items)] == ["plan", "i1_b", "i2", "i10"]


def test_exit_code_follows_how_the_run_ended():
    done = {"id": "1", "status": "completed", "position": [1]}
    failed = {"id": "2", "status": "failed", "position": [2]}
    assert session.succeeded({"tasks": {"1": done}, "final_answer": "ok"})
    cancelled = {"final_answer": "report", "cancelled": True, "stop_reason": "the user cancelled the run"}
    assert not session.succeeded({"tasks": {"1": done}, **cancelled})
    assert not session.succeeded({"tasks": {"1": done, "2": failed}, "final_answer": "report"})
    replanned = [{"outcome": "replanned", "task_ids": ["2"]}]  # a failed subtask whose work a new plan took over
    assert session.succeeded({"tasks": {"1": done, "2": failed}, "replans": replanned, "final_answer": "ok"})
    # Every subtask done, but the final answer is the fallback report (the finalizer could not write it).
    report = {"tasks": {"1": done}, "final_answer": "report", "stop_reason": "the final answer could not be written"}
    assert not session.succeeded(report)
    assert session.succeeded({**report, "stop_reason": ""})


def test_studio_serves_your_tools_and_agents_from_the_environment(monkeypatch, tmp_path):
    (tmp_path / "studiotools.py").write_text(
        "from replangraph import AgentProfile\n"
        "def lookup(term: str) -> str:\n    '''Look a term up.'''\n    return term\n"
        "TOOLS = [lookup]\nAGENTS = {'researcher': AgentProfile(description='finds things')}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("REPLANGRAPH_TOOLS", "studiotools:TOOLS")
    monkeypatch.setenv("REPLANGRAPH_AGENTS", "studiotools:AGENTS")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    graph = studio.make_graph({})
    executor = graph.builder.nodes["executor"].runnable.func
    assert {"default", "researcher"} <= set(executor.profiles)
    assert "lookup" in [t.name for t in executor.profiles["researcher"].tools]
    monkeypatch.setenv("REPLANGRAPH_TOOLS", "studiotools")
    with pytest.raises(ValueError, match="REPLANGRAPH_TOOLS expects module:attribute"):
        studio.make_graph({})


def test_the_demo_entry_runs_offline():
    graphs = json.loads((Path(__file__).resolve().parents[2] / "langgraph.json").read_text())["graphs"]
    assert graphs["replangraph-demo"] == "./graph/app/studio.py:make_demo_graph"
    out = studio.make_demo_graph({}).invoke({"messages": [("user", "top 19 products")]})
    assert "Sable Leather Wallet" in out["final_answer"]


def test_every_command_and_flag_has_help_the_db_default_is_named_and_the_json_format_is_documented():
    import argparse

    parser = cli.make_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) == {"demo", "run", "resume", "output", "graph", "bench", "worker"}
    for name, command in commands.items():
        for action in command._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
    for name in ("demo", "run", "resume"):
        assert "--json" in {f for a in commands[name]._actions for f in a.option_strings}, name
    for name in ("run", "resume"):
        flags = {f for a in commands[name]._actions for f in a.option_strings}
        assert {"--db", "--thread", "--model", "--base-url", "--tools", "--max-steps", "--concurrency"} <= flags
        assert {"--verify", "--approve-plan", "--max-clarifications", "--max-output-tokens"} <= flags
        assert "--context-window" in flags
        db_help = next(a.help for a in commands[name]._actions if "--db" in a.option_strings)
        assert "$REPLANGRAPH_DB" in db_help and "runs.sqlite" in db_help
    assert "--answer" in {f for a in commands["resume"]._actions for f in a.option_strings}
    assert {"--temporal", "--task-queue"} <= {f for a in commands["run"]._actions for f in a.option_strings}
    assert "--temporal" in {f for a in commands["resume"]._actions for f in a.option_strings}
    worker = {f for a in commands["worker"]._actions for f in a.option_strings}  # what builds the graph, as run's
    assert {"--temporal", "--task-queue", "--model", "--base-url", "--tools", "--agents", "--verify"} <= worker
    text = parser.format_help()
    for needed in ('"run_finished"', '"waiting"', '"resume"', '"error"', "stderr", "4 the model server did not"):
        assert needed in " ".join(text.split()), needed
    assert cli.main(["resume"]) == 2  # --thread is required


def test_the_help_reads_as_prose_and_numbers_are_asked_for_plainly(capsys):
    parser = cli.make_parser()
    description = " ".join(parser.format_help().split("\n\n")[1].split())
    assert description.startswith("Plan a goal into a queue of subtasks and run it. Commands: demo (offline, scripted)")
    assert "``" not in parser.format_help()
    run_help = parser._subparsers._group_actions[0].choices["run"].format_help()
    assert "--max-steps N" in run_help and "--concurrency N" in run_help and "--max-clarifications N" in run_help
    for flag, value, message in [
        ("--max-steps", "abc", "argument --max-steps: expected a whole number, got 'abc'"),
        ("--concurrency", "1.5", "argument --concurrency: expected a whole number, got '1.5'"),
        ("--max-clarifications", "x", "argument --max-clarifications: expected a whole number, got 'x'"),
        ("--max-steps", "0", "argument --max-steps: must be at least 1, got 0"),
    ]:
        assert cli.main(["run", "goal", flag, value]) == 2
        assert capsys.readouterr().err.endswith(f"replangraph run: error: {message}\n")


def test_json_usage_errors_write_the_error_object(capsys):
    out = io.StringIO()
    assert cli.main(["run", "x", "--max-steps", "0", "--json"], out=out) == 2
    message = "argument --max-steps: must be at least 1, got 0"
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"event": "error", "exit_code": 2, "message": message}
    ]
    assert capsys.readouterr().err.endswith(f"replangraph run: error: {message}\n")  # for people, as before
    out = io.StringIO()
    assert cli.main(["resume", "--json"], out=out) == 2
    assert json.loads(out.getvalue())["message"] == "the following arguments are required: --thread"
    out = io.StringIO()
    assert cli.main(["run", "x", "--max-steps", "0"], out=out) == 2
    assert out.getvalue() == ""  # without --json, stdout stays empty


def test_tools_that_are_not_tools_end_the_command_naming_the_spec_and_the_fix(monkeypatch, tmp_path, capsys):
    (tmp_path / "mytools.py").write_text("def nodoc(x: int) -> int:\n    return x\n\nNAME = 'lookup'\n")
    (tmp_path / "broken.py").write_text("raise RuntimeError('no settings file')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the CLI adds the current folder; undone after the test
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a run checks its tools first, before the model
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    fix = ": name a @tool, a function with a docstring, or a list of them.\n"
    cases = {
        "os:path": "--tools 'os:path' names the module posixpath, not a tool",
        "mytools:nodoc": "--tools 'mytools:nodoc' cannot be a tool (Function must have a docstring if description "
        "not provided)",
        "mytools:NAME": "--tools 'mytools:NAME' names str 'lookup', not a tool",
    }
    for spec, start in cases.items():
        for command in (["graph"], ["run", "goal"]):
            assert cli.main([*command, "--tools", spec], out=io.StringIO()) == 2, spec
            assert capsys.readouterr().err == start + fix
    for command in (["graph"], ["run", "goal"]):
        assert cli.main([*command, "--tools", "broken:TOOLS"], out=io.StringIO()) == 2
        err = capsys.readouterr().err
        assert err.startswith("--tools 'broken:TOOLS' cannot be loaded (RuntimeError: ") and "no settings file" in err
        assert cli.main([*command, "--tools", "badtools:"], out=io.StringIO()) == 2
        assert (
            capsys.readouterr().err == "--tools expects MODULE:ATTR (a module and one of its names), got 'badtools:'.\n"
        )
    twice = ("--tools", "replangraph.app.demo:read_ranking") * 2
    assert cli.main(["graph", *twice], out=io.StringIO()) == 2
    assert capsys.readouterr().err == (
        "Cannot build the graph from these flags: agent type 'default' has several tools named read_ranking.\n"
    )


def test_graph_prints_the_mermaid_of_the_graph_run_builds_without_a_key(monkeypatch):
    from replangraph.app.demo import build_demo_graph

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = io.StringIO()
    assert cli.main(["graph"], out=out) == 0
    mermaid = out.getvalue()
    assert mermaid.lstrip().startswith("---") and "graph TD;" in mermaid
    nodes = ("planner", "executor", "tools", "compressor", "verifier", "replanner", "finalize", "ask", "plan_review")
    for node in (*nodes, "commands"):
        assert f"\t{node}({node})" in mermaid, node
    assert mermaid.rstrip("\n") == build_demo_graph().get_graph().draw_mermaid().rstrip("\n")

    flagged = io.StringIO()
    flags = ["--verify", "--approve-plan", "--tools", "replangraph.app.demo:read_ranking", "--max-steps", "5"]
    assert cli.main(["graph", *flags], out=flagged) == 0
    assert flagged.getvalue() == mermaid  # these settings change what the nodes do, not the graph's shape
    assert cli.main(["graph", "--tools", "replangraph.app.demo"], out=io.StringIO()) == 2


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.system
def test_bench_runs_the_checkouts_benchmarks_with_their_arguments(monkeypatch, tmp_path, capfd):
    assert cli.is_checkout(ROOT) and not cli.is_checkout(tmp_path)
    assert cli.benchmarks_root(ROOT / "tests") == ROOT
    monkeypatch.chdir(tmp_path)  # found through the package's source tree too (an editable install)
    out = io.StringIO()
    assert cli.main(["bench", "engine", "--help"], out=out) == 0
    assert "usage: python -m benchmarks engine" in out.getvalue() and "--quick" in out.getvalue()
    assert cli.main(["bench", "nope"], out=io.StringIO()) == 2
    from benchmarks.__main__ import BENCHMARKS

    known = ",".join(BENCHMARKS)
    assert f"usage: python -m benchmarks {{{known}}}" in capfd.readouterr().err

    assert cli.main(["bench"], out=io.StringIO()) == 2
    assert capfd.readouterr().err == (
        "replangraph bench needs a benchmark or the comparison's options, e.g. replangraph bench --base-url URL "
        "--model NAME, or replangraph bench engine --quick.\n"
    )
    assert cli.main(["bench", "--worlds", "nope"], out=io.StringIO()) == 2  # flags first: the comparison's
    assert "python -m benchmarks compare: error: argument --worlds: invalid choice" in capfd.readouterr().err
    compare, result = io.StringIO(), tmp_path / "result.json"  # no benchmark named: the comparison, flags given
    flags = ["--quick", "--worlds", "wide", "--personas", "lazy", "--agents", "replangraph", "react-todo"]
    assert cli.main(["bench", "--", *flags, "--json", str(result)], out=compare) == 0  # with or without "--"
    assert "| replangraph | lazy | **100%**" in compare.getvalue() and "| react-todo | lazy |" in compare.getvalue()
    assert json.loads(result.read_text())["endpoint"] == {"scripted": True, "personas": ["lazy"]}

    monkeypatch.setattr(cli, "benchmarks_root", lambda: None)  # an installed package, not a checkout
    assert cli.main(["bench", "engine"], out=io.StringIO()) == 2
    err = capfd.readouterr().err.strip()
    assert err.startswith("replangraph bench runs the benchmarks of a source checkout") and err.count(". ") == 0


def test_the_model_takes_the_base_url_without_the_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("REPLANGRAPH_MODEL", raising=False)
    model = studio.chat_model_from_env("local", base_url="http://127.0.0.1:1/v1")
    assert model.model_name == "local" and model.openai_api_base == "http://127.0.0.1:1/v1"
    assert studio._api_key("http://127.0.0.1:1/v1") == "not-needed"
    assert studio.chat_model_from_env().model_name == "gpt-4o-mini"  # OpenAI keeps its default
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY is not set"):
        studio._api_key()


def test_a_database_that_cannot_be_opened_is_one_sentence(tmp_path, capsys):
    import socket

    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert cli.main(["resume", "--thread", "t", "--db", f"postgresql://me:s3cret@127.0.0.1:{port}/runs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"Cannot connect to PostgreSQL at postgresql://me:***@127.0.0.1:{port}/runs (")
    assert err.endswith("): start the server or fix the URL.\n") and err.count(". ") == 0 and "s3cret" not in err
    assert cli.main(["run", "goal", "--db", str(tmp_path), "--base-url", f"http://127.0.0.1:{port}/v1"]) == 4
    capsys.readouterr()  # the server is checked before the database is opened
    folder = tmp_path / "runs"
    folder.mkdir()
    with cli.ExitStack() as stack, pytest.raises(cli.UsageError) as raised:
        cli.open_db(stack, folder)
    assert str(raised.value) == (
        f"Cannot open the database {folder}: {folder} is a folder: name a SQLite file in it, e.g. "
        f"{folder / 'runs.sqlite'}."
    )


TEAM_MODULE = (
    "from replangraph import AgentProfile, Team\n"
    "AGENTS = {\n"
    "    'careful': AgentProfile(description='checks twice'),\n"
    "    'fast': AgentProfile(description='answers at once'),\n"
    "    'panel': Team(members=['careful', 'fast'], merge='vote'),\n"
    "}\n"
    "WRONG_MEMBER = {'careful': AgentProfile(), 'panel': Team(members=['careful', 'nobody'])}\n"
    "NOT_A_PROFILE = {'careful': 'be careful'}\n"
    "LIST = [AgentProfile()]\n"
)


@pytest.fixture
def team_module(monkeypatch, tmp_path):
    (tmp_path / "clipanel.py").write_text(TEAM_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_agents_and_teams_come_from_one_dict_in_the_cli_and_in_studio(team_module, monkeypatch, capsys):
    out = io.StringIO()
    assert cli.main(["graph", "--agents", "clipanel:AGENTS"], out=out) == 0
    assert "\tteam(team)" in out.getvalue() and "\tteam_merge(team_merge)" in out.getvalue()
    monkeypatch.setenv("REPLANGRAPH_AGENTS", "clipanel:AGENTS")
    graph = studio.make_graph({})
    assert set(graph.builder.nodes["executor"].runnable.func.profiles) == {"default", "careful", "fast"}
    merge = graph.builder.nodes["team_merge"].runnable.func
    assert merge.teams["panel"].members == ("careful", "fast") and merge.teams["panel"].merge == "vote"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("clipanel:WRONG_MEMBER", "team 'panel' has unknown member 'nobody' (agent types: careful, default)"),
        ("clipanel:NOT_A_PROFILE", "agents['careful'] must be an AgentProfile, or an agent type a registered feature"),
        ("clipanel:LIST", "--agents 'clipanel:LIST' names a list, not a dict: name a dict of agent type to"),
        ("clipanel:MISSING", "--agents 'clipanel:MISSING' cannot be loaded"),
    ],
)
def test_a_bad_agents_spec_is_a_one_sentence_usage_error(team_module, capsys, spec, message):
    assert cli.main(["graph", "--agents", spec], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_run_on_temporal_takes_as_its_context_only_the_settings_given():
    from replangraph.app.settings import DEFAULTS, chosen_settings, given_agent_config

    args = cli.make_parser().parse_args(["run", "--temporal", "h:1", "goal", "--max-steps", "7", "--no-verify"])
    context = given_agent_config(args)
    assert context.model_fields_set == {"max_steps", "verify_results"}
    assert (context.max_steps, context.verify_results) == (7, False)
    plain = cli.make_parser().parse_args(["run", "goal"])
    assert given_agent_config(plain) is None
    assert chosen_settings(plain, {}) == DEFAULTS  # a flag not given still means its default


def test_the_context_window_flag_reaches_the_run_settings_and_is_recorded():
    from replangraph.app.settings import agent_config, chosen_settings

    args = cli.make_parser().parse_args(["run", "a goal", "--context-window", "8192"])
    settings = chosen_settings(args, {})
    assert agent_config(settings).context_window == 8192
    resumed = cli.make_parser().parse_args(["resume", "--thread", "t"])
    assert agent_config(chosen_settings(resumed, settings)).context_window == 8192  # resume keeps the recorded one
