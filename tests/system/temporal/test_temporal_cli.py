"""The command line on Temporal: ``replangraph worker --temporal`` serves the graph ``run`` builds from the same
flags, and ``run --temporal`` / ``resume --temporal`` drive a run there as ``run`` / ``resume`` drive a local one,
against the fake OpenAI server on loopback. The client commands run in this process (they build no graph and no
plugin), except the one a test stops with Ctrl-C."""

from __future__ import annotations

import asyncio
import builtins
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_helpers import (
    ANSI,
    ASK_GOAL,
    HOLD_ENV,
    MARKET_QUESTION,
    PLAIN_GOAL,
    TOOLS,
    TWO_GOAL,
    Terminal,
    hitl_responder,
    json_lines,
    lookup_responder,
    main,
    tool_results,
)
from openai_loopback import OpenAILoopback
from temporal_support import RUN_S, new_queue, on_temporal

pytestmark = pytest.mark.system  # a Temporal dev server, worker processes, a loopback model server

CLI = "import sys; from replangraph.app.cli import main; sys.exit(main())"
HELPERS = Path(__file__).resolve().parents[2] / "helpers"
LOOKUP_GOAL = "Look up the Zephyr 14 and report what the lookup returns."
WORKER_TOOLS = (*TOOLS, "--tools", "cli_helpers:held_lookup")


def responder(request):
    """`lookup_responder` for `LOOKUP_GOAL`, `hitl_responder` for the others (chosen by the request's text)."""
    return lookup_responder(request) if "Look up the Zephyr 14" in request.prompt else hitl_responder(request)


@contextmanager
def cli_worker(address: str, queue: str, base_url: str, *flags: str, env: dict | None = None) -> Iterator:
    """``replangraph worker --temporal ADDRESS`` in a process of its own, once it says it serves."""
    env = {**os.environ, "OPENAI_API_KEY": "test-key", **(env or {})}
    env["PYTHONPATH"] = os.pathsep.join([str(HELPERS), *sys.path])
    argv = [sys.executable, "-c", CLI, "worker", "--temporal", address, "--task-queue", queue]
    argv += ["--base-url", base_url, "--model", "scripted", *flags]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = child.stdout.readline()
        if not line.startswith("worker: serving"):
            child.kill()
            pytest.fail(f"the worker did not start: {line!r} {child.communicate(timeout=10)[1][-3000:]}")
        yield child
    finally:
        child.terminate()
        child.wait(10)


@pytest.fixture(scope="module")
def served(temporal_address, tmp_path_factory) -> Iterator[dict]:
    """One CLI worker (the demo's tool and `held_lookup`, held in the folder ``hold``) on a queue of its own, and
    its model server, for the module's runs."""
    queue, hold = new_queue(), tmp_path_factory.mktemp("hold")
    with (
        OpenAILoopback(responder) as model,
        cli_worker(temporal_address, queue, model.base_url, *WORKER_TOOLS, env={HOLD_ENV: str(hold)}),
    ):
        yield {"address": temporal_address, "queue": queue, "model": model, "hold": hold}
        assert not model.errors


@pytest.fixture
def client_only(monkeypatch, tmp_path):
    """The client commands run without a model: no key, no base URL; a local run writes to ``tmp_path``."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "REPLANGRAPH_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REPLANGRAPH_DB", str(tmp_path / "runs.sqlite"))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal: questions are not asked inline


def on_temporal_cli(served: dict, *argv: str) -> tuple[int, str]:
    """``replangraph run --temporal`` (``argv`` its goal and flags) on the module's worker, in this process."""
    return main("run", "--temporal", served["address"], "--task-queue", served["queue"], *argv)


def resume_on_temporal(served: dict, thread: str, *argv: str) -> tuple[int, str]:
    return main("resume", "--temporal", served["address"], "--thread", thread, *argv)


def local(served: dict, monkeypatch, *argv: str) -> tuple[int, str]:
    """``replangraph run`` / ``resume`` here with the same model server (``argv``: the command and its flags)."""
    with monkeypatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "test-key")
        model = ("--base-url", served["model"].base_url, "--model", "scripted")
        return main(*argv, *model)


def without(objects: list[dict], *keys: str) -> list[dict]:
    return [{k: v for k, v in o.items() if k not in keys} for o in objects]


def test_the_worker_command_serves_the_graph_run_builds(served):
    out, activities, _ = on_temporal(served["address"], served["queue"], PLAIN_GOAL)
    assert out["final_answer"] == "FINAL ANSWER\nRESULT: Paris"
    assert [t["status"] for t in out["tasks"].values()] == ["completed"]
    assert activities["replangraph.planner"] == 1


def test_run_on_temporal_gives_what_the_local_run_gives_and_resume_shows_how_it_ended(
    served, client_only, monkeypatch, capsys
):
    code, text = on_temporal_cli(served, PLAIN_GOAL, "--thread", "cli-plain", "--json")
    assert code == 0, text
    remote = json_lines(text)
    resume = f"replangraph resume --temporal {served['address']} --thread cli-plain"
    assert remote[0] == {"event": "run_started", "thread": "cli-plain", "resume": resume}
    code, text = local(served, monkeypatch, "run", PLAIN_GOAL, *TOOLS, "--thread", "cli-plain", "--json")
    assert code == 0, text
    here = json_lines(text)
    # the same events and the same end; the tokens stay on the workers (null), and so does the resume command
    assert without(remote[1:], "tokens") == without(here[1:], "tokens")
    assert remote[-1]["event"] == "run_finished" and remote[-1]["exit_code"] == 0
    assert remote[-1]["final_answer"] == "FINAL ANSWER\nRESULT: Paris" and remote[-1]["tokens"] is None

    code, text = resume_on_temporal(served, "cli-plain")
    assert code == 0, text
    assert "The run on thread cli-plain had already ended." in text
    assert text.split("Final answer:\n", 1)[1].startswith("FINAL ANSWER\nRESULT: Paris")

    code, text = on_temporal_cli(served, "Another goal", "--thread", "cli-plain")  # an ended run takes no goal
    assert code == 2
    refused = "The thread cli-plain cannot take this goal (the run on thread cli-plain has ended"
    assert refused in capsys.readouterr().err


def test_a_question_waits_with_exit_3_and_resume_answers_it_as_the_local_run_does(served, client_only, monkeypatch):
    code, text = on_temporal_cli(served, ASK_GOAL, "--thread", "cli-ask")
    assert code == 3, text
    assert "  [ ] 1: Find the launch year of the Zephyr 14; ask the user which market" in text  # the queue
    assert f"1 asks: Please confirm: {MARKET_QUESTION}" in text
    assert "Temporal keeps the run. Answer in the order listed with:" in text
    assert f'replangraph resume --temporal {served["address"]} --thread cli-ask --answer "..."' in text
    assert "Final answer" not in text

    code, text = resume_on_temporal(served, "cli-ask", "--answer", "EU", "--json")
    assert code == 0, text
    remote = json_lines(text)
    assert remote[0]["event"] == "run_started"
    assert tool_results(served["model"].requests, "ask_user")[-1] == "EU"  # it reached the model as the result

    assert local(served, monkeypatch, "run", ASK_GOAL, *TOOLS, "--thread", "cli-ask")[0] == 3
    code, text = local(served, monkeypatch, "resume", "--thread", "cli-ask", "--answer", "EU", "--json")
    assert code == 0, text
    here = json_lines(text)
    assert without(remote[1:], "tokens") == without(here[1:], "tokens")  # question_answered to run_finished
    assert "market EU" in remote[-1]["final_answer"]


def test_on_a_terminal_the_live_view_shows_the_queue_and_the_question_is_asked_inline(served, client_only, monkeypatch):
    pytest.importorskip("rich")
    typed = ["US"]
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(builtins, "input", lambda prompt="": typed.pop(0))
    out = Terminal()
    code = cli_main("run", "--temporal", served["address"], "--task-queue", served["queue"], ASK_GOAL, out=out)
    raw = out.getvalue()
    assert code == 0, ANSI.sub("", raw)
    asked = raw.index(f"1 asks: Please confirm: {MARKET_QUESTION}")
    assert raw.rindex("\x1b[?25h", 0, asked) > raw.rindex("\x1b[?25l", 0, asked)  # the view stopped first
    assert typed == []
    text = ANSI.sub("", raw)
    assert "▶ 1 running Find the launch year of the Zephyr 14" in text[:asked]  # the queue, from the updates
    assert re.search(r"steps: \d+ · tokens: n/a · ✔ 1 completed\n", text)  # after the answer
    assert "market US" in text.split("Final answer:", 1)[1]


def cli_main(*argv: str, out: io.StringIO) -> int:
    from replangraph.app import cli

    return cli.main(list(argv), out=out)


def test_the_run_s_flags_go_with_it_and_commands_are_sent_as_answers(served, client_only):
    # the worker runs one subtask at a time and approves no plan: the run's own flags decide
    flags = ("--approve-plan", "--concurrency", "2", "--json")
    code, text = on_temporal_cli(served, TWO_GOAL, "--thread", "cli-two", *flags)
    assert code == 3, text
    (plan,) = json_lines(text)[-1]["interrupts"]
    assert plan["value"]["kind"] == "plan" and len(plan["value"]["tasks"]) == 2

    code, text = resume_on_temporal(served, "cli-two", "--answer", "/status", "--answer", "approve", "--json")
    assert code == 3, text  # the plan approved after /status was answered; both subtasks now ask, in parallel
    lines = json_lines(text)
    assert any(e["event"] == "command_answered" and e["command"] == "/status" for e in lines)
    waiting = lines[-1]
    assert [i["value"]["task_id"] for i in waiting["interrupts"]] == ["1", "2"]
    assert waiting["resume"].endswith('--thread cli-two --answer "..." --answer "..."')

    code, text = resume_on_temporal(served, "cli-two", "--answer", "EU", "--answer", "US", "--json")
    assert code == 0, text
    answer = json_lines(text)[-1]["final_answer"]
    assert "Zephyr 14 launched in 2021 in market EU" in answer and "Atlas 13 launched in 2021 in market US" in answer


def test_ctrl_c_stops_following_and_the_run_goes_on_where_resume_finds_it(served, client_only):
    hold, thread = served["hold"], "cli-held"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    argv = [sys.executable, "-c", CLI, "run", "--temporal", served["address"], "--task-queue", served["queue"]]
    # SIGINT as at a terminal (a shell's background job starts with it ignored)
    as_terminal = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    with subprocess.Popen(
        [*argv, "--thread", thread, LOOKUP_GOAL],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=as_terminal,
    ) as run:
        wait_for(hold / "started", run)
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=RUN_S)
    assert run.returncode == 130, out + err
    resume = f"replangraph resume --temporal {served['address']} --thread {thread}"
    assert f"Stopped following the run; it goes on on Temporal. Follow it again with: {resume}" in out

    argv = [sys.executable, "-c", CLI, "resume", "--temporal", served["address"], "--thread", thread, "--json"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as again:
        first = json.loads(again.stdout.readline())
        assert first == {"event": "run_started", "thread": thread, "resume": resume}  # it follows the held run
        (hold / "go").write_text("")
        out, err = again.communicate(timeout=RUN_S)
    assert again.returncode == 0, out + err
    lines = [json.loads(line) for line in out.splitlines()]
    events = [e["event"] for e in lines]
    assert "step_completed" in events and events[-2:] == ["plan_completed", "run_finished"]  # what came after
    assert lines[-1]["exit_code"] == 0 and lines[-1]["final_answer"].endswith("RESULT: Zephyr 14: launched in 2021")
    assert tool_results(served["model"].requests, "lookup")[-1] == "Zephyr 14: launched in 2021"


def wait_for(path: Path, process: subprocess.Popen) -> None:
    """Once ``path`` exists; fails the test if ``process`` ends first, or after `RUN_S`."""
    import time

    deadline = time.monotonic() + RUN_S
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"{path.name} did not appear: {out[-2000:]} {err[-2000:]}")
        time.sleep(0.02)


def test_a_run_terminated_on_temporal_has_no_final_answer(served, client_only, capsys):
    from replangraph.temporal import connect

    async def terminate(thread: str) -> None:
        client = await connect(served["address"])
        await client.get_workflow_handle(thread).terminate("the test ends it")

    assert on_temporal_cli(served, PLAIN_GOAL, "--thread", "cli-gone", "--approve-plan")[0] == 3
    asyncio.run(terminate("cli-gone"))
    code, text = resume_on_temporal(served, "cli-gone", "--json")
    assert code == 1, text
    assert without(json_lines(text), "resume") == [{"event": "stopped", "exit_code": 1, "reason": "run lost"}]
    assert "The run on thread cli-gone was terminated on Temporal (" in capsys.readouterr().err


def test_a_server_that_cannot_be_reached_says_so_and_exits_4(client_only, capsys):
    from temporal_support import need_temporal

    need_temporal()
    assert main("run", "--temporal", "127.0.0.1:1", PLAIN_GOAL)[0] == 4
    assert "The Temporal server at 127.0.0.1:1 does not answer" in capsys.readouterr().err
    code, text = main("resume", "--temporal", "127.0.0.1:1", "--thread", "t1", "--json")
    assert code == 4 and json_lines(text)[-1]["exit_code"] == 4


def test_what_the_workers_or_a_database_decide_is_refused_with_temporal(client_only, capsys):
    for flags in (["--db", "runs.sqlite"], ["--tools", "replangraph.app.demo:read_ranking"], ["--model", "m"]):
        assert main("run", "--temporal", "127.0.0.1:1", PLAIN_GOAL, *flags)[0] == 2
        assert f"replangraph run --temporal takes no {flags[0]}: the workers build the graph" in capsys.readouterr().err
    assert main("resume", "--temporal", "127.0.0.1:1", "--thread", "t1", "--max-steps", "9")[0] == 2
    assert "replangraph resume --temporal takes no --max-steps: " in capsys.readouterr().err


def test_resume_of_a_thread_the_server_has_not_is_a_usage_error(temporal_address, client_only, capsys):
    assert main("resume", "--temporal", temporal_address, "--thread", "never-ran")[0] == 2
    assert "There is no run with thread id 'never-ran' on the Temporal server at" in capsys.readouterr().err


def test_a_worker_without_a_server_says_so_and_exits_4(tmp_path):
    from temporal_support import need_temporal

    need_temporal()
    with OpenAILoopback(hitl_responder) as model:
        env = {**os.environ, "OPENAI_API_KEY": "test-key"}
        argv = [sys.executable, "-c", CLI, "worker", "--temporal", "127.0.0.1:1", "--base-url", model.base_url]
        done = subprocess.run([*argv, "--model", "scripted"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 4, done.stderr
    assert "The Temporal server at 127.0.0.1:1 does not answer" in done.stderr
