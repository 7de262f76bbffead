"""``replangraph run`` against a real (tiny) model: SmolLM2 135M Instruct, served by llama-cpp-python on loopback.

The server is ``python -m benchmarks.llama_server`` (llama-cpp-python's own, with the chat format and the
request filter that work around its tool-calling quirks: docs/models.md). ``.ci/real-model install`` installs
llama-cpp-python from a wheel cache (built once) and puts the model in a model cache; $REPLANGRAPH_TEST_GGUF
names the model's file, else the caches are looked in. Without llama-cpp-python or the model these tests skip,
except under CI (``$CI`` set), where they fail.

A 135M model plans badly and answers worse, so the tests hold it to what any model must get from replangraph,
not to the content of its answer: the run ends, within its time, with an answer (exit 0) or the fallback
report (exit 1); no crash, no hang, no request the server refused (each fits the window the server was
started with); ``--verify`` checks the answer.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from replangraph import AgentConfig

pytestmark = pytest.mark.system  # a llama-cpp-python server with a real model, and the CLI as a process

ROOT = Path(__file__).resolve().parents[2]
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m"
N_CTX = 8192
"""The window the server is started with (SmolLM2's trained window)."""
MAX_TOKENS = 256
"""The longest reply: the server's default, and the CLI's ``--max-output-tokens`` in these runs. Without it
the CLI allows the answer the window leaves room for (8,000 tokens), and a 135M model may ramble that far: one
run took 274 s of its 480 for that."""
RUN_TIMEOUT_S = 480
"""The most one run may take before the test calls it a hang (about 1.5 min on 2 busy cores)."""
GOAL = "Name three primary colors."


def _unavailable(reason: str):
    """Skip, or fail under CI, where the real model must run."""
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"the real-model tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f"{reason} (run .ci/real-model install, or set REPLANGRAPH_TEST_GGUF)")


def model_path() -> Path:
    """$REPLANGRAPH_TEST_GGUF, else the model in one of the caches .ci/real-model uses."""
    given = os.environ.get("REPLANGRAPH_TEST_GGUF")
    caches = [os.environ.get("REPLANGRAPH_CACHE"), "/var/cache/replangraph", Path.home() / ".cache" / "replangraph"]
    candidates = [Path(given)] if given else [Path(c) / "models" / MODEL_FILE for c in caches if c]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        _unavailable(f"no model file: looked for {', '.join(map(str, candidates))}")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerLog:
    """The server's output, read on a thread (so its pipe never fills); `ready` is set when it listens."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self.ready = threading.Event()
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.append(line.rstrip("\n"))
            if "Uvicorn running on" in line:
                self.ready.set()
        self.ended.set()
        self.ready.set()  # wake the waiter: the server stopped before it listened

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.lines[-n:])

    def chat_statuses(self, since: int = 0, at_least: int = 1, wait_s: float = 10.0) -> list[str]:
        """The HTTP statuses of the chat requests logged from line ``since`` on.

        Uvicorn logs a request after its response is sent and the reader thread takes a moment to read the
        line, so this waits (up to ``wait_s``) until ``at_least`` statuses are in."""
        deadline = time.monotonic() + wait_s
        while True:
            found = (re.search(r"POST /v1/chat/completions \S+ (\d+)", line) for line in self.lines[since:])
            statuses = [m.group(1) for m in found if m]
            if len(statuses) >= at_least or time.monotonic() > deadline or self.ended.is_set():
                return statuses
            time.sleep(0.05)


@pytest.fixture(scope="module")
def llama_server() -> Iterator[tuple[str, ServerLog]]:
    """A llama-cpp-python server for the real model on 127.0.0.1: its base URL and its log."""
    try:
        import llama_cpp  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as error:
        _unavailable(f"llama-cpp-python[server] is not installed ({error})")
    gguf = model_path()
    port = free_port()
    command = [sys.executable, "-m", "benchmarks.llama_server", "--model", str(gguf), "--model_alias", MODEL_NAME]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(N_CTX), "--n_threads", str(os.cpu_count())]
    command += ["--default_max_tokens", str(MAX_TOKENS)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = ServerLog(process)
    try:
        assert log.ready.wait(120) and not log.ended.is_set(), f"the server did not start:\n{log.tail()}"
        yield f"http://127.0.0.1:{port}/v1", log
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:  # still busy writing a reply
            process.kill()
            process.wait()


def run_cli(base_url: str, tmp_path: Path, *flags: str) -> tuple[subprocess.CompletedProcess, list[dict], float]:
    """``replangraph run GOAL --json`` as a process: the finished process, its JSON events, its wall time."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "REPLANGRAPH_MODEL")}
    command = [sys.executable, "-m", "replangraph.app.cli", "run", GOAL, "--json", "--base-url", base_url]
    command += ["--max-output-tokens", str(MAX_TOKENS)]
    command += ["--db", str(tmp_path / "runs.sqlite"), *flags]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as hang:
        pytest.fail(f"the run did not end within {RUN_TIMEOUT_S} s:\n{(hang.stdout or b'')[-3000:]!r}")
    wall = time.monotonic() - started
    events = [json.loads(line) for line in done.stdout.splitlines()]  # --json: stdout holds JSON only
    return done, events, wall


def assert_ended_well(done: subprocess.CompletedProcess, events: list[dict], log: ServerLog, since: int) -> dict:
    """The run ended with an answer (0) or the fallback report (1), no traceback, every request answered."""
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode in (0, 1), f"exit {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    finished = events[-1]
    assert finished["event"] == "run_finished", events[-3:]
    assert finished["exit_code"] == done.returncode
    assert isinstance(finished["final_answer"], str) and finished["final_answer"].strip(), finished
    statuses = log.chat_statuses(since)
    assert statuses and set(statuses) == {"200"}, f"requests the server refused: {statuses}\n{log.tail()}"
    assert "exceed context window" not in "\n".join(log.lines[since:])
    return finished


def summary(events: list[dict], wall: float, requests: int) -> str:
    """One line saying what the model did, for the test log (``pytest -rP``)."""
    kinds = [e["event"] for e in events]
    plan = next((e for e in events if e["event"] == "plan_created"), {})
    return (
        f"{wall:.0f} s, {requests} model requests; plan: {len(plan.get('tasks', []))} task(s)"
        f"{' (fallback: ' + plan['fallback_reason'][:80] + ')' if plan.get('fallback_reason') else ''}; "
        f"events: {', '.join(dict.fromkeys(kinds))}; answer: {events[-1].get('final_answer', '')[:120]!r}"
    )


def test_a_run_ends_with_an_answer_or_a_report(llama_server, tmp_path):
    base_url, log = llama_server
    since = len(log.lines)
    done, events, wall = run_cli(base_url, tmp_path, "--max-steps", "12")
    finished = assert_ended_well(done, events, log, since)
    assert events[0]["event"] == "run_started"
    assert any(e["event"] == "plan_created" and e["tasks"] for e in events)
    if finished["exit_code"] == 0:
        assert finished["counts"]["completed"] >= 1 and not finished["counts"]["failed"]
    print(summary(events, wall, len(log.chat_statuses(since))))


def test_verify_checks_the_answer(llama_server, tmp_path):
    base_url, log = llama_server
    since = len(log.lines)
    done, events, wall = run_cli(base_url, tmp_path, "--max-steps", "12", "--verify")
    assert_ended_well(done, events, log, since)
    verified = [e for e in events if e["event"] == "step_verified"]
    assert verified, [e["event"] for e in events]
    assert all(isinstance(e["complete"], bool) for e in verified)
    print(summary(events, wall, len(log.chat_statuses(since))))


def test_the_server_takes_a_turn_that_only_calls_a_tool_and_its_result(llama_server):
    """ChatOpenAI sends such a turn with ``content: null``, which llama-cpp-python's server refuses with HTTP 500;
    the launcher's filter passes it on. A tool result reaches the model as a turn of its own."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    base_url, log = llama_server
    since = len(log.lines)
    model = ChatOpenAI(model=MODEL_NAME, base_url=base_url, api_key="not-needed", max_retries=0, max_tokens=16)
    call = {"name": "lookup", "args": {"city": "Lima"}, "id": "call_1", "type": "tool_call"}
    reply = model.invoke(
        [
            HumanMessage("What is the population of Lima?"),
            AIMessage(content="", tool_calls=[call]),
            ToolMessage("Lima: 10,151,200 people.", tool_call_id="call_1"),
        ]
    )
    assert isinstance(reply, AIMessage)
    assert log.chat_statuses(since) == ["200"]


def test_bench_compares_the_agents_on_the_real_model_and_writes_its_result(llama_server, tmp_path):
    """``replangraph bench --base-url``: every agent runs the wide world's goal on the real model, within the
    budget, and the result file names the endpoint and holds every run (TextCraft too takes 3.5 min in all;
    docs/benchmarks.md has that run's rows)."""
    base_url, log = llama_server
    since = len(log.lines)
    result = tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "REPLANGRAPH_MODEL")}
    command = [sys.executable, "-m", "replangraph.app.cli", "bench", "--base-url", base_url, "--model", MODEL_NAME]
    command += ["--worlds", "wide", "--quick", "--seeds", "1", "--budget", "6"]
    command += ["--agents", "replangraph", "react", "react-todo"]
    command += ["--context-window", str(N_CTX), "--reserved-output", str(MAX_TOKENS), "--json", str(result)]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    for agent in ("replangraph", "react", "react-todo"):
        assert f"| {agent} | model: {MODEL_NAME} |" in done.stdout, done.stdout
    document = json.loads(result.read_text())
    assert document["endpoint"] == {"base_url": base_url, "model": MODEL_NAME}
    runs = document["runs"]
    assert {(r["world"], r["agent"]) for r in runs} == {("wide", a) for a in ("replangraph", "react", "react-todo")}
    planning = AgentConfig().planner_retries  # replangraph: a plan written badly is asked for again
    assert all(r["error"] is None for r in runs), runs  # each ran to its end: an answer, a report, or the budget
    assert all(0 < r["calls"] <= 6 + planning * (r["agent"] == "replangraph") for r in runs), runs
    sent = sum(r["calls"] for r in runs)  # the calls counted are the HTTP requests the server answered
    statuses = log.chat_statuses(since, at_least=sent)
    assert len(statuses) == sent and set(statuses) == {"200"}, f"{sent} counted, the server: {statuses}\n{log.tail()}"
    print(f"{time.monotonic() - started:.0f} s\n{done.stdout}")
