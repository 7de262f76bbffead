"""`replangraph run` and `resume` hold the thread's lease: a `resume` of a thread that another process is running
ends at once with exit code 6 and one sentence naming that process, and runs nothing; a run whose lease another
process took (it went unrenewed too long) stops after its step with exit code 6. On SQLite and PostgreSQL.

The model is the loopback OpenAI server (tests/helpers/openai_loopback.py) in the test process, answering as
loopback_process.py does; the first request of subtask 2 waits until the test releases it, so the run is in
flight while the second command starts. In 0.8.0 the second command resumed the thread and ran all the work
left a second time.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter

import pytest
from loopback_process import COLOURS, GOAL
from openai_loopback import OpenAILoopback

from replangraph.app import cli
from replangraph.app.console import EXIT_BUSY
from replangraph.durable import LEASE_TABLE, open_lease_table
from replangraph.testing import ScriptedRequest, tool_call

pytestmark = pytest.mark.system  # a second process, a loopback server (and PostgreSQL for `durable_db`)

WAIT_S = 60
SCRIPT = "import sys; from replangraph.app.cli import main; sys.exit(main())"


class HeldServer:
    """Answers the three-flag run; the first request of subtask 2 waits on `release` (`holding` is set then).
    ``asked`` counts the requests per subtask id (``plan``, ``check`` and ``final`` too)."""

    def __init__(self) -> None:
        self.holding, self.release = threading.Event(), threading.Event()
        self.asked: Counter[str] = Counter()
        self.lock = threading.Lock()

    def respond(self, request: ScriptedRequest):
        if "Verdict" in request.tool_names:
            self.count("check")
            return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "the colour is named"})
        if "Plan" in request.tool_names:
            self.count("plan")
            tasks = [{"id": n, "content": f"Find the colour of flag {n}", "depends_on": []} for n in COLOURS]
            return tool_call("Plan", {"tasks": tasks})
        found = re.search(r"Your subtask \((\w+)\)", request.prompt)
        if found:
            if self.count(found.group(1)) == 1 and found.group(1) == "2":
                self.holding.set()
                self.release.wait(WAIT_S)
            return f"COLOUR {found.group(1)}: {COLOURS[found.group(1)]}"
        self.count("final")
        return "FINAL\n" + "\n".join(sorted(set(re.findall(r"COLOUR \d: [\w-]+", request.prompt))))

    def count(self, what: str) -> int:
        with self.lock:
            self.asked[what] += 1
            return self.asked[what]


def test_a_resume_of_a_thread_another_process_runs_ends_with_exit_6_and_runs_nothing(durable_db, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    held = HeldServer()
    with OpenAILoopback(held.respond, models=["local"]) as server:
        # one subtask at a time: the steps come in the order the test takes the lease between
        flags = ["--base-url", server.base_url, "--model", "local", "--db", durable_db, "--concurrency", "1"]
        out, ended = io.StringIO(), {}
        run = threading.Thread(target=lambda: ended.update(code=cli.main(["run", GOAL, *flags, "--thread", "t1"], out)))
        run.start()
        try:
            assert held.holding.wait(WAIT_S), out.getvalue()
            env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
            second = subprocess.run(
                [sys.executable, "-c", SCRIPT, "resume", "--thread", "t1", *flags, "--json"],
                capture_output=True,
                text=True,
                timeout=WAIT_S,
                env=env,
            )
        finally:
            held.release.set()
            run.join(WAIT_S)

    assert second.returncode == EXIT_BUSY == 6, second.stdout + second.stderr
    sentence = second.stderr.strip()
    assert re.fullmatch(
        rf"Thread 't1' is being run by another process \(pid {os.getpid()} on [^)]+\), whose lease on it lasts "
        r"until (\d\d:\d\d:\d\d UTC) and is renewed while it runs: wait for that run to end, or, if that process "
        r"is gone, try again after \1\.",
        sentence,
    ), sentence
    assert [json.loads(line) for line in second.stdout.splitlines()] == [
        {"event": "error", "exit_code": 6, "message": sentence}
    ]
    # The first command finished the run; every subtask was asked once in all.
    assert ended == {"code": 0}, out.getvalue()
    # three subtask checks and the goal check
    assert held.asked == Counter({"plan": 1, "1": 1, "2": 1, "3": 1, "check": 4, "final": 1}), held.asked
    answer = out.getvalue().split("Final answer:", 1)[1]
    assert all(f"COLOUR {n}: {colour}" in answer for n, colour in COLOURS.items())


def test_a_run_whose_lease_another_process_took_stops_after_its_step_with_exit_6(durable_db, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("REPLANGRAPH_LEASE_TTL_S", raising=False)  # the default, 30 s: renewed every 10 s
    held = HeldServer()
    with OpenAILoopback(held.respond, models=["local"]) as server:
        # one subtask at a time: the steps come in the order the test takes the lease between
        flags = ["--base-url", server.base_url, "--model", "local", "--db", durable_db, "--concurrency", "1"]
        out, ended = io.StringIO(), {}
        run = threading.Thread(target=lambda: ended.update(code=cli.main(["run", GOAL, *flags, "--thread", "t1"], out)))
        run.start()
        try:
            assert held.holding.wait(WAIT_S), out.getvalue()
            # As if this run had stalled past its lease's TTL and another process had taken the thread over.
            with open_lease_table(durable_db) as table:
                taken = table.run(
                    f"UPDATE {LEASE_TABLE} SET owner = 'other-host:4343:tok', expires_at = lease_now() + 60 "
                    "WHERE thread_id = 't1'"
                )[1]
            assert taken == 1
        finally:
            held.release.set()
            run.join(WAIT_S)

    text = out.getvalue()
    assert ended == {"code": EXIT_BUSY}, text
    assert (
        "This process's lease of thread 't1' went unrenewed for over 30 s and another process (pid 4343 on "
        "other-host) took the thread: this run stops here so that only one process runs it." in text
    )
    # The step in flight (subtask 2) ended; nothing after it ran.
    assert held.asked == Counter({"plan": 1, "1": 1, "check": 1, "2": 1}), held.asked
    assert "Final answer" not in text
