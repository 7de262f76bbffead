"""What a run kept is readable from the command line (`replangraph output`), the report says how, and a final
answer that is the fallback report never exits 0. The model is the loopback OpenAI-compatible server, which
refuses (HTTP 400, not retried) the requests its responder will not answer."""

from __future__ import annotations

import re

import pytest
from cli_helpers import main, subtask_of
from langchain_core.tools import tool
from openai_loopback import OpenAILoopback

from replangraph.testing import ScriptedRequest, tool_call

pytestmark = pytest.mark.system  # the loopback server, through the CLI

GOAL = "Look up the Zephyr 14"


@tool
def lookup(name: str) -> str:
    """Look up a laptop's launch year."""
    return f"{name}: launched 2021 (ledger 5521)"


def plan(request: ScriptedRequest) -> dict:
    return tool_call("Plan", {"tasks": [{"id": "1", "content": "Look up the Zephyr 14", "depends_on": []}]})


def fails_after_the_lookup(request: ScriptedRequest):
    """Subtask 1 looks the laptop up, then its model refuses; so does every later request (replanner, fallback)."""
    if "Plan" in request.tool_names:
        return plan(request)
    if subtask_of(request) == "Look up the Zephyr 14" and request.last_result("lookup") is None:
        return tool_call("lookup", {"name": "Zephyr 14"})
    raise ValueError("the model refuses this request")


def no_final_answer(request: ScriptedRequest):
    """Every subtask completes; the final answer's request is refused."""
    if "Plan" in request.tool_names:
        return plan(request)
    if subtask_of(request):
        return "RESULT: the Zephyr 14 launched in 2021"
    raise ValueError("the model refuses this request")


@pytest.fixture
def serve(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("REPLANGRAPH_MODEL", raising=False)
    servers: list[OpenAILoopback] = []

    def start(responder) -> str:
        servers.append(OpenAILoopback(responder, models=["local"]).__enter__())
        return servers[-1].base_url

    yield start
    for server in servers:
        server.__exit__()


def test_a_failed_subtasks_window_is_named_in_the_report_and_read_with_replangraph_output(serve, tmp_path):
    url = serve(fails_after_the_lookup)
    db = str(tmp_path / "runs.sqlite")
    code, text = main("run", GOAL, "--base-url", url, "--db", db, "--thread", "k1", "--tools", f"{__name__}:lookup")
    assert code == 1, text
    report = text.split("Final answer:", 1)[1]
    assert "(its window is kept as output 1/window-at-failure)" in report
    assert "read it with `replangraph output --thread k1 OUTPUT_ID`" in report

    code, listed = main("output", "--thread", "k1", "--db", db)
    assert code == 0 and "1/window-at-failure" in listed.splitlines()
    code, window = main("output", "--thread", "k1", "--db", db, "1/window-at-failure")
    assert code == 0
    assert "Zephyr 14: launched 2021 (ledger 5521)" in window  # what the subtask had read before it failed


def test_an_unknown_output_id_exits_2_listing_the_ids(serve, tmp_path, capsys):
    url = serve(no_final_answer)
    db = str(tmp_path / "runs.sqlite")
    main("run", GOAL, "--base-url", url, "--db", db, "--thread", "k2")
    code, result = main("output", "--thread", "k2", "--db", db, "1/result")
    assert code == 0 and result.strip() == "RESULT: the Zephyr 14 launched in 2021"
    assert main("output", "--thread", "k2", "--db", db, "9/nothing")[0] == 2
    assert re.search(r"kept no output '9/nothing'; it kept: 1/result\.", capsys.readouterr().err)
    assert main("output", "--thread", "nope", "--db", db)[0] == 2


def test_a_final_answer_the_model_could_not_write_is_the_report_and_exits_1(serve, tmp_path):
    url = serve(no_final_answer)
    code, text = main("run", GOAL, "--base-url", url, "--db", str(tmp_path / "runs.sqlite"), "--thread", "k3")
    assert code == 1, text  # every subtask completed, but the answer is the fallback report
    report = text.split("Final answer:", 1)[1]
    assert "the final model call failed" in report and "RESULT: the Zephyr 14 launched in 2021" in report
