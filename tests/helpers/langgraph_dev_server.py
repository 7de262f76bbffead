"""The real ``langgraph dev`` server of the system tests, started from the project's langgraph.json.

Headless (``--no-browser --no-reload``, no analytics), on a free port of 127.0.0.1, its model pointed at a loopback
OpenAI-compatible server (`openai_loopback`), its tools and agent types from the environment
(`langgraph_dev_script`). The server reads the project's langgraph.json with one graph added: docs/studio.md's own
factory (``tests/helpers/own_factory.py``). The in-memory server keeps its data in ``.langgraph_api/`` under the
repository root (which git ignores); a folder that this server created is removed when it stops.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from langgraph_dev_script import ENV_TOOL

from benchmarks.server_parallel import stop

ROOT = Path(__file__).resolve().parents[2]
LANGGRAPH = Path(sys.executable).parent / "langgraph"
READY_DEADLINE_S = 90
GRAPH = "replangraph"
DEMO_GRAPH = "replangraph-demo"
OWN_GRAPH = "own-factory"


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def no_langgraph(reason: str) -> None:
    """Skip, or fail under CI, where a test that did not run must not pass."""
    if under_ci():
        pytest.fail(f"langgraph dev cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f'{reason} (pip install -e ".[test]")')


def server_env(base_url: str) -> dict[str, str]:
    """No $REPLANGRAPH_MODEL: the model is the one the loopback lists. Tools and agent types from the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLANGRAPH_", "LANGSMITH_", "LANGCHAIN_"))}
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGSMITH_TRACING="false",
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY="test",
        REPLANGRAPH_TOOLS=f"replangraph.app.demo:{ENV_TOOL},langgraph_dev_script:whoami",
        REPLANGRAPH_AGENTS="langgraph_dev_script:AGENTS",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "tests" / "helpers"), os.environ.get("PYTHONPATH")])),
        PYTHONUNBUFFERED="1",
    )
    return env


def wait_until_ready(process: subprocess.Popen, url: str, log: Path, what: str = "langgraph dev") -> float:
    """Seconds until ``GET url`` answered 200; fails with the server's output if it exits or the deadline passes."""
    started = time.monotonic()
    while time.monotonic() - started < READY_DEADLINE_S:
        if process.poll() is not None:
            pytest.fail(f"{what} exited with {process.returncode}:\n{log.read_text()[-6000:]}", pytrace=False)
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return time.monotonic() - started
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f"{what} did not answer {url} in {READY_DEADLINE_S}s:\n{log.read_text()[-6000:]}", pytrace=False)


@contextmanager
def langgraph_dev(model_url: str, log: Path) -> Iterator[str]:
    """A ``langgraph dev`` server whose model is the OpenAI-compatible server at ``model_url``; yields its URL.
    Its output goes to ``log`` (a file in a folder of its own, which also holds the langgraph.json it reads)."""
    if not LANGGRAPH.exists():
        no_langgraph(f"no langgraph executable at {LANGGRAPH}")
    try:
        import langgraph_sdk  # noqa: F401
    except ImportError:
        no_langgraph("langgraph-sdk is not installed")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    data_dir = ROOT / ".langgraph_api"
    ours = not data_dir.exists()
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["graphs"][OWN_GRAPH] = "./tests/helpers/own_factory.py:make"  # graph paths are read from ROOT
    config_path = log.parent / "langgraph.json"
    config_path.write_text(json.dumps(config))
    command = [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(port), "--config", str(config_path)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=server_env(model_url),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        took = wait_until_ready(process, f"{url}/ok", log)
        print(f"\nlanggraph dev ready at {url} in {took:.1f}s (log: {log})")
        yield url
    finally:
        stop(process)
        if ours:
            shutil.rmtree(data_dir, ignore_errors=True)
