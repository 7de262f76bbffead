"""The core a newcomer follows: one subtask's path from planner to final answer stays within a few files."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from scripting import make_model, plan_of

from replangraph import build_graph
from replangraph.testing import tool_call

MAX_PATH_FILES = 8


def look(name: str) -> str:
    """Looks a thing up."""
    return f"about {name}"


def work(request):
    return "done" if request.tool_results else tool_call("look", {"name": "x"})


def called_by_langgraph(run) -> set[str]:
    """Our modules whose functions LangGraph itself calls during ``run()``: nodes (through the
    wrapper that opens their workspace), routers, reducers."""
    found: set[str] = set()

    def profile(frame, event, _arg):
        module = frame.f_globals.get("__name__", "")
        if event != "call" or not module.startswith("replangraph.") or frame.f_back is None:
            return
        if "langgraph" not in Path(frame.f_back.f_code.co_filename).parts:
            return
        wrapped = frame.f_locals.get("node") if frame.f_code.co_name == "run" else None
        found.add(wrapped.__module__ if wrapped is not None else module)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return found


def test_one_subtask_s_path_crosses_at_most_eight_modules():
    graph = build_graph(make_model(plan_of({"content": "look x up"}), work), [look])
    files = called_by_langgraph(lambda: graph.invoke({"messages": [("user", "look x up")]}))
    path = files | {"replangraph.state"}  # the schema those functions read and write
    nodes = {f"replangraph.nodes.{name}" for name in ("planner", "executor", "tool_runner", "finalizer")}
    assert nodes | {"replangraph.routing", "replangraph.queue_index"} <= path  # the router, the queue's reducer
    assert len(path) <= MAX_PATH_FILES, sorted(path)
