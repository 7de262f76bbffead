"""A run that stops on an unexpected error (here: the database fails mid-run) ends the command with one
sentence and exit code 5, the traceback saved to a file, and `replangraph resume` finishes the run."""

from __future__ import annotations

import io
import re
import sqlite3
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver
from test_openai_compat import fake_openai  # noqa: F401  (the fixture)

from replangraph.app import cli
from replangraph.app.console import EXIT_CRASHED
from replangraph.app.demo import DEMO_GOAL, expected_products

TOOLS = ("--tools", "replangraph.app.demo:read_ranking")


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
