"""What the console script shows: ``--json`` lines, plain lines, and what it says when the model server is
unreachable, lost mid-run, or serves several models (the live view: test_cli_live.py).

Runs go through the demo's scripted model or test_openai_compat's loopback fake OpenAI server.
"""

from __future__ import annotations

import builtins
import io
import json
import socket
import sys
import threading
from http.server import ThreadingHTTPServer

import pytest
from cli_helpers import (
    ASK_GOAL,
    MARKET_QUESTION,
    TOOLS,
    hitl_responder,
    json_lines,
    lookup_responder,
    record_requests,
    record_waits,
)
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from test_openai_compat import FakeOpenAI, fake_openai  # noqa: F401  (the fixture)

from replangraph.app import cli, console
from replangraph.app.demo import DEMO_GOAL, demo_responder, expected_products


@pytest.fixture(autouse=True)
def default_db(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLANGRAPH_DB", str(tmp_path / "default-runs.sqlite"))


# --json


def test_json_demo_writes_one_object_per_line_and_a_final_result(capsys):
    out = io.StringIO()
    assert cli.main(["demo", "--json"], out=out) == 0
    objects = json_lines(out.getvalue())
    names = [o["event"] for o in objects]
    assert {"plan_created", "step_started", "step_completed", "dynamic_tasks_added", "plan_completed"} <= set(names)
    final = objects[-1]
    assert names.count("run_finished") == 1 and final["event"] == "run_finished"
    assert final["exit_code"] == 0 and final["counts"]["completed"] == 4
    assert all(name in final["final_answer"] for name in expected_products(19))
    assert isinstance(final["tokens"], int) and final["tokens"] > 0  # the scripted model reports usage
    assert "SCRIPTED" in capsys.readouterr().err  # notes go to stderr


@pytest.mark.system
def test_json_run_through_an_openai_compatible_server(fake_openai, capsys):  # noqa: F811
    out = io.StringIO()
    assert cli.main(["run", DEMO_GOAL, *TOOLS, "--json", "--thread", "j1"], out=out) == 0
    objects = json_lines(out.getvalue())
    names = [o["event"] for o in objects]
    assert objects[0] == {"event": "run_started", "thread": "j1", "resume": "replangraph resume --thread j1"}
    assert {"plan_created", "step_completed", "plan_completed"} <= set(names)
    final = objects[-1]
    assert final["event"] == "run_finished" and final["exit_code"] == 0 and final["thread"] == "j1"
    assert final["counts"] == {"pending": 0, "in_progress": 0, "completed": 4, "failed": 0, "skipped": 0}
    assert final["tokens"] == sum(FakeOpenAI.tokens) > 0  # what the fake server reported, every request counted
    assert "thread: j1" in capsys.readouterr().err


@pytest.mark.system
def test_json_waiting_names_the_resume_command_and_never_asks(fake_openai, monkeypatch, tmp_path):  # noqa: F811
    FakeOpenAI.responder = staticmethod(hitl_responder)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)  # a terminal, yet --json does not ask

    def no_input(prompt: str = "") -> str:
        raise AssertionError("--json asked inline")

    monkeypatch.setattr(builtins, "input", no_input)
    db = str(tmp_path / "runs.sqlite")
    out = io.StringIO()
    assert cli.main(["run", ASK_GOAL, "--json", "--db", db, "--thread", "w1"], out=out) == 3
    waiting = json_lines(out.getvalue())[-1]
    assert waiting["event"] == "waiting" and waiting["exit_code"] == 3
    assert waiting["resume"] == f'replangraph resume --thread w1 --answer "..." --db {db}'
    assert [i["value"]["kind"] for i in waiting["interrupts"]] == ["question"]
    assert MARKET_QUESTION in waiting["interrupts"][0]["value"]["question"]

    out = io.StringIO()
    assert cli.main(["resume", "--thread", "w1", "--db", db, "--answer", "EU", "--json"], out=out) == 0
    objects = json_lines(out.getvalue())
    assert "question_answered" in [o["event"] for o in objects]
    assert objects[-1]["event"] == "run_finished" and "market EU" in objects[-1]["final_answer"]


@tool
def lookup(name: str) -> str:
    """Look up a laptop's launch year (and say so on stdout, as a tool may)."""
    print(f"looking up {name}")
    return f"{name}: launched 2021"


@pytest.mark.system
def test_json_stdout_holds_json_only_though_a_tool_prints(fake_openai, capsys):  # noqa: F811
    FakeOpenAI.responder = staticmethod(lookup_responder)
    assert cli.main(["run", "Look up the Zephyr 14", "--json", "--tools", f"{__name__}:lookup"]) == 0
    captured = capsys.readouterr()
    objects = json_lines(captured.out)  # every line of stdout is JSON
    assert objects[-1]["event"] == "run_finished" and "Zephyr 14: launched 2021" in objects[-1]["final_answer"]
    assert "looking up Zephyr 14\n" in captured.err  # what the tool printed, on stderr
    print("after the run")  # stdout is stdout again
    assert capsys.readouterr().out == "after the run\n"


def test_json_lines_hold_what_json_cannot(capsys):
    line = console.json_line({"event": "x", "message": AIMessage("hi"), "when": object()})
    assert json.loads(line)["event"] == "x"
    assert "\n" not in console.json_line({"event": "y", "text": "two\nlines"})


# The model server: unreachable, lost mid-run, and the model it serves


class ModelServer(FakeOpenAI):
    """The fake server with ``GET /v1/models`` listing ``models``."""

    models: list[str] = ["local-llama"]
    gets: list[str] = []

    def do_GET(self):
        ModelServer.gets.append(self.path)
        if self.path != "/v1/models":
            self.reply(404, {"error": {"message": "not found"}})
            return
        self.reply(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in ModelServer.models]})


class DroppingServer(FakeOpenAI):
    """The fake server that plans, then goes down: every later request is cut without an answer."""

    def do_POST(self):
        if not any(t["function"]["name"] == "Plan" for t in json.loads(self.peek()).get("tools", [])):
            FakeOpenAI.requests.append({})
            self.close_connection = True  # no reply at all: the client sees a connection error
            return
        super().do_POST()

    def peek(self) -> bytes:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.rfile = io.BytesIO(body)  # read again by FakeOpenAI.do_POST
        return body


@pytest.fixture
def serve(monkeypatch):
    """Start a loopback server with the given handler class; returns its base URL. No key, no model named."""
    servers = []

    def start(handler: type) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        FakeOpenAI.requests, FakeOpenAI.failures, FakeOpenAI.context_chars = [], [], None
        FakeOpenAI.tokens = []
        FakeOpenAI.responder = staticmethod(demo_responder)
        ModelServer.gets = []
        url = f"http://127.0.0.1:{server.server_port}/v1"
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        return url

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("REPLANGRAPH_MODEL", raising=False)
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_server_ends_the_command_at_once_naming_its_url(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    db = tmp_path / "runs.sqlite"
    sent, waits = record_requests(monkeypatch), record_waits(monkeypatch)
    assert cli.main(["run", "anything", "--base-url", url, "--db", str(db)]) == console.EXIT_CONNECTION == 4
    assert sent == [f"GET {url}/models"] and waits == []  # at once: one probe, no model call, no retry
    err = capsys.readouterr().err
    assert err == f"The model server at {url} did not answer (connection refused): start it or fix --base-url.\n"
    assert not db.exists()  # nothing ran

    monkeypatch.setenv("OPENAI_BASE_URL", url + "/")  # the environment's URL, and --json
    out = io.StringIO()
    assert cli.main(["run", "anything", "--json", "--db", str(db)], out=out) == 4
    message = err.strip().replace("--base-url", "$OPENAI_BASE_URL")  # where the URL came from
    assert json_lines(out.getvalue()) == [{"event": "error", "exit_code": 4, "message": message}]
    assert cli.main(["run", "anything", "--base-url", "localhost:8000/v1"]) == 2
    assert capsys.readouterr().err.endswith("does not start with http:// or https://: fix --base-url.\n")


@pytest.mark.system
def test_a_server_lost_mid_run_pauses_the_run_names_the_server_and_exits_4(serve, monkeypatch, tmp_path):
    monkeypatch.setattr("replangraph.clock.wait", lambda seconds: None)  # no backoff between the tries
    url = serve(DroppingServer)
    out = io.StringIO()
    db = str(tmp_path / "runs.sqlite")
    code = cli.main(["run", DEMO_GOAL, *TOOLS, "--model", "m", "--db", db, "--thread", "lost"], out=out)
    text = out.getvalue()
    assert code == 4, text
    assert "Final answer" not in text and "max_replans" not in text  # paused: no report, no limit blamed
    assert text.rstrip().endswith(
        f"The model server at {url} stopped answering during the run (connection error); the run is paused, "
        f"nothing failed: start it. The checkpoint keeps the run: once the server answers again, resume with: "
        f"replangraph resume --thread lost --db {db}"
    )
    assert len(FakeOpenAI.requests) == 1 + 3  # the plan, then one call's three tries: no replanning, no report


@pytest.mark.system
def test_the_one_model_a_local_server_serves_is_used_and_recorded(serve, tmp_path):
    serve(ModelServer)
    ModelServer.models = ["local-llama"]
    db = str(tmp_path / "runs.sqlite")
    out = io.StringIO()
    assert cli.main(["run", DEMO_GOAL, *TOOLS, "--db", db, "--thread", "m1"], out=out) == 0
    assert ModelServer.gets == ["/v1/models"]
    assert {r["model"] for r in FakeOpenAI.requests} == {"local-llama"}  # not gpt-4o-mini
    with cli.ExitStack() as stack:
        saver, _ = cli.open_db(stack, db)
        metadata = saver.get_tuple({"configurable": {"thread_id": "m1", "checkpoint_ns": ""}}).metadata
    assert cli.recorded_settings(metadata)["model"] == "local-llama"  # resume uses it again
    assert cli.recorded_settings(metadata)["base_url"] is None


@pytest.mark.system
def test_a_server_with_several_models_asks_for_one(serve, capsys):
    url = serve(ModelServer)
    ModelServer.models = ["qwen-7b", "llama-8b"]
    assert cli.main(["run", "anything"]) == 2
    assert capsys.readouterr().err == (
        f"The server at {url} serves several models: pass --model, one of: qwen-7b, llama-8b.\n"
    )
    assert FakeOpenAI.requests == []
    out = io.StringIO()
    assert cli.main(["run", DEMO_GOAL, *TOOLS, "--model", "llama-8b"], out=out) == 0
    assert {r["model"] for r in FakeOpenAI.requests} == {"llama-8b"}


@pytest.mark.system
def test_a_server_that_lists_no_models_asks_for_one(serve, capsys):
    url = serve(FakeOpenAI)  # no GET at all: 501
    assert cli.main(["run", "anything"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"The server at {url} answered GET /models with HTTP 501") and "pass --model NAME" in err
    ModelServer.models = []
    url = serve(ModelServer)
    assert cli.main(["run", "anything"]) == 2
    assert f"The server at {url} lists no models" in capsys.readouterr().err


@pytest.mark.system
def test_resume_checks_the_server_before_going_on(fake_openai, monkeypatch, tmp_path, capsys):  # noqa: F811
    FakeOpenAI.responder = staticmethod(hitl_responder)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal: the plan waits
    db = str(tmp_path / "runs.sqlite")
    assert cli.main(["run", "Name the capital of France.", "--db", db, "--thread", "r1", "--approve-plan"]) == 3
    down = f"http://127.0.0.1:{closed_port()}/v1"
    code = cli.main(["resume", "--thread", "r1", "--db", db, "--answer", "approve", "--base-url", down])
    assert code == 4
    assert capsys.readouterr().err.endswith(
        f"The model server at {down} did not answer (connection refused): start it or fix --base-url.\n"
    )
    out = io.StringIO()
    assert cli.main(["resume", "--thread", "r1", "--db", db, "--answer", "approve"], out=out) == 0  # still waiting
    assert "RESULT: Paris" in out.getvalue().split("Final answer:", 1)[1]
