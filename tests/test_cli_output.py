"""What the console script shows: ``--json`` lines, the live view on a terminal, plain lines elsewhere.

Runs go through the demo's scripted model or test_openai_compat's loopback fake OpenAI server.
"""

from __future__ import annotations

import builtins
import io
import json
import re
import socket
import sys
import threading
import time
from http.server import ThreadingHTTPServer

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from rich.console import Console
from test_cli_resume import ASK_GOAL, MARKET_QUESTION, hitl_responder
from test_openai_compat import FakeOpenAI, fake_openai  # noqa: F401  (the fixture)

from replangraph.app import cli, console
from replangraph.app.demo import DEMO_GOAL, demo_responder, expected_products
from replangraph.app.live import LiveOutput, QueueView
from replangraph.queue import new_task

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TOOLS = ("--tools", "replangraph.app.demo:read_ranking")


class Terminal(io.StringIO):
    """A stdout that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def default_db(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLANGRAPH_DB", str(tmp_path / "default-runs.sqlite"))


def json_lines(text: str) -> list[dict]:
    """Every line of ``text`` as a JSON object (each must parse)."""
    lines = text.splitlines()
    assert lines, "no output"
    objects = [json.loads(line) for line in lines]
    assert all(isinstance(o, dict) and "event" in o for o in objects)
    return objects


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
    assert final["tokens"] == 15 * len(fake_openai)  # the fake server reports 15 tokens per request
    assert "thread: j1" in capsys.readouterr().err


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


def test_json_lines_hold_what_json_cannot(capsys):
    line = console.json_line({"event": "x", "message": AIMessage("hi"), "when": object()})
    assert json.loads(line)["event"] == "x"
    assert "\n" not in console.json_line({"event": "y", "text": "two\nlines"})


# The live view


def view_text(view: QueueView) -> str:
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100, record=True)
    terminal.print(view.render())
    assert "\x1b[" in terminal.file.getvalue()  # drawn with colours
    return terminal.export_text()


def queue_values(status: str = "in_progress", calls: int = 3) -> dict:
    parent = {**new_task("1", "Extract products ranked 1-19", position=[1]), "status": status, "model_calls": calls}
    child = new_task(
        "1_dyn_0", "Extract products ranked 6-10", position=[1, 0], parent_id="1", depth=1, origin="dynamic"
    )
    other = {**new_task("2", "Write the summary", position=[2], depends_on=["1"]), "status": "skipped"}
    return {"goal": "top 19 products", "tasks": {"1": parent, "1_dyn_0": child, "2": other}, "replans": []}


def test_the_view_nests_handed_off_work_under_its_parent_and_counts_steps_and_tokens():
    view = QueueView(max_steps=40)
    assert "planning…" in view_text(view)
    view.feed("values", queue_values())
    text = view_text(view)
    lines = text.splitlines()
    parent = next(i for i, line in enumerate(lines) if " 1 Extract products ranked 1-19" in line)
    child = next(i for i, line in enumerate(lines) if "1_dyn_0 Extract products ranked 6-10" in line)
    top = next(i for i, line in enumerate(lines) if " 2 Write the summary" in line)
    assert parent < child < top
    assert lines[child].index("1_dyn_0") > lines[parent].index("1 Extract") > 0  # nested one level deeper
    assert lines[top].index("2 Write") == lines[parent].index("1 Extract")
    assert "▶ 1 Extract" in lines[parent] and "running" in lines[parent]
    assert "○ 1_dyn_0" in lines[child] and "⊘ 2" in lines[top]
    assert "steps: 3/40 · tokens: n/a" in text
    assert "1 running" in text and "1 pending" in text and "1 skipped" in text

    view.usage.add({"input_tokens": 10, "output_tokens": 5, "total_tokens": 15})
    view.usage.on_llm_end(LLMResult(generations=[[ChatGeneration(message=AIMessage("x", usage_metadata=usage(20)))]]))
    view.feed("values", queue_values(calls=5))
    assert "steps: 5/40 · tokens: 35" in view_text(view)


def usage(total: int) -> dict:
    return {"input_tokens": total - 1, "output_tokens": 1, "total_tokens": total}


def test_the_tool_call_in_flight_shows_until_its_answer_arrives():
    view = QueueView(max_steps=40)
    view.feed("values", queue_values())
    turn = AIMessage("", tool_calls=[{"name": "read_ranking", "args": {"start": 1, "count": 5}, "id": "c1"}])
    view.feed("updates", {"executor": {"tasks": {"1": {"status": "in_progress"}}, "windows": {"1": [turn]}}})
    text = view_text(view)
    lines = text.splitlines()
    call = next(i for i, line in enumerate(lines) if "↳ read_ranking(start=1, count=5)" in line)
    assert "1 Extract products ranked 1-19" in lines[call - 1]  # under its subtask

    answered = [turn, ToolMessage("#1 Aurora Desk Lamp", tool_call_id="c1", name="read_ranking")]
    view.feed("updates", {"tools": {"windows": {"1": answered}, "tasks": {"1": {"elapsed_s": 0.1}}}})
    assert "read_ranking(" not in view_text(view)

    view.feed("updates", {"executor": {"windows": {"1": [turn]}}})
    view.feed("updates", {"tools": {"tasks": {"1": {"status": "completed"}}, "windows": {"1": None}}})
    assert "read_ranking(" not in view_text(view)  # the subtask ended: nothing in flight


def test_the_demo_on_a_terminal_runs_under_the_live_view():
    out = Terminal()
    assert cli.main(["demo"], out=out) == 0
    raw = out.getvalue()
    text = ANSI.sub("", raw)
    assert "\x1b[?25l" in raw and "\x1b[?25h" in raw  # rich's Live hid the cursor and showed it again
    assert "✔ 1_dyn_2 Extract products ranked 16-19" in text
    assert "- 1 handed off work: added 1_dyn_0, 1_dyn_1, 1_dyn_2" in text  # events printed above the view
    assert re.search(r"steps: 9/1000 · tokens: [\d,]+ · ✔ 4 completed\n", text)
    assert text.index("Final answer:") > text.rindex("steps: 9/1000")  # the answer after the view
    assert "Check: 19/19 products in the final answer." in text


def test_a_question_is_asked_once_the_live_view_has_stopped(fake_openai, monkeypatch, tmp_path):  # noqa: F811
    FakeOpenAI.responder = staticmethod(hitl_responder)
    typed = ["US"]
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(builtins, "input", lambda prompt="": typed.pop(0))
    out = Terminal()
    assert cli.main(["run", ASK_GOAL, "--db", str(tmp_path / "runs.sqlite")], out=out) == 0
    raw = out.getvalue()
    asked = raw.index(f"1 asks: Please confirm: {MARKET_QUESTION}")
    assert raw.rindex("\x1b[?25h", 0, asked) > raw.rindex("\x1b[?25l", 0, asked)  # the view stopped first
    assert raw.count("\x1b[?25l") == 2  # a view before the question, another after it
    assert typed == []
    assert "market US" in ANSI.sub("", raw).split("Final answer:", 1)[1]


def test_plain_lines_when_not_a_terminal_or_without_rich(monkeypatch, capsys):
    args = cli.make_parser().parse_args(["demo"])
    assert type(cli.choose_output(args, io.StringIO())) is console.PlainOutput
    assert type(cli.choose_output(args, Terminal())) is LiveOutput
    monkeypatch.setitem(sys.modules, "replangraph.app.live", None)  # rich not installed
    assert type(cli.choose_output(args, Terminal())) is console.PlainOutput
    assert "replangraph[cli]" in capsys.readouterr().err
    out = Terminal()
    assert cli.main(["demo"], out=out) == 0
    assert "\x1b[" not in out.getvalue()
    assert "- 1_dyn_2 completed: #16 Pebble Bluetooth Speaker" in out.getvalue()
    assert "  [ ] 1_dyn_2: Extract products ranked 16-19" in out.getvalue()


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
    started = time.monotonic()
    assert cli.main(["run", "anything", "--base-url", url, "--db", str(db)]) == console.EXIT_CONNECTION == 4
    assert time.monotonic() - started < 5
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


def test_a_server_lost_mid_run_is_named_and_exits_4(serve, monkeypatch, tmp_path):
    monkeypatch.setattr("replangraph.retry.wait", lambda seconds: None)  # no backoff between the tries
    url = serve(DroppingServer)
    out = io.StringIO()
    code = cli.main(["run", DEMO_GOAL, *TOOLS, "--model", "m", "--db", str(tmp_path / "runs.sqlite")], out=out)
    text = out.getvalue()
    assert code == 4, text
    assert "Connection error" in text  # the failure, as the subtask recorded it
    assert text.rstrip().endswith(
        f"The model server at {url} stopped answering during the run (connection error): start it and run the goal "
        "again."
    )


def test_the_one_model_a_local_server_serves_is_used_and_recorded(serve, tmp_path):
    url = serve(ModelServer)
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
    assert cli.recorded_settings(metadata)["base_url"] is None and url


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


def test_a_server_that_lists_no_models_asks_for_one(serve, capsys):
    url = serve(FakeOpenAI)  # no GET at all: 501
    assert cli.main(["run", "anything"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"The server at {url} answered GET /models with HTTP 501") and "pass --model NAME" in err
    ModelServer.models = []
    url = serve(ModelServer)
    assert cli.main(["run", "anything"]) == 2
    assert f"The server at {url} lists no models" in capsys.readouterr().err


def test_a_long_queue_shows_what_runs_and_what_comes_next():
    tasks = {}
    for n in range(1, 101):
        status = "completed" if n < 50 else "in_progress" if n in (50, 51) else "pending"
        tasks[str(n)] = {**new_task(str(n), f"part {n}", position=[n]), "status": status}
    tasks["50_dyn_0"] = new_task("50_dyn_0", "part 50, rest", position=[50, 0], parent_id="50", depth=1)
    view = QueueView()
    view.max_rows = 10
    view.feed("values", {"tasks": tasks})
    text = view_text(view)
    assert "▶ 50 part 50" in text and "▶ 51 part 51" in text and "○ 50_dyn_0" in text
    assert "○ 52 part 52" in text and "part 49" not in text and "part 100" not in text
    assert "… 91 other task(s) not shown" in text
    assert text.endswith("steps: 0 · tokens: n/a · ○ 50 pending · ▶ 2 running · ✔ 49 completed\n")


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
