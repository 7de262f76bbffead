"""Graphs the Temporal system tests serve from worker processes (`temporal_worker.py`), and run in-process beside.

Each is a function returning what `build_graph` returns, so a worker process builds its own.
"""

from __future__ import annotations

import re
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


def logged_calls(subtasks: str, log: str, call_s: str):
    """``subtasks`` subtasks, each one call of ``work(item)``, which takes ``call_s`` seconds and writes
    ``START pid item`` and ``END pid item`` lines to ``log`` (fsynced, so a killed worker's lines are there)."""
    import asyncio
    import os

    from langchain_core.tools import tool

    def write(line: str) -> None:
        with open(log, "a") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())

    @tool
    async def work(item: str) -> str:
        """Work on one item."""
        write(f"START {os.getpid()} {item}")
        await asyncio.sleep(float(call_s))
        write(f"END {os.getpid()} {item}")
        return f"{item} done"

    items = [f"item-{n}" for n in range(int(subtasks))]

    def respond(request):
        if "Plan" in request.tool_names:
            return tool_call("Plan", {"tasks": [{"id": item, "content": item} for item in items]})
        subtask = subtask_of(request)
        if subtask:
            done = [m.content for m in request.tool_results]
            return done[0] if done else tool_call("work", {"item": subtask})
        return "\n".join(sorted(set(re.findall(r"item-\d+ done", request.prompt))))

    config = AgentConfig(verify_results=False, max_concurrency=int(subtasks))
    return build_graph(ScriptedChatModel(respond=respond), tools=[work], config=config)
