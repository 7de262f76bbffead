"""Durable CLI runs: `replangraph run` checkpoints on a thread, `replangraph resume` goes on with it.

The model is the loopback fake OpenAI server of test_openai_compat; its responders (tests/cli_helpers.py) are
scripted by the request's content (the goal, the subtask, the tool results), never by call order.
"""

from __future__ import annotations

import builtins
import io
import json
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import (
    ASK_GOAL,
    MARKET_QUESTION,
    PLAIN_GOAL,
    TWO_GOAL,
    checkpoints,
    hitl_responder,
    lookup_responder,
    main,
    thread_of,
    tool_results,
)
from clocks import GUARD_S
from langchain_core.tools import tool
from test_openai_compat import FakeOpenAI, fake_openai  # noqa: F401  (the fixture)

from replangraph.app.demo import DEMO_GOAL, expected_products

pytestmark = pytest.mark.system  # the loopback fake OpenAI server (and PostgreSQL for `durable_db`)


class CtrlC:
    """A Ctrl-C that the `lookup` tool presses once, while it runs, as a terminal would: SIGINT to the process's
    main thread, whose handler raises KeyboardInterrupt there (Python's default handler, here noting that it ran).
    The tool returns only once the main thread has taken it, so the run always stops while the tool runs.

    A signal that lands just before the main thread blocks (between its last check for signals and its wait for
    the tools node) waits there until the wait ends, as a real Ctrl-C would: so the tool sends it again every
    `RESEND_S` until it is taken; the handler raises once and ignores the rest."""

    RESEND_S = 0.05

    def __init__(self) -> None:
        self.taken = threading.Event()
        self.sent = 0

    def handler(self, signum: int, frame: object) -> None:
        if not self.taken.is_set():
            self.taken.set()
            raise KeyboardInterrupt

    def press(self) -> None:
        for _ in range(int(GUARD_S / self.RESEND_S)):
            self.sent += 1
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            if self.taken.wait(self.RESEND_S):
                return
        raise AssertionError(f"Ctrl-C was not taken by the main thread within {GUARD_S:g} s")


PRESS: dict[str, CtrlC | None] = {"next": None}
"""The Ctrl-C the `lookup` tool presses (then forgets); None: it presses none."""


@pytest.fixture(autouse=True)
def default_db(tmp_path, monkeypatch) -> Path:
    """Runs without --db write here, never to the user's data folder."""
    path = tmp_path / "default-runs.sqlite"
    monkeypatch.setenv("REPLANGRAPH_DB", str(path))
    monkeypatch.setitem(PRESS, "next", None)
    return path


@pytest.fixture
def ctrl_c() -> Iterator[CtrlC]:
    """The next `lookup` call presses Ctrl-C. SIGINT is handled as at a terminal for the test: a process started
    in the background by a shell (``pytest &``, some CI runners) inherits SIGINT ignored, and Python keeps it so."""
    press = CtrlC()
    previous = signal.signal(signal.SIGINT, press.handler)
    PRESS["next"] = press
    try:
        yield press
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def server(request) -> list[dict]:
    """test_openai_compat's loopback fake OpenAI server (it answers as the demo); the requests it was sent."""
    return request.getfixturevalue("fake_openai")


@pytest.fixture
def hitl(server) -> list[dict]:
    """The fake server, answering with `hitl_responder`."""
    FakeOpenAI.responder = staticmethod(hitl_responder)
    return server


@pytest.fixture
def no_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # a pipe: not a terminal


@pytest.fixture
def terminal(monkeypatch):
    """stdin is a terminal; returns the list of lines the user will type (each input() takes the next)."""
    typed: list[str] = []
    prompts: list[str] = []

    def fake_input(prompt: str = "") -> str:
        prompts.append(prompt)
        if not typed:
            raise EOFError
        return typed.pop(0)

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(builtins, "input", fake_input)
    return typed


def test_run_keeps_checkpoints_in_the_db_and_resume_of_an_ended_run_prints_its_answer(server, tmp_path):
    db = tmp_path / "runs.sqlite"
    code, text = main("run", DEMO_GOAL, "--tools", "replangraph.app.demo:read_ranking", "--db", str(db))
    assert code == 0
    thread = thread_of(text)
    assert text.splitlines()[0] == f"thread: {thread} (resume with: replangraph resume --thread {thread} --db {db})"
    assert len(thread) == 8
    assert checkpoints(db, thread) > 5
    requests = len(server)

    code, again = main("resume", "--thread", thread, "--db", str(db))
    assert code == 0
    assert f"The run on thread {thread} had already ended." in again
    answer = again.split("Final answer:", 1)[1]
    assert all(name in answer for name in expected_products(19))
    assert len(server) == requests  # nothing ran again


def test_the_default_db_honours_replangraph_db(hitl, default_db):
    code, text = main("run", PLAIN_GOAL, "--thread", "capital-1")
    assert code == 0
    assert text.splitlines()[0] == "thread: capital-1 (resume with: replangraph resume --thread capital-1)"
    assert "RESULT: Paris" in text.split("Final answer:", 1)[1]
    assert checkpoints(default_db, "capital-1") > 0
    code, again = main("resume", "--thread", "capital-1")  # found in $REPLANGRAPH_DB again
    assert code == 0 and "had already ended" in again


def test_a_question_without_a_terminal_exits_3_and_resume_answer_finishes_the_run(hitl, no_terminal, durable_db):
    """On SQLite and on PostgreSQL (tests/conftest.py's `durable_db`)."""
    db = durable_db
    code, text = main("run", ASK_GOAL, "--db", db, "--thread", "q1")
    assert code == 3
    assert f"1 asks: Please confirm: {MARKET_QUESTION}" in text
    assert f'replangraph resume --thread q1 --answer "..." --db {db}' in text
    assert "Final answer" not in text
    assert tool_results(hitl, "ask_user") == []

    code, text = main("resume", "--thread", "q1", "--db", db, "--answer", "EU")
    assert code == 0, text
    assert tool_results(hitl, "ask_user")[-1] == "EU"  # the answer reached the model as the call's result
    assert "RESULT: the Zephyr 14 launched in 2021 in market EU" in text.split("Final answer:", 1)[1]
    assert "1 asked 'Which market do you mean, EU or US?': EU" in text  # the question_answered event

    assert main("resume", "--thread", "q1", "--db", db)[0] == 0  # ended
    assert main("resume", "--thread", "q2", "--db", db)[0] == 2  # unknown here


def test_parallel_questions_take_one_answer_each_in_the_order_listed(hitl, no_terminal, tmp_path):
    db = str(tmp_path / "runs.sqlite")
    code, text = main("run", TWO_GOAL, "--db", db, "--thread", "q2", "--concurrency", "2")
    assert code == 3
    assert text.index("[1] 1 asks:") < text.index("[2] 2 asks:")
    assert f'replangraph resume --thread q2 --answer "..." --answer "..." --db {db}' in text

    code, text = main("resume", "--thread", "q2", "--db", db, "--answer", "EU")  # one answer short
    assert code == 3
    assert "so the 1 given were not sent" in text
    assert "[1] 1 asks:" in text.split("waiting for")[1] and "[2] 2 asks:" in text.split("waiting for")[1]
    assert tool_results(hitl, "ask_user") == []

    # a command between the answers is answered, and the questions asked again keep the answers given before it
    code, text = main("resume", "--thread", "q2", "--db", db, "--answer", "EU", "--answer", "/status", "--answer", "US")
    assert code == 0, text
    assert 'Waiting for an answer to 2: "Which market do you mean, EU or US?"' in text
    answer = text.split("Final answer:", 1)[1]
    assert "the Zephyr 14 launched in 2021 in market EU" in answer
    assert "the Atlas 13 launched in 2021 in market US" in answer
    assert sorted(set(tool_results(hitl, "ask_user"))) == ["EU", "US"]


def test_plan_approval_with_resume_answer_approve(hitl, no_terminal, tmp_path):
    db = str(tmp_path / "runs.sqlite")
    code, text = main("run", PLAIN_GOAL, "--db", db, "--thread", "p1", "--approve-plan")
    assert code == 3
    assert "waits for your approval" in text
    assert "1: Name the capital of France [default]" in text
    assert len([r for r in hitl if "RESULT" in json.dumps(r)]) == 0  # nothing ran before the approval

    code, text = main("resume", "--thread", "p1", "--db", db, "--answer", "approve")
    assert code == 0, text
    assert "plan approved (1 task(s))" in text
    assert "RESULT: Paris" in text.split("Final answer:", 1)[1]


def test_cancelling_the_plan_ends_with_the_report_and_exit_1(hitl, no_terminal, tmp_path):
    db = str(tmp_path / "runs.sqlite")
    assert main("run", PLAIN_GOAL, "--db", db, "--thread", "p2", "--approve-plan")[0] == 3
    code, text = main("resume", "--thread", "p2", "--db", db, "--answer", "/cancel")
    assert code == 1
    assert "the user cancelled the run" in text.split("Final answer:", 1)[1]


def test_a_slash_command_at_the_inline_prompt_is_answered_and_the_plan_asked_again(hitl, terminal, tmp_path):
    db = str(tmp_path / "runs.sqlite")
    terminal += ["/status", "approve"]
    code, text = main("run", PLAIN_GOAL, "--db", db, "--approve-plan")
    assert code == 0, text
    assert "/status:\n  Tasks: 1 pending" in text
    assert "Waiting for approval of the plan" in text
    assert text.count("waits for your approval") == 2  # asked, then asked again after the command
    assert "RESULT: Paris" in text.split("Final answer:", 1)[1]
    assert terminal == []


def test_a_question_is_answered_inline_on_a_terminal(hitl, terminal, tmp_path):
    terminal.append("US")
    code, text = main("run", ASK_GOAL, "--db", str(tmp_path / "runs.sqlite"))
    assert code == 0, text
    assert f"1 asks: Please confirm: {MARKET_QUESTION}" in text
    assert tool_results(hitl, "ask_user") == ["US"]
    assert "market US" in text.split("Final answer:", 1)[1]


def test_inline_answers_given_before_a_command_are_kept(hitl, terminal, tmp_path):
    terminal += ["EU", "/plan", "US"]
    code, text = main("run", TWO_GOAL, "--db", str(tmp_path / "runs.sqlite"), "--concurrency", "2")
    assert code == 0, text
    assert "/plan:\n  [>] 1: Find the launch year of the Zephyr 14" in text
    assert text.count("1 asks:") == 1 and text.count("2 asks:") == 2  # 2 is asked again after the command
    answer = text.split("Final answer:", 1)[1]
    assert "Zephyr 14 launched in 2021 in market EU" in answer and "Atlas 13 launched in 2021 in market US" in answer


def test_the_cancel_word_at_the_prompt_cancels_at_once(hitl, terminal, tmp_path):
    terminal += ["EU", "/cancel"]  # the second question's answer; nothing asks for a third
    code, text = main("run", TWO_GOAL, "--db", str(tmp_path / "runs.sqlite"), "--concurrency", "2")
    assert code == 1, text
    assert "/cancel:\n  Cancelled: the run stops here" in text
    assert "the user cancelled the run" in text.split("Final answer:", 1)[1]
    assert tool_results(hitl, "ask_user") == []


def test_a_closed_terminal_exits_3_with_the_resume_command(hitl, terminal, tmp_path):
    code, text = main("run", ASK_GOAL, "--db", str(tmp_path / "runs.sqlite"), "--thread", "q3")
    assert code == 3
    assert 'replangraph resume --thread q3 --answer "..."' in text


def test_ctrl_c_at_the_prompt_exits_130_and_the_run_resumes(hitl, monkeypatch, terminal, tmp_path):
    db = str(tmp_path / "runs.sqlite")

    def interrupted(prompt: str = "") -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(builtins, "input", interrupted)
    code, text = main("run", ASK_GOAL, "--db", db, "--thread", "c1")
    assert code == 130
    assert "The checkpoint keeps the run; resume with: replangraph resume --thread c1 --db" in text
    code, text = main("resume", "--thread", "c1", "--db", db, "--answer", "EU")
    assert code == 0 and "market EU" in text


@tool
def lookup(name: str) -> str:
    """Look up a laptop's launch year."""
    press, PRESS["next"] = PRESS["next"], None
    if press is not None:  # the user presses Ctrl-C while the tool runs
        press.press()
    return f"{name}: launched 2021"


def test_ctrl_c_mid_run_exits_130_and_resume_goes_on_from_the_checkpoint(server, ctrl_c, tmp_path):
    FakeOpenAI.responder = staticmethod(lookup_responder)
    db = str(tmp_path / "runs.sqlite")
    code, text = main("run", "Look up the Zephyr 14", "--db", db, "--thread", "k1", "--tools", f"{__name__}:lookup")
    assert ctrl_c.taken.is_set() and code == 130, text
    assert "resume with: replangraph resume --thread k1" in text
    planned = [r for r in server if any(t["function"]["name"] == "Plan" for t in r.get("tools", []))]

    code, text = main("resume", "--thread", "k1", "--db", db)  # the tools come back from the checkpoint
    assert code == 0, text
    assert "thread: k1 (resuming)" in text
    assert "RESULT: Zephyr 14: launched 2021" in text.split("Final answer:", 1)[1]
    assert len([r for r in server if any(t["function"]["name"] == "Plan" for t in r.get("tools", []))]) == len(
        planned
    )  # not planned again


def test_a_stopped_run_that_got_a_command_since_resumes_through_the_graphs_resume(server, ctrl_c, tmp_path):
    """New input (here /status, sent with `run`) makes LangGraph drop the steps a stopped run had waiting;
    `resume` then sends the graph's /resume, which runs the waiting tool calls first."""
    FakeOpenAI.responder = staticmethod(lookup_responder)
    db = str(tmp_path / "runs.sqlite")
    tools = ("--tools", f"{__name__}:lookup")
    code, text = main("run", "Look up the Zephyr 14", "--db", db, "--thread", "k2", *tools)
    assert ctrl_c.taken.is_set() and code == 130, text

    code, text = main("run", "/status", "--db", db, "--thread", "k2", *tools)
    assert code == 0, text
    assert "/status:\n  Tasks: 0 pending, 1 in progress" in text
    assert "has not ended; continue it with: replangraph resume --thread k2" in text
    assert "Final answer" not in text

    code, text = main("resume", "--thread", "k2", "--db", db)
    assert code == 0, text
    assert "/resume:\n  Resuming the run where it stopped." in text
    assert "RESULT: Zephyr 14: launched 2021" in text.split("Final answer:", 1)[1]
    assert main("resume", "--thread", "k2", "--db", db)[1].count("had already ended") == 1


def test_base_url_flag_reaches_the_server(server, monkeypatch, tmp_path):
    import os

    url = os.environ["OPENAI_BASE_URL"]
    monkeypatch.delenv("OPENAI_BASE_URL")
    code, text = main("run", DEMO_GOAL, "--tools", "replangraph.app.demo:read_ranking", "--base-url", url)
    assert code == 0, text
    assert len(server) > 3
    assert "OPENAI_BASE_URL" not in os.environ  # set for the command only


def test_failed_subtasks_end_with_exit_1(server, tmp_path):
    FakeOpenAI.failures = [(503, {"retry-after": "0"})] * 100
    code, text = main("run", "anything at all", "--db", str(tmp_path / "runs.sqlite"))
    assert code == 1
    assert "The run for this goal stopped" in text


def test_resume_of_an_unknown_thread_exits_2(server, tmp_path, capsys):
    db = tmp_path / "runs.sqlite"
    assert main("run", DEMO_GOAL, "--tools", "replangraph.app.demo:read_ranking", "--db", str(db))[0] == 0
    code, _ = main("resume", "--thread", "nope", "--db", str(db))
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"There is no run with thread id 'nope' in {db}: use the id printed when the run started, or pass the --db "
        "it ran with."
    )

    missing = tmp_path / "elsewhere.sqlite"
    assert main("resume", "--thread", "nope", "--db", str(missing))[0] == 2
    assert "does not exist" in capsys.readouterr().err
    assert not missing.exists()


def test_resume_without_a_model_only_when_work_is_left(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main("run", "goal", "--db", str(tmp_path / "x.sqlite"))[0] == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert not (tmp_path / "x.sqlite").exists()


def test_tools_from_the_current_folder_and_resume_of_an_ended_run_without_them(server, tmp_path, monkeypatch, capsys):
    project = tmp_path / "project"
    project.mkdir()
    (project / "shoptools.py").write_text("from replangraph.app.demo import read_ranking\nTOOLS = [read_ranking]\n")
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the CLI adds the current folder; undone after the test
    db = tmp_path / "runs.sqlite"
    code, text = main("run", DEMO_GOAL, "--tools", "shoptools:TOOLS", "--db", str(db), "--thread", "t1")
    assert code == 0
    monkeypatch.chdir(tmp_path)  # elsewhere, where shoptools cannot be imported
    sys.modules.pop("shoptools", None)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(project)])
    code, again = main("resume", "--thread", "t1", "--db", str(db))
    assert code == 0 and "had already ended" in again
    assert main("run", "goal", "--tools", "shoptools", "--db", str(db))[0] == 2
    assert capsys.readouterr().err == "--tools expects MODULE:ATTR (a module and one of its names), got 'shoptools'.\n"
    assert main("run", "goal", "--tools", "nowhere:TOOLS", "--db", str(db))[0] == 2
    assert capsys.readouterr().err.startswith(
        "--tools 'nowhere:TOOLS' cannot be loaded (ModuleNotFoundError: No module named 'nowhere'): "
    )
    assert main("run", "   ", "--db", str(db))[0] == 2
    assert "needs a goal" in capsys.readouterr().err


def test_a_plan_edit_pasted_over_several_lines_is_one_answer(hitl, terminal, tmp_path):
    from replangraph.app.session import read_answer

    terminal.extend(["```json", '[{"id": "a", "content": "only this"}]', "```", "next"])
    assert read_answer() == '```json\n[{"id": "a", "content": "only this"}]\n```'
    terminal[:] = ["[", '  {"id": "a", "content": "x"}', "]", "next"]
    assert read_answer() == '[\n  {"id": "a", "content": "x"}\n]'
    terminal[:] = ["[maybe] yes", "next"]
    assert read_answer() == "[maybe] yes"
