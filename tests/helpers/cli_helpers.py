"""What the CLI tests share: goals and the responders that script the fake OpenAI server for them (chosen by the
request's content, never by call order), and readers of what the command printed."""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
from pathlib import Path

from clocks import hold_until_go
from langchain_core.tools import tool

from replangraph.app import cli
from replangraph.testing import ScriptedRequest, tool_call

ASK_GOAL = "Find the launch year of the Zephyr 14 laptop; ask the user which market they mean."
TWO_GOAL = "Find the launch year of the Zephyr 14 and the Atlas 13; ask the user which market for each."
PLAIN_GOAL = "Name the capital of France."
MARKET_QUESTION = "Which market do you mean, EU or US?"
TOOLS = ("--tools", "replangraph.app.demo:read_ranking")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def subtask_of(request: ScriptedRequest) -> str:
    found = re.search(r"Your subtask \([^)]*\): (.*)", request.prompt)
    return found.group(1) if found else ""


def hitl_responder(request: ScriptedRequest):
    """Plans one subtask per laptop named in the goal; a subtask that says so asks the user first."""
    if "Plan" in request.tool_names:
        laptops = [name for name in ("Zephyr 14", "Atlas 13") if name in request.prompt] or ["capital"]
        ask = "ask the user" in request.prompt
        tasks = [
            {
                "id": str(n),
                "content": f"Find the launch year of the {name}" + ("; ask the user which market" if ask else ""),
                "agent_type": "default",
                "depends_on": [],
            }
            for n, name in enumerate(laptops, 1)
        ]
        if laptops == ["capital"]:
            tasks = [{"id": "1", "content": "Name the capital of France", "agent_type": "default", "depends_on": []}]
        return tool_call("Plan", {"tasks": tasks})
    subtask = subtask_of(request)
    if subtask:
        if "capital" in subtask:
            return "RESULT: Paris"
        if "ask the user" in subtask and request.last_result("ask_user") is None:
            return tool_call("ask_user", {"question": MARKET_QUESTION})
        market = request.last_result("ask_user") or "any"
        laptop = "Zephyr 14" if "Zephyr" in subtask else "Atlas 13"
        return f"RESULT: the {laptop} launched in 2021 in market {market}"
    results = re.findall(r"RESULT: .*", request.prompt)
    return "FINAL ANSWER\n" + "\n".join(dict.fromkeys(results))


def tool_results(requests: list[dict], name: str) -> list[str]:
    """Contents of the tool messages answering calls of ``name`` that the server was sent."""
    found = []
    for body in requests:
        messages = body["messages"]
        calls = {
            c["id"]: c["function"]["name"]
            for m in messages
            if m["role"] == "assistant"
            for c in m.get("tool_calls") or []
        }
        found += [m["content"] for m in messages if m["role"] == "tool" and calls.get(m["tool_call_id"]) == name]
    return found


def thread_of(text: str) -> str:
    found = re.search(r"^thread: (\S+) \(resume with: replangraph resume --thread \1", text, flags=re.M)
    assert found, text
    return found.group(1)


def checkpoints(db: Path, thread: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread,)).fetchone()[0]


def main(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.main(list(argv), out=out)
    return code, out.getvalue()


def lookup_responder(request: ScriptedRequest):
    """Plans one subtask that calls the ``lookup`` tool once, then reports what it returned."""
    if "Plan" in request.tool_names:
        task = {"id": "1", "content": "Look up the Zephyr 14", "agent_type": "default", "depends_on": []}
        return tool_call("Plan", {"tasks": [task]})
    if subtask_of(request):
        found = request.last_result("lookup")
        return f"RESULT: {found}" if found else tool_call("lookup", {"name": "Zephyr 14"})
    return "FINAL ANSWER\n" + "\n".join(re.findall(r"RESULT: .*", request.prompt))


HOLD_ENV = "REPLANGRAPH_TEST_HOLD"
"""A folder named here makes `held_lookup` write ``started`` there, then return only once ``go`` appears."""


@tool("lookup")
def held_lookup(name: str) -> str:
    """Look up a product by name."""
    folder = os.environ.get(HOLD_ENV)
    if folder:
        hold_until_go(folder, name)
    return f"{name}: launched in 2021"


class Terminal(io.StringIO):
    """A stdout that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def json_lines(text: str) -> list[dict]:
    """Every line of ``text`` as a JSON object (each must parse)."""
    lines = text.splitlines()
    assert lines, "no output"
    objects = [json.loads(line) for line in lines]
    assert all(isinstance(o, dict) and "event" in o for o in objects)
    return objects


def record_requests(monkeypatch) -> list[str]:
    """Every HTTP request httpx sends from now on (the probe's and the model client's), as ``"METHOD URL"``."""
    import httpx

    sent: list[str] = []
    original = httpx.HTTPTransport.handle_request

    def recorded(self, request: httpx.Request) -> httpx.Response:
        sent.append(f"{request.method} {request.url}")
        return original(self, request)

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", recorded)
    return sent


def record_waits(monkeypatch) -> list[float]:
    """The seconds each retry wait asks for from now on (``replangraph.clock.wait``); nothing is slept."""
    waits: list[float] = []
    monkeypatch.setattr("replangraph.clock.wait", waits.append)
    return waits
