"""Modules that hold rare paths: a small run executes none of them, and the names the docs and the changelog
gave stay importable from where they were."""

from __future__ import annotations

import re
from pathlib import Path

from test_architecture import small_run

RARE_PATH_MODULES = (
    "replangraph.context.excerpts",
    "replangraph.context.lookup",
    "replangraph.context.model_memory",
    "replangraph.llm.errors",
    "replangraph.llm.aio",
    "replangraph.llm.formats",
    "replangraph.llm.reasking",
    "replangraph.nodes.execution.adapting",
    "replangraph.nodes.execution.endings",
    "replangraph.nodes.finalize.report",
)


def test_a_small_run_executes_no_rare_path_module():
    assert not set(RARE_PATH_MODULES) & small_run()


def test_names_the_docs_gave_stay_importable_where_they_were():
    from replangraph.context import excerpts, fitting, kept, lookup, model_memory
    from replangraph.nodes.execution import adapting, middleware

    assert (fitting.excerpt, fitting.fair_shares, fitting.cut_args) == (
        excerpts.excerpt,
        excerpts.fair_shares,
        excerpts.cut_args,
    )
    assert fitting.LearnedByModel is model_memory.LearnedByModel
    assert (kept.read_saved, kept.run_namespace, kept.thread_label) == (
        lookup.read_saved,
        lookup.run_namespace,
        lookup.thread_label,
    )
    assert middleware.split_middleware is adapting.split_middleware
    assert (middleware.Hook, middleware.async_form) == (adapting.Hook, adapting.async_form)


def test_the_async_path_s_names_stay_importable_from_the_call_path():
    from replangraph.llm import aio, calls

    assert {name for name in calls.ASYNC_NAMES if getattr(calls, name) is not getattr(aio, name)} == set()
    from replangraph.llm.aio import acall_model, arun_steps

    assert (acall_model, arun_steps) == (aio.acall_model, aio.arun_steps)


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
