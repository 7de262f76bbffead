"""What a host that runs the graph's nodes itself tells the engine: the only things the engine reads from one.

LangGraph runs a compiled graph's nodes in its own loop, in the process that called ``invoke``. A host may run
them otherwise: `replangraph.temporal` runs the Pregel loop in a Temporal workflow (whose code is replayed) and
most nodes as activities on other processes. Three things the engine reads then differ, and the host sets them
here; the engine names no host, and in-process nothing here is set.

- `step_clock`: the clock a subtask's time is read from (`replangraph.llm.time_limits.StepClock`). Unset, the process's
  monotonic clock. A host that replays code must give code it replays a clock that reads the same on replay
  (Temporal's workflow sets the workflow's time), or a step limit decides differently the second time.
- `run_clock`, `run_random`: the time (epoch seconds) and the randomness routing rules and feature hooks read
  (`replangraph.clock`). Unset, the process's. A host that replays code sets both (Temporal's workflow: its
  deterministic time and its seeded random).
- `RUN_CAN_PAUSE`: a run config ``metadata`` key, True when the run can pause although the node has no checkpointer
  in its config (`replangraph.run_config.has_checkpointer`): the host keeps the paused run itself (Temporal's workflow
  holds the checkpointer; an activity's node gets only the run's metadata).
- `node_behind`: the object a graph node runs (the planner, the executor, the tools node's runner), as
  `replangraph.builder` made it (and `metering_behind`, what meters its replies), for a host that rebuilds a
  node's work in another process from its own build;
  `effects_in_tasks`: whether that node makes every call with effects outside the state as a LangGraph task of its
  own, so that a host may run the node where the state is and only its tasks elsewhere; `pauses_run`: whether
  the node may pause the run (``interrupt()``), so that a host keeps it where the run's checkpoints are.
"""

from __future__ import annotations

import contextvars
import random
from collections.abc import Callable
from typing import Any

step_clock: contextvars.ContextVar[Callable[[], float] | None] = contextvars.ContextVar(
    "replangraph_step_clock", default=None
)
"""Seconds, monotonic: what `StepClock` reads in this context, or None for ``time.monotonic``."""

run_clock: contextvars.ContextVar[Callable[[], float] | None] = contextvars.ContextVar(
    "replangraph_run_clock", default=None
)
"""Epoch seconds as the run reads them (`replangraph.clock.run_time`), or None for ``time.time``."""
run_random: contextvars.ContextVar[random.Random | None] = contextvars.ContextVar(
    "replangraph_run_random", default=None
)
"""The run's randomness (`replangraph.clock.run_randomness`), or None for the process's."""

RUN_CAN_PAUSE = "replangraph_run_can_pause"
"""The run config ``metadata`` key by which a host says the run can pause although nodes have no checkpointer."""

_NODE_ATTRIBUTE = "replangraph_node"
_METERING_ATTRIBUTE = "replangraph_metering"
_PAUSES_ATTRIBUTE = "replangraph_pauses"


def with_node(runnable: Any, node: Any, metering: Any = None, pauses: bool = False) -> Any:
    """``runnable`` (what LangGraph runs for a graph node), recording that it runs ``node``, its replies metered
    by ``metering`` (`replangraph.features.Metering`, None when nothing meters them), and whether it ``pauses``
    the run."""
    setattr(runnable, _NODE_ATTRIBUTE, node)
    setattr(runnable, _METERING_ATTRIBUTE, metering)
    setattr(runnable, _PAUSES_ATTRIBUTE, pauses)
    return runnable


def pauses_run(runnable: Any) -> bool:
    """Whether the node ``runnable`` runs may pause the run (``interrupt()``; see `with_node`)."""
    return bool(getattr(runnable, _PAUSES_ATTRIBUTE, False))


def node_behind(runnable: Any) -> Any | None:
    """The object ``runnable`` runs (see `with_node`), or None for a node `replangraph.builder` did not make."""
    return getattr(runnable, _NODE_ATTRIBUTE, None)


def metering_behind(runnable: Any) -> Any | None:
    """What meters the replies of the node ``runnable`` runs (see `with_node`), or None: a host that makes the
    node's calls elsewhere meters them with it."""
    return getattr(runnable, _METERING_ATTRIBUTE, None)


def effects_in_tasks(runnable: Any) -> bool:
    """Whether the node behind ``runnable`` makes each call with effects outside the state (a model's, a tool's) a
    task of its own (`replangraph.node_calls`, the tools node's tool calls), its own code only computing over the
    state: its ``effects_in_tasks`` attribute."""
    return bool(getattr(node_behind(runnable), "effects_in_tasks", False))
