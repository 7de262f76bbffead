"""Graphs the Temporal system tests serve from worker processes (`temporal_worker.py`), and run in-process beside.

Each is a function returning what `build_graph` returns, so a worker process builds its own.
"""

from __future__ import annotations

from pathlib import Path

from docs_support import blocks
from scripting import subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.testing import ScriptedChatModel, tool_call

README = Path(__file__).resolve().parents[2] / "README.md"
README_GOAL = "Look up the yearly rainfall of seven cities."


def readme_example():
    """The graph of the README's first example, from the README's own code (up to its ``graph.invoke``)."""
    block = next(b for b in blocks(README) if b.lang == "python" and "def rainfall" in b.text)
    namespace: dict = {"__name__": "readme_example"}
    exec(block.text.split("\nout = graph.invoke")[0], namespace)  # noqa: S102 - the README's own example
    return namespace["graph"]


def raising_subtask():
    """Three subtasks; the model raises ValueError whenever it works on ``b`` (a bug, not a flaky call)."""

    def respond(request):
        if "Plan" in request.tool_names:
            return tool_call("Plan", {"tasks": [{"id": t, "content": t} for t in ("a", "b", "c")]})
        subtask = subtask_of(request)
        if subtask == "b":
            raise ValueError("the parser crashed on b")
        if subtask in ("a", "c"):
            return f"result of {subtask}"
        return "final: " + ", ".join(sorted(set(request.prompt.split()) & {"a", "b", "c"}))

    return build_graph(ScriptedChatModel(respond=respond), config=AgentConfig(verify_results=False))
