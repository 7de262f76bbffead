"""A replangraph worker process for the Temporal tests and benchmark: serves a task queue with one graph.

    python tests/helpers/temporal_worker.py ADDRESS QUEUE MODULE:FACTORY [ARG ...]

``FACTORY(*ARGS)`` (found as pytest finds the helpers: ``temporal_graphs:readme_example``) returns the graph
(what `build_graph` returns, with its scripted model and tools); the worker prints ``serving`` once it polls,
and runs until killed. ``$REPLANGRAPH_TEST_GRAPH_NAME`` names its graph otherwise than the default. Each worker
is a process of its own: the plugin changes the graph and replangraph's ``tool_call`` task in the process that
registers them.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[2])]  # as pytest has it
NAME_ENV = "REPLANGRAPH_TEST_GRAPH_NAME"
"""The name the worker registers its graph under, when set (else the default every client starts runs of)."""


def graph_from(factory: str, *args: str):
    module, _, attr = factory.partition(":")
    return getattr(importlib.import_module(module), attr)(*args)


def main(address: str, queue: str, factory: str, *args: str) -> None:
    from replangraph.temporal import serve
    from replangraph.temporal.registry import GRAPH

    ready = lambda: print("serving", flush=True)  # noqa: E731
    name = os.environ.get(NAME_ENV) or GRAPH
    asyncio.run(serve(address, graph_from(factory, *args), task_queue=queue, ready=ready, name=name))


if __name__ == "__main__":
    main(*sys.argv[1:])
