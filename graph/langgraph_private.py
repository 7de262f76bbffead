"""LangGraph's private parts that replangraph uses, all in this module: nothing else imports a private module of
langgraph (``langgraph._internal``, ``langgraph.pregel._checkpoint``) or spells a ``__pregel_`` key. Each has no
public way in langgraph 1.2; the note beside it says what it is used for and what would replace it. pyproject.toml
bounds langgraph below the next minor release, and ``tests/unit/engine/test_langgraph_private.py`` fails naming
the part when an upgrade moves or changes one.
"""

from __future__ import annotations

from langgraph._internal._constants import (
    CONFIG_KEY_CALL,
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_DURABILITY,
    CONFIG_KEY_NODE_ERROR,
    CONFIG_KEY_RUNTIME,
)
from langgraph._internal._runnable import RunnableCallable
from langgraph.pregel import _checkpoint as pregel_checkpoint

__all__ = [
    "CONFIG_KEY_CALL",
    "CONFIG_KEY_CHECKPOINTER",
    "CONFIG_KEY_DURABILITY",
    "CONFIG_KEY_NODE_ERROR",
    "CONFIG_KEY_RUNTIME",
    "RunnableCallable",
    "pregel_checkpoint",
]

# CONFIG_KEY_CALL ("__pregel_call"): in a task's ``configurable`` when the task can start tasks of its own (the
#   functional API's ``call``); `replangraph.nodes.execution.calls.in_run` asks it before running each tool call
#   as a task. Public replacement: none (``langgraph.func`` offers no "am I in a run" probe).
# CONFIG_KEY_CHECKPOINTER ("__pregel_checkpointer"): the run's checkpointer in a node's config; whether a run can
#   pause (`replangraph.run_config.has_checkpointer`). Public replacement: a ``Runtime`` field naming the checkpointer.
# CONFIG_KEY_DURABILITY ("__pregel_durability"): the default durability a compiled graph runs with
#   (`replangraph.builder.build_graph`: ``"sync"`` with a checkpointer). Public replacement: a ``durability``
#   argument to ``compile`` or ``with_config``.
# CONFIG_KEY_NODE_ERROR ("__pregel_node_error"): the error LangGraph hands a node's error-handler node in its
#   config; the Temporal adapter reads it where the plugin drops the handler's ``error`` argument.
# CONFIG_KEY_RUNTIME ("__pregel_runtime"): a node's ``Runtime`` in its config; the Temporal adapter gives the
#   node a runtime whose stream writer keys each event by its activity (`replangraph.temporal.events`).
# RunnableCallable: how LangGraph wraps a node function with a sync and an async path (``add_node`` of a plain
#   function builds one); `replangraph.builder.both_paths` builds it with both, so ``invoke`` and ``ainvoke`` each
#   run the node's own path. Public replacement: ``add_node`` taking a sync/async pair.
# pregel_checkpoint (``langgraph.pregel._checkpoint``): the module whose ``uuid6`` names each checkpoint; the
#   Temporal adapter gives it a deterministic one inside workflows (`replangraph.temporal.ids.install`), as a
#   replayed workflow must make the same ids. Public replacement: a checkpoint-id factory in the run config.
