"""replangraph: a LangGraph planning agent whose running subtasks can change their own queue.

Words, one noun per concept (the code and the docs use these):

- **goal**: what the user asked for; the last human message, or ``goal`` in the input.
- **subtask**: one unit of work in the queue (the `Task` typed dict; ``task`` in code). **plan**: the subtasks the
  planner (or the replanner, or the user at plan review) decided on. **queue**: every subtask of the run, in
  order (``tasks`` in the state): the plans' subtasks and the ones added while it runs.
- **agent type**: the tools, prompt and model that run a subtask (`AgentProfile`); a **team** is an agent type
  whose **members** each run the subtask as a **candidate**, one result kept by the **merge**.
- **window**: the private message list of one running subtask (``windows`` in the state).
- **hand-off**: a running agent ends its subtask with a partial result and queues the rest as **follow-up**
  subtasks (``replan_split_and_handoff``); the completion check queues follow-ups the same way, and so does a
  limit that stops a subtask (``max_step_iterations``, ``step_timeout_s``). A follow-up is a **continuation**
  (the rest of its parent's own work, at its parent's depth) or a **split** (a narrower part of work its
  parent did none of, one level deeper: ``max_split_depth`` bounds that nesting). Every follow-up a model
  writes is queued; only the goal itself is left out (see `replangraph.queue.coverage`).
- **text policy**: the replaceable heuristics that read meaning out of instruction texts (numbered ranges),
  `TextPolicy`: they may group a plan's one-item tasks, add work a hand-off skipped and annotate overlaps
  (**coverage**: what the queue's subtasks account for), never drop, trim, merge or rewrite work.
- **replan request**: a subtask that failed, wrote ``[REPLAN]`` or called ``request_replan``; the
  **replanner** replaces the pending subtasks with a new plan.
- **kept text**: text cut from a window or a request (a long tool output, folded history) and kept whole
  under an **output id**, which ``read_output`` reads back. **results workspace**: where results and kept
  text live (the graph's store, else the ``workspace`` state channel). **workspace folder**: the folder of
  files the file tools read and write (``workspace_dir``, `replangraph.tools.workspace_tools`) — a different
  thing.
- **compression**: folding a window's older messages into a **summary** so the next request fits.
- **completion check**: the verifier's judgement of a result (``verify_results``), a **verdict**. The **goal
  check** judges every result against the goal once, before the final answer.
- **reads**: the outputs of an agent's own tools; a result carries the reads its words do not show.
- **single-agent fallback**: one agent's last try at the whole goal when replanning ends. **fallback report**:
  the final answer the finalizer writes without a model when the run ends unfinished. **rule plan**: the plan
  built from the goal's verbs when the planner's model gives no usable plan.
- **feature**: a folder under ``nodes/`` that plugs in through `replangraph.features.Feature`: its nodes,
  routing **rules**, agent types and hooks.
"""

import importlib
import logging
from pathlib import Path

import replangraph.nodes as _nodes
from replangraph.builder import build_graph
from replangraph.config import AgentConfig, AgentProfile
from replangraph.events import EVENT_NAMES
from replangraph.llm.errors import ModelServerDown
from replangraph.policy import TextPolicy
from replangraph.queue.tasks import Task, TaskStatus, plan_summary
from replangraph.state import InputState, OutputState, ReplanState

__all__ = [
    "AgentConfig",
    "AgentProfile",
    "EVENT_NAMES",
    "InputState",
    "ModelServerDown",
    "OutputState",
    "ReplanState",
    "Task",
    "TaskStatus",
    "TextPolicy",
    "build_graph",
    "plan_summary",
]


def _feature_exports() -> dict[str, str]:
    """What the registered features export at the top level (``EXPORTS`` in a feature's ``names.py``: name ->
    the module that defines it), imported when first asked for."""
    folder = Path(_nodes.__file__).parent
    found: dict[str, str] = {}
    for name in _nodes.FEATURES:
        if (folder / name / "names.py").is_file():
            found.update(getattr(importlib.import_module(f"{_nodes.__name__}.{name}.names"), "EXPORTS", {}))
    return found


_EXPORTS = _feature_exports()
__all__ += sorted(_EXPORTS)  # a feature's public names (Team), while it is registered
__version__ = "0.8.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())  # silent until the application configures logging


def __getattr__(name: str):
    """A feature's public name (``Team`` comes from the teams feature), imported when first asked for."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'replangraph' has no attribute {name!r}")
