"""The activity registry: the graph `build_graph` makes, made fit for ``temporalio-langgraph`` (0.1.0).

What the plugin needs, and how this module gives it without changing `build_graph`:

- every node in the ``StateGraph`` must carry ``metadata["execute_in"]``, the error-handler nodes LangGraph adds
  included (``__error_handler__<node>``);
- an activity node's function must be importable by module and qualname (no closures, no class instances):
  every node runs one module-level function, `run_node`, which looks the node up in a registry the worker fills
  from its own `build_graph` (by ``config["metadata"]["langgraph_node"]``, which the plugin passes through);
- a conditional edge runs in the workflow's event loop, which has no executor: a sync router is given an async
  twin (`async_router`), or LangGraph's ``run_in_executor`` raises NotImplementedError there;
- the plugin drops an error handler's ``error`` argument (it keeps only ``config`` and ``runtime``): a node's
  handler runs inside the activity, on the exception itself (`run_node`); the handler node LangGraph adds runs
  in the workflow and reads the error from the config (`handler_from_config`), for what escapes the activity
  (retries spent, a timeout);
- an activity gets no ``__pregel_send``, so what ``interrupt()`` records there of the answers a node used is
  lost: the nodes that pause (`replangraph.hosting.pauses_run`: a question, a plan review) run in the workflow,
  on their sync path (no thread).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp, NodeError
from langgraph.graph import StateGraph
from temporalio import activity
from temporalio.common import RetryPolicy

from replangraph.hosting import effects_in_tasks, metering_behind, node_behind, pauses_run
from replangraph.langgraph_private import CONFIG_KEY_NODE_ERROR, RunnableCallable
from replangraph.llm.errors import ModelServerDown
from replangraph.names import TOOLS
from replangraph.node_calls import NODE_CALL_TASK, NodeCall, arun_node_call, resolve_node_calls_with, run_node_call
from replangraph.nodes.execution.calls import CALL_TASK, CallJob, CallSpec, arun_call, build_jobs_with, run_call
from replangraph.temporal.events import keyed_events

GRAPH = "replangraph"
"""The name the graph is registered under with the plugin (activity names are ``replangraph.<node>``)."""
GRAPH_KEY = "replangraph_graph"
"""The node metadata key that names the registry entry `run_node` reads (the plugin keeps non-option keys)."""

HEARTBEAT_S = 2.0
"""How often a running activity tells the server it is alive (the plugin sends no heartbeats itself)."""
HEARTBEAT_TIMEOUT = timedelta(seconds=10)
"""A worker silent this long is taken for dead: its activities in flight start again on another worker."""
NON_RETRYABLE = (
    # Bugs and refusals fail at once: trying again gives the same error (the class names Temporal matches).
    *("TypeError", "ValueError", "KeyError", "AttributeError", "IndexError", "NameError", "AssertionError"),
    *("NotImplementedError", "RecursionError", "ContextOverflowError", "ModelServerDown", "StepTimeout"),
)
RETRY_POLICY = RetryPolicy(
    maximum_attempts=3,  # Temporal's default retries without end: a bug would never end the run
    initial_interval=timedelta(milliseconds=200),
    non_retryable_error_types=list(NON_RETRYABLE),
)
NODE_ACTIVITY = {
    "execute_in": "activity",
    # A node's own limits (step_timeout_s, the model client's timeout) end a slow step first; this bounds a
    # stuck one. A dead worker is found by its missing heartbeats, much sooner.
    "start_to_close_timeout": timedelta(minutes=30),
    "heartbeat_timeout": HEARTBEAT_TIMEOUT,
    "retry_policy": RETRY_POLICY,
}
IN_WORKFLOW = {"execute_in": "workflow"}
# The nodes that pause the run (``interrupt()``, `pauses_run`) run in the workflow: a node in an activity loses
# what ``interrupt()`` records of the answers it used (the plugin gives activities no ``__pregel_send``), so a
# node that pauses twice in one run (the plan review after an invalid edit) would start over on the second answer.

_tool_runners: dict[str, Any] = {}
"""graph name -> its tools node's `ToolRunner`: what a tool call's activity rebuilds its job from."""
_node_objects: dict[str, dict[str, tuple[Any, Any]]] = {}
"""graph name -> node name -> (the object behind the node, what meters its replies): what a node call's activity
calls (`replangraph.node_calls`)."""
_defaults: dict[str, dict[str, Any]] = {}
"""graph name -> the run config `build_graph` compiled in (`run_defaults`): the workflow starts from it."""
_nodes: dict[str, dict[str, tuple[Any, Any]]] = {}
"""graph name -> node name -> (the node as `build_graph` made it, its error handler or None): this worker's."""


async def run_node(state: Any, config: RunnableConfig) -> Any:
    """Every activity node's body: the node `build_graph` made, found by name in this worker's registry. An
    exception the node's error handler takes is handled here, inside the activity, as in-process (the plugin
    would not pass the handler its error); a node without one fails the activity, which Temporal retries.
    A pause (``interrupt()``) goes on to the plugin, which hands it to the workflow. The events the node writes
    are keyed by this activity (`replangraph.temporal.events`), so a reader drops those a retry writes again."""
    metadata = config.get("metadata") or {}
    name = metadata["langgraph_node"]
    node, handler = _nodes[metadata.get(GRAPH_KEY, GRAPH)][name]
    prefix = activity_key() if activity.in_activity() else None
    loop = asyncio.get_running_loop()
    try:
        with keyed_events(prefix, loop):
            try:
                async with heartbeating():
                    return await off_the_loop(node, state)
            except Exception as error:  # noqa: BLE001 - what LangGraph's error handler would get
                if handler is None or isinstance(error, GraphBubbleUp):  # a pause is not an error
                    raise
                return handler(state, NodeError(node=name, error=error))
    finally:
        await handed_over(loop)  # the events written from threads are published before the activity ends


NODE_THREADS = ThreadPoolExecutor(max_workers=100, thread_name_prefix="replangraph-node")
"""Where activity nodes run: as many threads as a worker runs activities at once (Temporal's default, 100), so
that model turns in flight are not capped by asyncio's default pool (cores + 4)."""


async def off_the_loop(node: Any, state: Any) -> Any:
    """``node`` on ``state`` by its sync path, on a thread of `NODE_THREADS` (with this context: the run's config):
    the activity's event loop stays free to send heartbeats, however long the node computes. A node without a
    sync path is awaited here."""
    if getattr(node, "func", None) is None:
        return await node.ainvoke(state)
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(NODE_THREADS, context.run, node.invoke, state)


def activity_key() -> str:
    """This activity's name across its attempts and the run's continuations: ``<workflow run id>/<activity id>``
    (activity ids start again from 1 in each run of a workflow that continued as new)."""
    info = activity.info()
    return f"{info.workflow_run_id}/{info.activity_id}"


async def handed_over(loop: asyncio.AbstractEventLoop) -> None:
    """Once ``loop`` has run the callbacks queued before this call (it runs them in order)."""
    done = loop.create_future()
    loop.call_soon(done.set_result, None)
    await done


def in_workflow_node(runnable: RunnableCallable) -> RunnableCallable:
    """A node for the workflow, where no thread may run: its own async path (``acall``, the tools node's), or
    else its sync path called on the workflow's loop (a node that only computes: `build_graph` would run it in
    a thread pool under ``ainvoke``). Its events go out through `keyed_events`, without a key (a workflow-side
    node publishes each once)."""
    node = node_behind(runnable)
    if runnable.func is not None and node is not None and getattr(node, "acall", None) is None:
        sync = runnable.func
        accepts = RunnableCallable(sync).func_accepts

        async def run(*args: Any, **kwargs: Any) -> Any:
            with keyed_events(None):
                return sync(*args, **kwargs)

    else:
        afunc = runnable.afunc
        accepts = RunnableCallable(None, afunc).func_accepts

        async def run(*args: Any, **kwargs: Any) -> Any:
            with keyed_events(None):
                return await afunc(*args, **kwargs)

    placed = RunnableCallable(None, run, name=runnable.name, trace=False)
    placed.func_accepts = accepts  # what LangGraph passes, read from the node's function, not the wrapper
    return placed


@asynccontextmanager
async def heartbeating(every_s: float = HEARTBEAT_S) -> AsyncIterator[None]:
    """Heartbeat every ``every_s`` while the block runs, when it runs in an activity: a worker that dies stops
    beating, and Temporal starts the activity again elsewhere after `HEARTBEAT_TIMEOUT` instead of its whole
    ``start_to_close_timeout``. Nodes run on threads (`off_the_loop`), so the loop stays free to beat."""
    if not activity.in_activity():
        yield
        return

    async def beat() -> None:
        while True:  # the first beat after ``every_s``: an activity quicker than that sends none
            await asyncio.sleep(every_s)
            activity.heartbeat()

    beater = asyncio.create_task(beat())
    try:
        yield
    finally:
        beater.cancel()


def handler_from_config(handler: Any) -> Any:
    """An error handler node for the workflow: the plugin passes ``config`` but not ``error``, so read the
    error LangGraph put in the config (an ``ActivityError`` once the activity's retries are spent)."""

    def handle(state: Any, config: RunnableConfig) -> Any:
        return handler(state, config["configurable"][CONFIG_KEY_NODE_ERROR])

    return RunnableCallable(handle, name=getattr(handler, "__name__", "error_handler"), trace=False)


def pausing(builder: StateGraph) -> None:
    """Make each activity node of ``builder`` (once the plugin made it one) raise `ModelServerDown` in the workflow
    when its activity failed with it: as in-process, the run pauses on the node itself (a LangGraph bubble-up, which
    no error handler takes), and ``None`` as input later runs again only the nodes that had not finished."""
    for spec in builder.nodes.values():
        afunc = getattr(spec.runnable, "afunc", None)
        if afunc is None or (spec.metadata or {}).get(GRAPH_KEY) is None:
            continue
        spec.runnable.afunc = paused_on_down(afunc)


def paused_on_down(afunc: Any) -> Any:
    @functools.wraps(afunc)
    async def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return await afunc(*args, **kwargs)
        except Exception as error:
            down = failure_of(error, ModelServerDown.__name__)
            if down is None:
                raise
            words = getattr(down, "message", None) or str(down)
            raise ModelServerDown(ConnectionError(words), words) from None

    return run


def failure_of(error: Any, type_name: str) -> BaseException | None:
    """The failure named ``type_name`` (an ``ApplicationError``'s type, as an activity's exception crosses) in
    ``error``'s chain of causes (a node's error wraps the activity's, which wraps the node's own), or None."""
    if not isinstance(error, BaseException):  # LangGraph's NodeError holds the node's exception
        error = getattr(error, "error", None)
    seen: set[int] = set()
    while isinstance(error, BaseException) and id(error) not in seen:
        seen.add(id(error))
        if getattr(error, "type", None) == type_name or type(error).__name__ == type_name:
            return error
        causes = (getattr(error, "error", None), getattr(error, "cause", None), error.__cause__)
        error = next((c for c in causes if isinstance(c, BaseException)), None)
    return None


def async_router(path: Any) -> Any:
    """A conditional edge's router whose async path calls the sync one on the workflow's loop (LangGraph's own
    async path for a sync router is ``run_in_executor``, which the workflow's event loop refuses)."""
    if not isinstance(path, RunnableCallable) or path.func is None or inspect.iscoroutinefunction(path.func):
        return path
    func = path.func

    async def arun(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    twin = RunnableCallable(func, arun, name=path.name, trace=path.trace, recurse=path.recurse)
    twin.func_accepts = path.func_accepts
    return twin


def temporal_builder(compiled: Any, name: str = GRAPH, in_workflow: tuple[str, ...] = ()) -> StateGraph:
    """The ``StateGraph`` of ``compiled`` (what `build_graph` returns), made fit for the plugin, and this
    process's registry filled with its nodes. Call it on every worker (and the client, which only needs the
    graph's name): the builder's nodes are changed in place, so don't run ``compiled`` in-process after.
    ``in_workflow``: nodes that run in the workflow itself (the tools node, so that each call it starts is an
    activity of its own: `calls_as_activities`), besides those that pause (`pauses_run`)."""
    builder: StateGraph = compiled.builder
    handlers = {
        spec.error_handler_node: builder.nodes[spec.error_handler_node].runnable
        for spec in builder.nodes.values()
        if spec.error_handler_node
    }
    registry: dict[str, tuple[Any, Any]] = {}
    _node_objects[name] = {  # before the nodes are replaced below
        node_name: (node_behind(spec.runnable), metering_behind(spec.runnable))
        for node_name, spec in builder.nodes.items()
        if node_behind(spec.runnable) is not None
    }
    resolve_node_calls_with(node_object)
    runner = node_behind(builder.nodes[TOOLS].runnable) if TOOLS in builder.nodes else None
    if runner is not None:  # before the tools node is replaced below
        _tool_runners[name] = runner
        build_jobs_with(job_from_spec)
    for node_name, spec in builder.nodes.items():
        if spec.is_error_handler:
            spec.runnable = handler_from_config(spec.runnable.func)
            spec.metadata = dict(IN_WORKFLOW)
            continue
        if node_name in in_workflow or pauses_run(spec.runnable):
            spec.runnable = in_workflow_node(spec.runnable)
            spec.metadata = {**(spec.metadata or {}), **IN_WORKFLOW, GRAPH_KEY: name}  # its tasks find their graph
            continue
        handler = handlers.get(spec.error_handler_node)
        registry[node_name] = (spec.runnable, None if handler is None else handler.func)
        spec.runnable = RunnableCallable(None, run_node, name=node_name, trace=False)
        summary = {"summary_fn": node_summary(node_name)}
        spec.metadata = {**(spec.metadata or {}), **NODE_ACTIVITY, **summary, GRAPH_KEY: name}
    for branches in builder.branches.values():
        for key, branch in branches.items():
            branches[key] = branch._replace(path=async_router(branch.path))
    _nodes[name] = registry
    _defaults[name] = run_defaults(compiled)
    return builder


def effect_nodes(compiled: Any) -> tuple[str, ...]:
    """The nodes of ``compiled`` whose calls with effects are tasks of their own (`effects_in_tasks`: the tools
    node, the completion check): they run in the workflow, each of their tasks an activity (`calls_as_activities`),
    so that what crosses to a worker is one call's input, not the state."""
    return tuple(name for name, spec in compiled.builder.nodes.items() if effects_in_tasks(spec.runnable))


def node_object(call: NodeCall) -> tuple[Any, Any]:
    """The object a node call's activity calls, and what meters its replies, from this worker's build of the graph
    the call's run belongs to (the calling node's metadata names it)."""
    metadata = get_config().get("metadata") or {}
    found = _node_objects.get(metadata.get(GRAPH_KEY, GRAPH), {}).get(call.node)
    if found is None:
        raise KeyError(f"this worker's graph {metadata.get(GRAPH_KEY, GRAPH)!r} has no node {call.node!r}")
    return found


def defaults_for(name: str) -> dict[str, Any]:
    """The run config the graph registered as ``name`` in this worker was compiled with (`run_defaults`)."""
    return dict(_defaults.get(name, {}))


def job_from_spec(spec: CallSpec, asynchronous: bool) -> CallJob:
    """A tool call's job, rebuilt in this worker from the `ToolRunner` of its graph (a `CallSpec` does not name
    its graph: a worker that registers several graphs must find the agent type in one of them)."""
    for runner in _tool_runners.values():
        if spec.agent_type in runner.profiles:
            job = runner.job_from_spec(spec, asynchronous)
            if asynchronous:  # the workflow starts calls on its async path only (`astart_calls`)
                job.chain = beating(job.chain)
            return job
    raise KeyError(f"no graph in this worker has the agent type {spec.agent_type!r}")


def beating(chain: Any) -> Any:
    """``chain`` (an async tool call's), heartbeating while it runs."""

    async def run(request: Any) -> Any:
        async with heartbeating():
            return await chain(request)

    return run


def calls_as_activities() -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """The plugin's ``tasks`` and ``activity_options`` that make each call to an agent's own tool (the
    ``tool_call`` task the tools node starts, `replangraph.nodes.execution.calls`) an activity of its own.
    It needs the tools node in the workflow (a task started inside an activity finds no ``__pregel_call``).
    Beware: the plugin replaces the tasks' ``func`` in this process, for in-process runs too."""
    options = {**NODE_ACTIVITY, "summary_fn": call_summary}
    checks = {**NODE_ACTIVITY, "summary_fn": node_call_summary}
    tasks = [run_call, arun_call, run_node_call, arun_node_call]
    return tasks, {CALL_TASK: options, NODE_CALL_TASK: checks}  # the plugin keys options by task name


SUMMARY_CHARS = 200
"""The longest summary an activity carries (what Temporal's Web UI shows for it)."""


def node_summary(node: str) -> Any:
    """The summary of ``node``'s activities: the node, and for one that works on one subtask (its input is the
    subtask's, not the graph's state), the subtask's id and instructions."""

    def summary(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        given = args[0] if args else None
        task = given.get("task") if isinstance(given, dict) and "task_id" in given else None
        if not isinstance(task, dict):
            return node
        return clipped(f"{node} · subtask {given['task_id']}: {task.get('content', '')}")

    return summary


def call_summary(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The summary of a tool call's activity: the tool and its subtask."""
    job = args[0] if args else None
    call = getattr(job, "call", None) or {}
    return clipped(f"tool {call.get('name', '?')} · subtask {getattr(job, 'task_id', '?')}")


def node_call_summary(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The summary of a node call's activity: the node, and the subtask it is about when its arguments hold one."""
    call = args[0] if args else None
    subtask = next((a for a in getattr(call, "args", ()) if isinstance(a, dict) and "id" in a), None)
    about = f" · subtask {subtask['id']}: {subtask.get('content', '')}" if subtask else ""
    return clipped(f"{getattr(call, 'node', '?')} {getattr(call, 'method', '')}{about}")


def clipped(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def run_defaults(compiled: Any) -> dict[str, Any]:
    """The config `build_graph` compiled in (recursion limit, concurrency), which the uncompiled builder loses."""
    config = getattr(compiled, "config", None) or {}
    return {k: config[k] for k in ("recursion_limit", "max_concurrency") if k in config}
