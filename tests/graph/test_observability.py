"""Observability: every model and tool call of a run names its node and subtask to the run's callbacks (what a
LangSmith or OpenTelemetry trace groups by), and the loggers say what an operator needs, silent by default."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
from typing import Any

import httpx
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import tool
from langchain_openai.chat_models.base import OpenAIConnectionError
from scripting import WAYS, make_model, plan_of, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.testing import tool_call
from replangraph.tracing import DEPTH_KEY, NODE_KEY, PLAN_ID_KEY, TASK_ID_KEY

FAST = {"retry_backoff_s": 0.0}
REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
CONTENTS = {"a": "look up alpha", "b": "look up beta"}


class Recorder(BaseCallbackHandler):
    """Records every chat-model and tool run the callbacks see."""

    run_inline = True

    def __init__(self):
        self.runs: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def record(self, kind: str, run_id: Any, parent_run_id: Any, tags: Any, metadata: Any, **extra: Any) -> None:
        with self.lock:
            self.runs.append(
                {
                    "kind": kind,
                    "run_id": run_id,
                    "parent_run_id": parent_run_id,
                    "tags": list(tags or []),
                    "metadata": dict(metadata or {}),
                    **extra,
                }
            )

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, tags=None, metadata=None, **_):
        self.record("chat", run_id, parent_run_id, tags, metadata)

    def on_tool_start(self, serialized, input_str, *, run_id, parent_run_id=None, tags=None, metadata=None, **_):
        self.record("tool", run_id, parent_run_id, tags, metadata, input=input_str)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.runs if r["kind"] == kind]


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found: {query}"


COMPLETE = tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "all there"})


def looking_up(request):
    """Each subtask looks its own content up once, then answers; every check finds its result complete."""
    if "Verdict" in request.tool_names:
        return COMPLETE
    if request.called("lookup"):
        return f"done: {request.last_result('lookup')}"
    return tool_call("lookup", {"query": subtask_of(request)})


@pytest.mark.parametrize("way", WAYS)
def test_every_model_and_tool_call_names_its_node_and_subtask(way):
    recorder = Recorder()
    plan = plan_of(*({"id": k, "content": c, "depends_on": []} for k, c in CONTENTS.items()))
    graph = build_graph(make_model(plan, looking_up), [lookup], config=AgentConfig(**FAST))
    state, _ = run(graph, way=way, callbacks=[recorder])
    assert {t["status"] for t in state["tasks"].values()} == {"completed"}

    chats, tools = recorder.of("chat"), recorder.of("tool")
    assert chats and tools
    for recorded in chats + tools:
        assert recorded["parent_run_id"] is not None  # a child of its node's run: the run's callbacks were kept
        node = recorded["metadata"][NODE_KEY]
        assert f"replangraph:{node}" in recorded["tags"]
        task_id = recorded["metadata"].get(TASK_ID_KEY)
        if task_id is not None:
            assert f"task:{task_id}" in recorded["tags"]
            assert recorded["metadata"][PLAN_ID_KEY] == "1" and recorded["metadata"][DEPTH_KEY] == 0
    by_node: dict[str, set] = {}
    for recorded in chats:
        by_node.setdefault(recorded["metadata"][NODE_KEY], set()).add(recorded["metadata"].get(TASK_ID_KEY))
    assert by_node["planner"] == {None}
    assert by_node["executor"] == set(CONTENTS)  # two turns each, every one named
    assert by_node["verifier"] == set(CONTENTS)  # the completion check of each subtask
    assert by_node["goal_check"] == {None}
    assert by_node["finalize"] == {None}
    # A tool run of subtask X carries X's metadata: the lookup of its own content.
    assert len(tools) == len(CONTENTS)
    for recorded in tools:
        assert recorded["metadata"][NODE_KEY] == "tools"
        assert CONTENTS[recorded["metadata"][TASK_ID_KEY]] in recorded["input"]


def test_a_retry_after_a_transient_error_is_logged_with_the_task_id(caplog):
    failures = [OpenAIConnectionError(request=REQUEST)]

    def work(request):
        if "Verdict" in request.tool_names:
            return COMPLETE
        if failures:
            raise failures.pop(0)
        return "made it"

    caplog.set_level(logging.INFO, logger="replangraph")
    graph = build_graph(make_model(plan_of({"id": "a", "content": "x"}), work), config=AgentConfig(**FAST))
    state, _ = run(graph)
    assert state["tasks"]["a"]["status"] == "completed"
    retries = [r for r in caplog.records if r.name == "replangraph.llm.retries" and "retry 1 of 2" in r.getMessage()]
    assert len(retries) == 1 and retries[0].levelno == logging.INFO
    assert "executor call for task a (plan 1)" in retries[0].getMessage()
    assert "APIConnectionError" in retries[0].getMessage() or "Connection" in retries[0].getMessage()
    endings = [r.getMessage() for r in caplog.records if r.name == "replangraph.context.outcomes"]
    assert endings == ["task a (plan 1) completed after 3 model calls (7 characters)"]  # the retry, the check


def test_a_refused_split_is_logged_with_why(caplog):
    def work(request):
        if "_dyn_" in request.prompt or "rest" in subtask_of(request):
            return "rest"
        tasks = [{"content": f"part {i}"} for i in range(5)]
        return tool_call("replan_split_and_handoff", {"summary": "first part", "tasks": tasks})

    caplog.set_level(logging.WARNING, logger="replangraph")
    graph = build_graph(make_model(plan_of({"id": "1", "content": "all parts"}), work), config=AgentConfig(max_tasks=3))
    run(graph)
    refused = [r for r in caplog.records if r.name == "replangraph.tools.replan_toolkit.toolkit"]
    assert refused and all(r.levelno == logging.WARNING for r in refused)
    assert "split of task 1 (plan 1) refused" in refused[0].getMessage()
    assert "max_tasks" in refused[0].getMessage()


def test_the_stop_reason_is_logged(caplog):
    def work(request):
        raise ValueError("the tool server is gone")

    caplog.set_level(logging.INFO, logger="replangraph")
    graph = build_graph(make_model(plan_of({"id": "a", "content": "x"}), work), config=AgentConfig(**FAST))
    state, _ = run(graph)
    assert state["stop_reason"]
    stops = [r for r in caplog.records if r.name == "replangraph.nodes.finalize.finalizer"]
    assert len(stops) == 1 and stops[0].levelno == logging.WARNING
    assert stops[0].getMessage().startswith(f"run stopped: {state['stop_reason']} (plan ")
    failed = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "task a (plan 1) failed" in r.getMessage()
    ]
    assert failed and "the tool server is gone" in failed[0]


def test_a_finished_run_logs_one_info_line_per_subtask_and_its_end(caplog):
    caplog.set_level(logging.INFO, logger="replangraph")
    plan = plan_of(*({"id": k, "content": c, "depends_on": []} for k, c in CONTENTS.items()))
    run(build_graph(make_model(plan, looking_up), [lookup], config=AgentConfig(**FAST)))
    lines = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert [line for line in lines if line[1] != "INFO"] == []
    assert sorted(m.split(" completed")[0] for n, _, m in lines if n == "replangraph.context.outcomes") == [
        "task a (plan 1)",
        "task b (plan 1)",
    ]
    assert lines[-1][0] == "replangraph.nodes.finalize.finalizer"
    assert lines[-1][2].startswith("run finished: every subtask completed (plan 1;")


SILENT_RUN = """
from replangraph import AgentConfig, build_graph
from replangraph.testing import ScriptedChatModel, tool_call

def respond(request):
    if "Plan" in request.tool_names:
        return tool_call("Plan", {"tasks": [{"id": "a", "content": "x", "depends_on": []}]})
    if request.tool_names:
        raise ValueError("broken")  # a failed subtask, a stopped run: warnings, were a handler configured
    return "final"

graph = build_graph(ScriptedChatModel(respond=respond), config=AgentConfig(retry_backoff_s=0.0))
state = graph.invoke({"messages": [("user", "do it")]})
assert state["stop_reason"], state
"""


def test_nothing_is_printed_without_a_handler():
    """No logging configured: the warnings of a failed run go nowhere (Python would print them to stderr)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SILENT_RUN)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
