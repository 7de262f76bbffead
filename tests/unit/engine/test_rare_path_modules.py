"""Modules that hold rare paths: a small run executes none of them, and the names the docs and the changelog
gave stay importable from where they were."""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

from scripting import look_review_hand_off, make_model, plan_of
from test_architecture import within

from replangraph import AgentConfig, build_graph

RARE_PATH_MODULES = (
    "replangraph.context.excerpts",
    "replangraph.llm.errors",
    "replangraph.llm.aio",
    "replangraph.llm.formats",
    "replangraph.nodes.execution.adapting",
    "replangraph.nodes.execution.continuing",
    "replangraph.nodes.execution.endings",
    "replangraph.nodes.finalize.report",
)


# --------------------------------------------------------------------------- modules one small run executes

EXCLUDED = ("replangraph.app", "replangraph.testing")


def executed_modules(run) -> set[str]:
    """The package's modules (not ``app``, ``testing`` or ``__init__`` files) whose code runs during ``run()``."""
    found: set[str] = set()

    def profile(frame, event, _arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        ours = within(module, "replangraph") and not any(within(module, e) for e in EXCLUDED)
        if ours and not frame.f_code.co_filename.endswith("__init__.py"):
            found.add(module)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return found


def look(name: str) -> str:
    """Looks a thing up."""
    return f"about {name}"


def small_run() -> set[str]:
    # The run the issue measured on 0.8.0, whose completion check was off by default.
    model = make_model(plan_of({"id": "1", "content": "look x up"}), look_review_hand_off)
    graph = build_graph(model, [look], config=AgentConfig(verify_results=False))
    result: dict = {}

    def run() -> None:
        result.update(graph.invoke({"messages": [("user", "look x up")]}))

    modules = executed_modules(run)
    assert [t["status"] for t in result["tasks"].values()] == ["completed", "completed"]
    assert "the rest, done" in result["final_answer"]
    return modules


def test_a_small_run_executes_no_rare_path_module():
    assert not set(RARE_PATH_MODULES) & small_run()


def test_names_the_docs_gave_stay_importable_where_they_were():
    from replangraph.context import excerpts, fitting
    from replangraph.llm import lenient, reading
    from replangraph.nodes.execution import adapting, middleware, shapes

    assert (fitting.excerpt, fitting.fair_shares) == (excerpts.excerpt, excerpts.fair_shares)
    assert (reading.UnreadableInput, reading.CutOff, reading.as_text) == (
        lenient.UnreadableInput,
        lenient.CutOff,
        lenient.as_text,
    )
    assert middleware.split_middleware is adapting.split_middleware
    assert (middleware.Hook, middleware.async_form) == (adapting.Hook, adapting.async_form)
    assert (middleware.ModelRequest, middleware.ToolWrapper) == (shapes.ModelRequest, shapes.ToolWrapper)


def test_the_docs_name_exactly_the_rare_path_modules():
    """docs/how-it-works.md's layout section lists the rare path's modules (``llm/formats.py``, ...): the same
    modules as `RARE_PATH_MODULES`, each of which exists."""
    root = Path(__file__).resolve().parents[3]
    text = (root / "docs" / "how-it-works.md").read_text()
    paragraph = text[text.index("Code that plain runs do not need") : text.index("test_rare_path_modules.py")]
    named = set(re.findall(r"`((?:llm|context|nodes/\w+)/\w+)\.py`", paragraph))
    tops = {"llm": "replangraph.llm", "context": "replangraph.context", "nodes": "replangraph.nodes"}
    modules = {tops[path.split("/")[0]] + "." + ".".join(path.split("/")[1:]) for path in named}
    assert modules == set(RARE_PATH_MODULES)
    for path in named:
        assert (root / ("graph/" + path if not path.startswith("nodes/") else path)).with_suffix(".py").exists(), path
