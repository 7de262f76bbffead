"""A model server that dies mid-run: `replangraph run` pauses (exit 4, the server named, nothing failed), and
`replangraph resume` finishes the run once the server is started again.

The server is tests/helpers/loopback_process.py in a process of its own, killed with SIGKILL while it holds the
request of subtask 2; every request it gets is a line on its stdout, so the test waits on lines, not on time.
"""

from __future__ import annotations

import io
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from loopback_process import COLOURS, GOAL

from replangraph.app import cli

pytestmark = pytest.mark.system  # a server process, killed and started again

HELPER = Path(__file__).resolve().parents[1] / "helpers" / "loopback_process.py"
WAIT_S = 60


class ServerProcess:
    """One server process and the lines it printed, read as they come."""

    def __init__(self, port: int, hold: bool):
        args = [sys.executable, str(HELPER), str(port)] + (["hold"] if hold else [])
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, cwd=HELPER.parents[2])
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self.read, daemon=True).start()
        self.port = int(self.wait_for("PORT ").split()[1])

    def read(self) -> None:
        for line in self.process.stdout or ():
            self.lines.put(line.strip())

    def wait_for(self, prefix: str) -> str:
        """The next line starting with ``prefix`` (the lines before it are kept in ``seen``)."""
        while True:
            line = self.lines.get(timeout=WAIT_S)
            self.seen.append(line)
            if line.startswith(prefix):
                return line

    def requests(self) -> list[str]:
        """What the server was asked so far (``plan``, a subtask id, ``final``)."""
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return [line.split()[1] for line in self.seen if line.startswith("REQUEST ")]

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=WAIT_S)
        self.process.stdout.close()


@pytest.fixture
def servers():
    started: list[ServerProcess] = []

    def start(port: int = 0, hold: bool = False) -> ServerProcess:
        started.append(ServerProcess(port, hold))
        return started[-1]

    yield start
    for server in started:
        if server.process.poll() is None:
            server.kill()


def test_a_server_killed_mid_run_pauses_it_and_resume_finishes_it_once_the_server_is_back(
    servers, monkeypatch, tmp_path
):
    monkeypatch.setattr("replangraph.clock.wait", lambda seconds: None)  # no backoff between the tries
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    first = servers(hold=True)
    url = f"http://127.0.0.1:{first.port}/v1"
    db = str(tmp_path / "runs.sqlite")
    out = io.StringIO()
    ended: dict[str, int] = {}
    flags = ["--base-url", url, "--model", "local", "--db", db, "--concurrency", "1"]  # one subtask at a time
    run = threading.Thread(target=lambda: ended.update(code=cli.main(["run", GOAL, *flags, "--thread", "t1"], out)))
    run.start()
    first.wait_for("HOLDING")  # subtask 2's request waits in the server: now it dies
    first.kill()
    run.join(timeout=WAIT_S)
    text = out.getvalue()
    assert ended == {"code": 4}, text
    assert first.requests() == ["plan", "1", "check", "2"]
    assert f"The model server at {url} stopped answering during the run" in text
    assert "the run is paused, nothing failed" in text and "max_replans" not in text and "Final answer" not in text
    assert text.rstrip().endswith(f"replangraph resume --thread t1 --db {db}")

    second = servers(port=first.port)  # the same server, started again
    out = io.StringIO()
    # the server the run recorded is named again: resume takes none from the database alone
    assert cli.main(["resume", "--thread", "t1", "--db", db, "--base-url", url], out) == 0, out.getvalue()
    answer = out.getvalue().split("Final answer:", 1)[1]
    assert all(f"COLOUR {n}: {colour}" in answer for n, colour in COLOURS.items())
    # subtask 1 is not run again, nor replanned; the goal check comes last before the final answer
    assert second.requests() == ["2", "check", "3", "check", "check", "final"]
