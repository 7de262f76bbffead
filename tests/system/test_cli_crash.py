"""A run that stops on an unexpected error (here: the database fails mid-run) ends the command with one
sentence and exit code 5, the traceback saved to a file, and `replangraph resume` finishes the run.

A reader that goes away (``replangraph demo | head -1``) is no crash: the command ends at once with exit code 141,
as other Unix tools do, without a traceback, and the run's worker threads end with it."""

from __future__ import annotations

import io
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from test_openai_compat import fake_openai  # noqa: F401  (the fixture)

from replangraph.app import cli
from replangraph.app.console import EXIT_CRASHED, EXIT_PIPE
from replangraph.app.demo import DEMO_GOAL, expected_products

TOOLS = ("--tools", "replangraph.app.demo:read_ranking")


@pytest.mark.system
def test_a_crash_is_one_sentence_with_the_traceback_saved_and_resume_finishes(fake_openai, monkeypatch, tmp_path):  # noqa: F811
    db = str(tmp_path / "runs.sqlite")
    real_put = SqliteSaver.put
    puts = []

    def failing_put(self, *args, **kwargs):
        puts.append(1)
        if len(puts) == 6:
            raise sqlite3.OperationalError("disk I/O error")
        return real_put(self, *args, **kwargs)

    monkeypatch.setattr(SqliteSaver, "put", failing_put)
    out = io.StringIO()
    code = cli.main(["run", DEMO_GOAL, *TOOLS, "--db", db, "--thread", "c1"], out=out)
    text = out.getvalue()
    assert code == EXIT_CRASHED == 5, text
    assert "Traceback" not in text
    found = re.search(
        r"The run stopped on an unexpected error \(OperationalError: disk I/O error\); "
        r"the traceback is in (\S+)\. Once the cause is fixed, resume with: "
        r"replangraph resume --thread c1 --db \S+",
        text,
    )
    assert found, text
    saved = Path(found.group(1))
    assert "Traceback" in saved.read_text() and "disk I/O error" in saved.read_text()
    saved.unlink()

    monkeypatch.setattr(SqliteSaver, "put", real_put)
    out = io.StringIO()
    assert cli.main(["resume", "--thread", "c1", "--db", db], out=out) == 0, out.getvalue()
    answer = out.getvalue().split("Final answer:", 1)[1]
    assert all(name in answer for name in expected_products(19))


class ClosedPipe(io.StringIO):
    """An output whose reader goes away after ``lines`` lines: each write after them raises BrokenPipeError."""

    def __init__(self, lines: int, terminal: bool = False):
        super().__init__()
        self.left = lines
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal

    def write(self, text: str) -> int:
        if self.left <= 0:
            raise BrokenPipeError(32, "Broken pipe")
        self.left -= text.count("\n")
        return super().write(text)


def threads_left(before: set[threading.Thread]) -> list[str]:
    """Threads started since ``before`` and still running, but for the idle workers of replangraph's shared call
    pools (kept for the next run; they end at exit)."""
    return [
        t.name for t in set(threading.enumerate()) - before if t.is_alive() and not t.name.startswith("replangraph-")
    ]


@pytest.mark.parametrize(("argv", "terminal"), [(["demo"], False), (["demo", "--json"], False), (["demo"], True)])
def test_the_demo_into_a_closed_pipe_ends_with_141(argv, terminal):
    before = set(threading.enumerate())
    assert cli.main(argv, out=ClosedPipe(3, terminal)) == EXIT_PIPE == 141
    assert threads_left(before) == []


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
@pytest.mark.system
def test_a_run_into_a_closed_pipe_ends_with_141_and_is_no_crash(fake_openai, json_flag, tmp_path, capsys):  # noqa: F811
    out = ClosedPipe(2)
    before = set(threading.enumerate())
    assert cli.main(["run", DEMO_GOAL, *TOOLS, "--db", str(tmp_path / "runs.sqlite"), *json_flag], out=out) == 141
    assert "unexpected error" not in capsys.readouterr().err
    assert threads_left(before) == []  # the stream was closed: LangGraph's workers ended with it


def first_lines_then_closed(argv: list[str], lines: int = 1) -> tuple[int, str]:
    """Run the console script with its stdout on a pipe that is closed after ``lines`` lines are read, as
    ``| head -1`` does; its exit code and stderr. A command still running after a minute fails the test."""
    script = "import sys; from replangraph.app.cli import main; sys.exit(main())"
    child = subprocess.Popen(
        [sys.executable, "-c", script, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    for _ in range(lines):
        assert child.stdout.readline()
    child.stdout.close()
    try:
        _, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        pytest.fail(f"replangraph {' '.join(argv)} | head -{lines} did not end: {child.communicate()[1][-2000:]}")
    return child.returncode, err


@pytest.mark.parametrize("argv", [["demo"], ["demo", "--json"]])
@pytest.mark.system
def test_the_console_script_piped_into_head_ends_quietly(argv):
    code, err = first_lines_then_closed(argv)
    assert code == 141 and "Traceback" not in err, err


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
@pytest.mark.system
def test_a_run_piped_into_head_ends_quietly_and_does_not_hang(fake_openai, json_flag, tmp_path):  # noqa: F811
    argv = ["run", DEMO_GOAL, *TOOLS, "--db", str(tmp_path / "runs.sqlite"), *json_flag]
    code, err = first_lines_then_closed(argv)
    assert code == 141 and "Traceback" not in err and "unexpected error" not in err, err
