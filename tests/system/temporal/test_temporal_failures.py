"""Every failure speaks, on Temporal, through the command line a user runs (each command a process of its own):
the Temporal server lost mid-run (exit 4 naming it; ``resume`` goes on once it is back, on the state it kept on
disk), a model server down (the run pauses as in-process: exit 4, ``resume`` goes on), no worker on the queue (a
line saying so), ``/status`` while the run works (answered at once), ``output`` on a Temporal run, an answer of
3 MB, and the activities' summaries."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from temporal_support import new_queue, on_temporal, worker_process

pytestmark = pytest.mark.system  # Temporal dev servers, worker processes, the CLI in processes of its own

CLI = "import sys; from replangraph.app.cli import main; sys.exit(main())"
HELPERS = Path(__file__).resolve().parents[2] / "helpers"
RUN_S = 180


def cli(*argv: str, timeout: float = RUN_S) -> subprocess.CompletedProcess:
    """``replangraph ARGV`` in a process of its own (no model, no key: a Temporal client)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONPATH"] = os.pathsep.join([str(HELPERS), *sys.path])
    return subprocess.run([sys.executable, "-c", CLI, *argv], capture_output=True, text=True, timeout=timeout, env=env)


def cli_process(*argv: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONPATH"] = os.pathsep.join([str(HELPERS), *sys.path])
    return subprocess.Popen(
        [sys.executable, "-c", CLI, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def started_calls(log: Path) -> int:
    return sum(line.startswith("START") for line in log.read_text().splitlines()) if log.exists() else 0


def wait_until(check, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.1)


def test_a_server_lost_mid_run_exits_4_naming_it_and_resume_goes_on_once_it_is_back(tmp_path):
    from replangraph.temporal import DevServer

    db, log = tmp_path / "temporal.db", tmp_path / "calls.log"
    server = DevServer(db=db)
    address, port = server.address, server.port
    try:
        with worker_process(address, "replangraph", "temporal_graphs:logged_calls", "8", str(log), "1.5", "2"):
            run = cli_process("run", "--temporal", address, "--thread", "lost", "--json", "Work on every item.")
            wait_until(lambda: started_calls(log) >= 2)
            server.process.kill()  # SIGKILL: its state is what it wrote to disk
            server.process.wait()
            out, err = run.communicate(timeout=RUN_S)
            assert run.returncode == 4, out[-2000:] + err[-2000:]
            assert f"The Temporal server at {address} stopped answering" in err
            assert f"replangraph resume --temporal {address} --thread lost" in err
            assert all(json.loads(line) for line in out.splitlines())  # stdout: JSON lines only
            assert json.loads(out.splitlines()[-1])["exit_code"] == 4
            server.close()
            server = DevServer(db=db, port=port)  # back, where it was, on the state it kept
            done = cli("resume", "--temporal", address, "--thread", "lost")
    finally:
        server.close()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert all(f"item-{n} done" in done.stdout for n in range(8))


def test_a_model_server_down_pauses_the_run_and_resume_goes_on_once_it_is_back(temporal_address, tmp_path):
    (tmp_path / "down").touch()
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:server_down_on_b", str(tmp_path)):
        first = cli("run", "--temporal", temporal_address, "--task-queue", queue, "--thread", queue, "three things")
        assert first.returncode == 4, first.stdout[-2000:] + first.stderr[-2000:]
        said = first.stdout  # notes for people: on stdout (with --json, on stderr)
        assert "stopped answering" in said and "the run is paused" in said
        assert f"replangraph resume --temporal {temporal_address} --thread {queue}" in said
        (tmp_path / "down").unlink()  # the model server is back
        done = cli("resume", "--temporal", temporal_address, "--thread", queue)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "final: a, b, c" in done.stdout  # b ran again once the server answered, and nothing failed


def test_a_run_nobody_serves_says_so_within_30_seconds(temporal_address):
    run = cli_process("run", "--temporal", temporal_address, "--task-queue", new_queue(), "Work on every item.")
    try:
        line = line_with(run, "No worker polls", 30)  # a note for people: on stdout (with --json, on stderr)
        assert "replangraph worker --temporal" in line
    finally:
        run.kill()
        run.wait()


def test_a_run_whose_workflow_task_fails_on_every_worker_says_why(temporal_address, monkeypatch):
    """A worker that registered its graph under another name polls the queue, and every workflow task of a run of
    the default graph fails on it (Temporal retries it without end): the command says so, with the worker's error,
    instead of waiting in silence."""
    queue = new_queue()
    monkeypatch.setenv("REPLANGRAPH_TEST_GRAPH_NAME", "another-graph")
    with worker_process(temporal_address, queue, "temporal_graphs:readme_example"):
        run = cli_process("run", "--temporal", temporal_address, "--task-queue", queue, "Look up the rainfall.")
        try:
            line = line_with(run, "workflow task fails", 45)
            assert "Graph 'replangraph' not found" in line and "another-graph" in line
        finally:
            run.kill()
            run.wait()


def line_with(process: subprocess.Popen, needle: str, within_s: float) -> str:
    """The first line of ``process``'s stdout holding ``needle``, read within ``within_s`` seconds (else fails)."""
    end, seen = time.monotonic() + within_s, []
    while (left := end - time.monotonic()) > 0:
        if not select.select([process.stdout], [], [], left)[0]:
            break
        line = process.stdout.readline()
        assert line or process.poll() is None, f"the command ended without saying it: {''.join(seen)[-2000:]}"
        seen.append(line)
        if needle in line:
            return line
    raise AssertionError(f"no {needle!r} within {within_s} s: {''.join(seen)[-2000:]}")


def test_status_is_answered_while_the_run_works_and_output_reads_the_run(temporal_address, tmp_path):
    log, queue = tmp_path / "calls.log", new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:logged_calls", "6", str(log), "1.5", "1"):
        run = cli_process("run", "--temporal", temporal_address, "--task-queue", queue, "--thread", queue, "go")
        wait_until(lambda: started_calls(log) >= 1)
        status = cli("resume", "--temporal", temporal_address, "--thread", queue, "--answer", "/status")
        assert status.returncode == 0, status.stdout[-2000:] + status.stderr[-2000:]
        assert "/status:" in status.stderr + status.stdout
        assert run.poll() is None  # answered while the run works on
        assert started_calls(log) < 6
        listed = cli("output", "--temporal", temporal_address, "--thread", queue)  # while it works
        assert listed.returncode == 0, listed.stderr
        out, err = run.communicate(timeout=RUN_S)
        assert run.returncode == 0, out[-2000:] + err[-2000:]
    ids = cli("output", "--temporal", temporal_address, "--thread", queue)
    assert ids.returncode == 0 and "item-0/result" in ids.stdout
    one = cli("output", "--temporal", temporal_address, "--thread", queue, "item-3/result")
    assert one.returncode == 0 and one.stdout.strip() == "item-3 done"


def test_an_answer_of_3_mb_reaches_the_client(temporal_address):
    queue = new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:big_answer", "3"):
        done = cli("run", "--temporal", temporal_address, "--task-queue", queue, "--json", "Write the report.")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    finished = json.loads(done.stdout.splitlines()[-1])
    assert len(finished["final_answer"]) >= 2_900_000


def test_activities_carry_a_summary_naming_the_node_the_subtask_and_the_tool(temporal_address, tmp_path):
    import asyncio

    from replangraph.temporal import connect

    log, queue = tmp_path / "calls.log", new_queue()
    with worker_process(temporal_address, queue, "temporal_graphs:logged_calls", "2", str(log), "0.1"):
        on_temporal(temporal_address, queue, "Work on every item.")

    async def summaries() -> list[str]:
        client = await connect(temporal_address)
        found = []
        async for event in client.get_workflow_handle(queue).fetch_history_events():
            if event.HasField("activity_task_scheduled_event_attributes"):
                found.append((await client.data_converter.decode([event.user_metadata.summary]))[0])
        return found

    found = asyncio.run(summaries())
    assert "planner" in found
    assert "executor · subtask item-0: item-0" in found and "tool work · subtask item-1" in found
