"""A node's model call as a LangGraph task of its own, so that the node's own code only computes over the state.

The completion check reads the whole queue to place the follow-ups it queues, but each of its model calls needs
only one subtask and its answer. Made a task (`call_results`), such a call runs as any LangGraph task does: in the
node's run, its result saved when it returns (a run resumed after a crash does not make it again). A host that
runs the graph's nodes itself (`replangraph.hosting`) can then run the node where the state is and only the task
elsewhere: what crosses is the call's arguments (plain data), bounded by the call, not by the run.

A task's body calls ``node.<method>(*args)``; the async path calls ``node.a<method>`` (`NodeCall`). The events the
call emits and what the features' reply hooks write for its replies come back with its result, so the node
announces and meters them as if it had made the call itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.config import get_config
from langgraph.func import task

from replangraph.events import caught_events, emit
from replangraph.langgraph_private import CONFIG_KEY_CALL
from replangraph.llm.replies import Metered, meter_open, metered, note_writes

NODE_CALL_TASK = "node_call"
"""The name of a node call's task (in traces, streams and the checkpointer's writes)."""


@dataclass
class NodeCall:
    """``node``'s ``method`` called on ``args``: the graph node by name, the method of the object behind it, and
    its arguments as plain data (what crosses to another process). ``target`` is that object in this process
    (it never crosses: a host finds the object in its own build of the graph, `resolve_node_calls_with`)."""

    node: str
    method: str
    args: tuple
    target: Any = field(default=None, repr=False, compare=False)


Resolver = Callable[[NodeCall], tuple[Any, Metered | None]]
_resolver: Resolver | None = None


def resolve_node_calls_with(resolver: Resolver | None) -> None:
    """Set how this process finds the object a `NodeCall` that came without one calls, and the reply hooks that
    meter it: a host's, from its own build of the graph (`replangraph.temporal.registry`)."""
    global _resolver
    _resolver = resolver


def in_run() -> bool:
    """Whether the caller runs inside a LangGraph task that can start tasks (a node called alone cannot)."""
    try:
        return CONFIG_KEY_CALL in get_config().get("configurable", {})
    except RuntimeError:
        return False


def _target(call: NodeCall) -> tuple[Any, Metered | None]:
    if call.target is not None:
        return call.target, None
    if _resolver is None:
        raise RuntimeError(
            f"a call of node {call.node!r} arrived without it, and this process has no graph to find it in"
        )
    return _resolver(call)


@contextlib.contextmanager
def _metered_here(metering: Metered | None) -> Iterator[dict[str, Any]]:
    """Where the call's reply hooks write: the caller's meter in the caller's process (nothing to carry back),
    else a meter of this process's hooks, whose writes go back with the result."""
    carried: dict[str, Any] = {}
    if metering is None or meter_open():
        yield carried
        return
    with metered(metering.hooks, metering.combine) as meter:
        yield carried
    carried.update(meter.writes)


@task(name=NODE_CALL_TASK)
def run_node_call(call: NodeCall) -> dict[str, Any]:
    """``{"value": what the call returned, "events": what it emitted, "writes": its replies' metered writes}``."""
    target, metering = _target(call)
    with caught_events() as events, _metered_here(metering) as writes:
        value = getattr(target, call.method)(*call.args)
    return {"value": value, "events": events, "writes": writes}


@task(
    name=NODE_CALL_TASK
)  # the same name: a run killed under ``invoke`` and resumed under ``ainvoke`` finds its results
async def arun_node_call(call: NodeCall) -> dict[str, Any]:
    """`run_node_call` on the async path: ``node.a<method>`` awaited."""
    target, metering = _target(call)
    with caught_events() as events, _metered_here(metering) as writes:
        value = await getattr(target, "a" + call.method)(*call.args)
    return {"value": value, "events": events, "writes": writes}


def _outcome(record: dict[str, Any]) -> Any:
    """A task's value, once the events it caught went out and its metered writes joined the caller's meter."""
    for caught in record.get("events") or ():
        emit(**caught)
    if record.get("writes"):
        note_writes(record["writes"])
    return record.get("value")


def call_results(calls: Sequence[NodeCall]) -> list[Any]:
    """What each of ``calls`` returned, in order; each a task of its own, started in order (LangGraph tells a
    node's tasks apart by the order it starts them in), all running at once within the run's concurrency. Outside
    a run each runs here, one after the other."""
    if not in_run():
        return [_outcome(run_node_call.func(call)) for call in calls]
    futures = [run_node_call(call) for call in calls]
    return [_outcome(future.result()) for future in futures]


async def acall_results(calls: Sequence[NodeCall]) -> list[Any]:
    """`call_results` on the async path."""
    if not in_run():
        return [_outcome(await arun_node_call.func(call)) for call in calls]
    futures = [arun_node_call(call) for call in calls]
    return [_outcome(await future) for future in futures]
