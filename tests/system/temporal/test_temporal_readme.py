"""The README's three Temporal commands, run verbatim in a fresh folder, offline: the dev server (its state on disk,
its Web UI up), a worker with the demo's scripted model, and a run that lists the 19 products. Then the same with a
payload codec of our own (``--codec``) on the worker and the client: the run works, and neither the server's history
nor the payload store holds the goal's text."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from docs_support import blocks
from temporal_support import need_temporal

from replangraph.app.demo import expected_products

pytestmark = pytest.mark.system  # a Temporal dev server on 7233, a worker process, the CLI

ROOT = Path(__file__).resolve().parents[3]
HELPERS = ROOT / "tests" / "helpers"
START_S, RUN_S = 90, 180


def readme_commands() -> list[str]:
    """The shell block under "Past one machine": its three commands, without their comments."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Past one machine", 1)[1]
    block = next(b for b in blocks(ROOT / "README.md") if b.lang == "bash" and b.text.strip() in section)
    return [re.sub(r"\s+#\s.*$", "", line).strip() for line in block.text.splitlines() if line.strip()]


def environment(folder: Path) -> dict[str, str]:
    """This checkout's commands first on PATH (the venv's ``replangraph`` and ``temporal``), a payload store of the
    test's own, and the test helpers importable (the codec)."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["REPLANGRAPH_PAYLOADS"] = str(folder / "payloads")
    env["PYTHONPATH"] = os.pathsep.join([str(HELPERS), env.get("PYTHONPATH", "")])
    return env


def wait_for_line(process: subprocess.Popen, needle: str, deadline_s: float) -> str:
    end = time.monotonic() + deadline_s
    seen = []
    while time.monotonic() < end:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
        seen.append(line)
        if needle in line:
            return line
    raise AssertionError(f"no {needle!r} within {deadline_s} s: {''.join(seen)[-2000:]}")


def serving(env: dict[str, str]) -> bool:
    asked = subprocess.run(
        ["temporal", "operator", "namespace", "describe", "--namespace", "default", "--address", "127.0.0.1:7233"],
        capture_output=True,
        env=env,
        timeout=15,
    )
    return asked.returncode == 0


@pytest.fixture
def readme_server(tmp_path):
    need_temporal()
    server_command, worker_command, run_command = readme_commands()
    env = environment(tmp_path)
    server = subprocess.Popen(
        shlex.split(server_command),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + START_S
        while not serving(env):
            assert server.poll() is None and time.monotonic() < end, "the README's dev server did not start"
            time.sleep(0.5)
        yield tmp_path, env, worker_command, run_command
    finally:
        server.terminate()
        server.wait(20)


def worker(command: str, folder: Path, env: dict[str, str]) -> subprocess.Popen:
    process = subprocess.Popen(
        shlex.split(command), cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    wait_for_line(process, "serving task queue", START_S)
    return process


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_the_readme_commands_run_verbatim_offline_and_the_web_ui_answers(readme_server):
    import urllib.request

    folder, env, worker_command, run_command = readme_server
    assert (folder / "replangraph-temporal.db").exists()  # the server keeps its state on disk
    with urllib.request.urlopen("http://127.0.0.1:8233/", timeout=10) as page:  # the Web UI the docs point at
        assert page.status == 200
    process = worker(worker_command, folder, env)
    try:
        done = subprocess.run(
            shlex.split(run_command), cwd=folder, env=env, capture_output=True, text=True, timeout=RUN_S
        )
    finally:
        stop(process)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert all(name in done.stdout for name in expected_products(19))


def test_a_codec_of_our_own_keeps_the_goal_out_of_the_history_and_the_store(readme_server):
    import asyncio

    folder, env, worker_command, run_command = readme_server
    codec = ["--codec", "temporal_codec:Reverse", "--task-queue", "coded"]
    process = worker(shlex.join([*shlex.split(worker_command), *codec]), folder, env)
    try:
        argv = [*shlex.split(run_command), *codec, "--thread", "coded-run", "--json"]
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=RUN_S)
    finally:
        stop(process)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert all(name in done.stdout for name in expected_products(19))
    goal = b"Rank the top 19 products"

    async def raw_history() -> bytes:
        from temporalio.client import Client

        client = await Client.connect("127.0.0.1:7233")  # no codec, no converter: the bytes as the server keeps them
        history = await client.get_workflow_handle("coded-run").fetch_history()
        return b"".join(event.SerializeToString() for event in history.events)

    history = asyncio.run(raw_history())
    assert goal not in history and b"Aurora Desk Lamp" not in history
    assert goal[::-1] in history  # it is there, as the codec wrote it
    kept = b"".join(p.read_bytes() for p in (folder / "payloads").rglob("*") if p.is_file())
    assert kept and goal not in kept and b"Aurora Desk Lamp" not in kept
