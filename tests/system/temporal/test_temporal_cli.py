"""The command line on Temporal: ``replangraph worker --temporal`` serves the graph ``run`` builds from the same
flags, against the fake OpenAI server on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_helpers import PLAIN_GOAL, TOOLS, hitl_responder
from openai_loopback import OpenAILoopback
from temporal_support import new_queue, on_temporal

pytestmark = pytest.mark.system  # a Temporal dev server, worker processes, a loopback model server

CLI = "import sys; from replangraph.app.cli import main; sys.exit(main())"
HELPERS = Path(__file__).resolve().parents[2] / "helpers"


@contextmanager
def cli_worker(address: str, queue: str, base_url: str, *flags: str) -> Iterator[subprocess.Popen]:
    """``replangraph worker --temporal ADDRESS`` in a process of its own, once it says it serves."""
    env = {**os.environ, "OPENAI_API_KEY": "test-key", "PYTHONPATH": os.pathsep.join([str(HELPERS), *sys.path])}
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


def test_the_worker_command_serves_the_graph_run_builds(temporal_address):
    queue = new_queue()
    with OpenAILoopback(hitl_responder) as model, cli_worker(temporal_address, queue, model.base_url, *TOOLS):
        out, activities, _ = on_temporal(temporal_address, queue, PLAIN_GOAL)
        assert not model.errors
    assert out["final_answer"] == "FINAL ANSWER\nRESULT: Paris"
    assert [t["status"] for t in out["tasks"].values()] == ["completed"]
    assert activities["replangraph.planner"] == 1


def test_a_worker_without_a_server_says_so_and_exits_4(tmp_path):
    from temporal_support import need_temporal

    need_temporal()
    with OpenAILoopback(hitl_responder) as model:
        env = {**os.environ, "OPENAI_API_KEY": "test-key"}
        argv = [sys.executable, "-c", CLI, "worker", "--temporal", "127.0.0.1:1", "--base-url", model.base_url]
        done = subprocess.run([*argv, "--model", "scripted"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 4, done.stderr
    assert "The Temporal server at 127.0.0.1:1 does not answer" in done.stderr
