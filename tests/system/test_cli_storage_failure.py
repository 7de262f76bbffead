"""`replangraph run` on a database that fills mid-run: the run stops at the failed write, says how to resume,
and `replangraph resume` repeats no tool call.

The model is the loopback fake OpenAI server of test_openai_compat, answering in this process: the answer to
the first subtask fills the disk (tests/helpers/full_disk.py), so every checkpoint write after it fails.
"""

from __future__ import annotations

import re
from collections import Counter
from contextlib import contextmanager

import pytest
from cli_helpers import main, subtask_of
from full_disk import Disk
from test_openai_compat import FakeOpenAI, fake_openai  # noqa: F401  (the fixture)

import replangraph.durable
from replangraph.app.console import EXIT_CRASHED
from replangraph.testing import ScriptedRequest, tool_call

pytestmark = pytest.mark.system  # the loopback fake OpenAI server

LAPTOPS = ["Zephyr 14", "Atlas 13", "Nimbus 15", "Orbit 12"]
looked_up: Counter = Counter()
DISK: list[Disk] = []


def lookup(name: str) -> str:
    """Look up a laptop's launch year (a side effect: counted)."""
    looked_up[name] += 1
    return f"{name}: launched 2021"


def responder(request: ScriptedRequest):
    """One subtask per laptop, each looking it up once; the first answer fills the disk."""
    if "Plan" in request.tool_names:
        tasks = [
            {"id": str(n), "content": f"Look up the {name}", "depends_on": []} for n, name in enumerate(LAPTOPS, 1)
        ]
        return tool_call("Plan", {"tasks": tasks})
    subtask = subtask_of(request)
    if subtask:
        found = request.last_result("lookup")
        if found is None:
            return tool_call("lookup", {"name": subtask.removeprefix("Look up the ")})
        if DISK:
            DISK.pop().fill()
        return f"RESULT: {found}"
    return "FINAL ANSWER\n" + "\n".join(re.findall(r"RESULT: .*", request.prompt))


def test_a_full_disk_stops_the_run_and_resume_looks_up_nothing_twice(fake_openai, monkeypatch, tmp_path):  # noqa: F811
    FakeOpenAI.responder = staticmethod(responder)
    looked_up.clear()
    disk = Disk()
    DISK[:] = [disk]
    healthy = replangraph.durable.open_saver

    @contextmanager
    def filling(db):
        with healthy(db) as (checkpointer, store):
            yield disk.breaks(checkpointer), store

    monkeypatch.setattr(replangraph.durable, "open_saver", filling)
    db, tools = str(tmp_path / "runs.sqlite"), ("--tools", f"{__name__}:lookup")
    # one subtask at a time: the disk fills between two lookups, not after all four started at once
    code, text = main("run", "Look up four laptops", "--db", db, "--thread", "full", "--concurrency", "1", *tools)
    assert code == EXIT_CRASHED, text
    assert "database or disk is full" in text and "resume with: replangraph resume --thread full" in text
    assert sum(looked_up.values()) < len(LAPTOPS)  # it stopped at the failed write, not at the end

    monkeypatch.setattr(replangraph.durable, "open_saver", healthy)  # the disk has room again
    code, text = main("resume", "--thread", "full", "--db", db)
    assert code == 0, text
    assert looked_up == Counter(LAPTOPS)  # every laptop looked up once over both runs
    assert all(f"RESULT: {name}: launched 2021" in text.split("Final answer:", 1)[1] for name in LAPTOPS)
