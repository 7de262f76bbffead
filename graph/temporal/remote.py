"""A run on Temporal, driven as the CLI drives a compiled graph: what ``replangraph run --temporal`` and ``resume
--temporal`` hand to `replangraph.app.session.Session` in place of the graph.

`TemporalRun` has the two methods `Session` and `replangraph.app.console.Output` call: ``stream(inputs, config,
stream_mode=[...])``, which yields ``(mode, chunk)`` pairs, and ``get_state(config)``, which returns a snapshot
read as LangGraph's is (`RunSnapshot`). A ``Command(resume=...)`` given to ``stream`` goes to the run as `answer`,
other input as `send`, ``None`` only follows it; the pairs end when the run pauses for the user or ends. It is
synchronous: the async client runs on this object's own event loop. It needs no graph and builds no plugin.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import convert_to_messages
from langgraph.types import Command, Interrupt
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from replangraph.app.feature_cli import command_in, reply_events
from replangraph.app.session import RunLost, ServerLost
from replangraph.llm.errors import ModelServerDown
from replangraph.queue.tasks import apply_writes
from replangraph.resume import RESUME
from replangraph.state import add_node_calls
from replangraph.temporal.client import (
    TASK_FAILED,
    answer,
    connect,
    failing_task,
    log_offset,
    pending,
    read_stream,
    send,
    start,
    values,
)
from replangraph.temporal.events import INTERRUPT, LEFT_OUT_OF_VIEW, PAUSED, StreamReader
from replangraph.temporal.pauses import Refused
from replangraph.temporal.workflow import TASK_QUEUE, ReplanWorkflow

QUIET_S = 10.0
"""How long a run's stream may stay silent before `TemporalRun` checks that a worker polls its task queue."""
POLLED_S = 70.0
"""A worker that polled a task queue this recently serves it (a poll lasts up to a minute)."""
WORKING = ("working",)
"""`RunSnapshot.next` of a run that works: nothing waits, and it has not ended."""

ENDED_AS = {
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.TERMINATED: "was terminated",
    WorkflowExecutionStatus.CANCELED: "was cancelled",
    WorkflowExecutionStatus.TIMED_OUT: "timed out",
    WorkflowExecutionStatus.CONTINUED_AS_NEW: "continued as a new run",
}
"""How a workflow that did not complete ended, in words."""


class RunNotFound(LookupError):
    """The Temporal server has no run with this thread id."""


@dataclass(frozen=True)
class RunSnapshot:
    """A run's state as ``graph.get_state(config)`` gives it in-process, for what the CLI reads: ``values`` (the
    final state once the run has ended; while it runs, the state as `TemporalRun` shows it), ``interrupts`` (what it
    waits on), ``next`` (`WORKING` while it works with nothing waiting) and ``tasks`` (always empty)."""

    values: dict[str, Any]
    interrupts: tuple[Interrupt, ...] = ()
    next: tuple[str, ...] = ()
    tasks: tuple[Any, ...] = ()


def folded(view: Mapping[str, Any], chunk: Mapping[str, Any]) -> dict[str, Any]:
    """``view`` (a state without `LEFT_OUT_OF_VIEW`'s keys) with one ``updates`` chunk written into it: the queue
    by its own reducer, ``node_calls`` added up, any other key replaced. The workflow's ``values`` at each stop
    replace the whole view, so a feature's key with a reducer of its own is right again there."""
    result = dict(view)
    for node, update in chunk.items():
        if node == INTERRUPT:
            continue
        for one in update if isinstance(update, list | tuple) else [update]:
            if not isinstance(one, Mapping):
                continue
            for key, value in one.items():
                if key in LEFT_OUT_OF_VIEW:
                    continue
                if key == "tasks":
                    result[key] = apply_writes(result.get(key) or {}, [value])
                elif key == "node_calls":
                    result[key] = add_node_calls(result.get(key), value)
                else:
                    result[key] = value
    return result


def as_graph_input(inputs: Any) -> Any:
    """``inputs`` with its messages as LangChain messages (``("user", text)`` pairs do not survive JSON)."""
    if isinstance(inputs, Mapping) and isinstance(inputs.get("messages"), Sequence):
        return {**inputs, "messages": convert_to_messages(inputs["messages"])}
    return inputs


class TemporalRun:
    """The run whose workflow id is ``thread`` on the Temporal server at ``address``, seen as a compiled graph.

    `start` starts it (``context``: the run's `AgentConfig`, over the workers' own settings); `attach` takes up one
    that exists. ``payloads`` and ``codec``: the run's payload store and codec, as its workers have them
    (`replangraph.temporal.connect`).
    Then ``stream`` and ``get_state`` as on a graph. Close it (``with``) to close its event loop."""

    def __init__(
        self,
        address: str,
        thread: str,
        *,
        task_queue: str = TASK_QUEUE,
        context: Any = None,
        payloads: Any = None,
        codec: Any = None,
    ):
        self.thread, self.task_queue, self.context, self.address = thread, task_queue, context, address
        self.runner = asyncio.Runner()
        try:
            self.client = self.runner.run(connect(address, payloads=payloads, codec=codec))
        except BaseException:
            self.runner.close()
            raise
        self.handle = self.client.get_workflow_handle(thread)
        self.reader = StreamReader()  # one for the run: an event seen once is not shown again
        self.offset = 0
        """Where the next `stream` reads the run's log from."""
        self.view: dict[str, Any] = {}
        """The run's state as far as this object has read it (`folded`)."""
        self.paused: str | None = None
        """Why the run taken up (`attach`) was paused (a model server stopped answering): `stream` resumes it."""
        self.note: Any = lambda text: print(text, file=sys.stderr, flush=True)
        """Where a line for people goes (the CLI gives its own)."""

    def __enter__(self) -> TemporalRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.runner.close()

    def call(self, step: Any) -> Any:
        """``step`` (a coroutine) run on this object's loop; the server gone is `ServerLost`, naming it."""
        try:
            return self.runner.run(step)
        except RPCError as error:
            if error.status != RPCStatusCode.UNAVAILABLE:
                raise
            raise ServerLost(f"The Temporal server at {self.address} stopped answering ({error.message}).") from None

    def start(self, inputs: Any) -> None:
        """Start the run on ``inputs`` (the graph's input). When a run with this id works already, the input goes
        to it instead, as a goal given to a thread in-process does (`send`): `Refused` once that run has ended (a
        new goal is a new run; a thread id is not used twice)."""
        self.call(self._start(as_graph_input(inputs)))

    async def _start(self, inputs: Any) -> None:
        try:
            await start(
                self.client,
                inputs,
                id=self.thread,
                task_queue=self.task_queue,
                context=self.context,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            )
        except WorkflowAlreadyStartedError:
            if (await self.handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                raise Refused(f"the run on thread {self.thread} has ended: a new goal starts a new run") from None
            self.offset = await log_offset(self.handle)  # only what the input does is shown
            self.view = await values(self.handle)
            await send(self.handle, inputs)

    def attach(self) -> RunSnapshot:
        """Take up the run as it is now: its snapshot; `stream` then follows it from here on (what it did before is
        in the snapshot's values). `RunNotFound` when the server has no run with this id; `RunLost` when it ended
        without completing."""
        return self.call(self._attach())

    async def _described(self) -> Any:
        """The run's description; `RunNotFound` when the server has no run with this id."""
        try:
            return await self.handle.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise RunNotFound(f"there is no run with thread id {self.thread!r} on this Temporal server") from None
            raise

    async def _attach(self) -> RunSnapshot:
        description = await self._described()
        if description.status == WorkflowExecutionStatus.RUNNING:
            # the offset first: a pause after it is read by `stream`, one before it is in the snapshot
            self.offset = await log_offset(self.handle)
            self.view = await values(self.handle)
            self.paused = await self.handle.query(ReplanWorkflow.paused_for)
        return await self._snapshot()

    def stream(self, inputs: Any, config: Any = None, *, stream_mode: Any = ("updates", "custom"), **_: Any):
        """Give the run ``inputs`` (``Command(resume=...)``: `answer`; the graph's input or text: `send`; ``None``:
        nothing), then its ``(mode, chunk)`` pairs from where the last stream stopped, for the modes asked:
        ``custom`` events, ``updates``, and ``values`` after each update (the state as read so far) and at each
        stop. They end when the run ends, or once it waits for the user (its interrupts are in `get_state`).
        ``config`` is the caller's run config: the run has its own, so it is not used."""
        if isinstance(inputs, Command):
            self.call(answer(self.handle, inputs.resume))
        elif inputs is not None:
            self.call(send(self.handle, as_graph_input(inputs)))
        elif self.paused:  # taken up paused (`attach`): it goes on from where it paused
            self.call(send(self.handle, RESUME))
            self.paused = None
        modes = {stream_mode} if isinstance(stream_mode, str) else set(stream_mode)
        return self._follow(modes, until_answered=is_command(inputs))

    def _follow(self, modes: set[str], until_answered: bool = False) -> Iterator[tuple[str, Any]]:
        """The run's pairs, as `stream` says; with ``until_answered`` (a slash command was sent), they end once it is
        answered, while the run goes on. While nothing comes, whether a worker polls the run's task queue is
        checked every `QUIET_S`, and the first time none does, `note` says so; so it does the first time the run's
        workflow task is failing (`failing_task`)."""
        items = read_stream(self.handle, self.offset, self.reader)
        asked: set[str] = set()  # ids of interrupts read since the graph last stopped
        coming = None  # the next item, awaited on this object's loop across quiet spells
        warned = False
        failing = None  # why the run's workflow task fails, once said
        try:
            while True:
                if coming is None:
                    coming = self.call(started(next_item(items)))
                if not self.call(finished(coming, QUIET_S)):
                    if not warned and not self.call(self._workers_polling()):
                        warned = True
                        self.note(self._no_worker_text())
                    elif not failing and (failing := self.call(failing_task(self.handle))):
                        self.note(self._failing_text(failing))
                    continue
                try:
                    offset, (mode, chunk) = self.call(result_of(coming))
                except StopAsyncIteration:  # the run has ended
                    return
                except RPCError as error:  # the stream's poll is an update: refused while the workflow task fails
                    if TASK_FAILED not in str(error):
                        raise
                    if not failing:
                        failing = self.call(failing_task(self.handle, attempts=1)) or str(error)
                        self.note(self._failing_text(failing))
                    time.sleep(QUIET_S)  # then read on: a worker that can run the run may come
                    items = read_stream(self.handle, self.offset, self.reader)
                    continue
                finally:
                    coming = None
                self.offset = offset + 1
                if mode == "updates":
                    asked.update(i.id for i in chunk.get(INTERRUPT, ()) if isinstance(i, Interrupt))
                    self.view = folded(self.view, chunk)
                    if "updates" in modes:
                        yield mode, chunk
                    if "values" in modes:
                        yield "values", self.view
                elif mode == PAUSED:  # as in-process: the run pauses, and the command says how to resume
                    raise ModelServerDown(ConnectionError(chunk), str(chunk))
                elif mode == "values":
                    self.view = dict(chunk) if isinstance(chunk, Mapping) else self.view
                    if "values" in modes:
                        yield mode, self.view
                    if asked:  # the graph stopped on a pause: does the run still wait on it?
                        waiting = {w["id"] for w in self.call(pending(self.handle))}
                        if asked & waiting:
                            return
                        asked.clear()  # a pause answered since (this stream read it late)
                elif mode in modes:
                    yield mode, chunk
                answered = mode == "custom" and isinstance(chunk, Mapping) and chunk.get("event") in reply_events()
                if until_answered and answered:
                    return
        finally:
            if coming is not None:
                coming.cancel()
            with suppress(Exception):  # a server lost already: nothing to close there
                self.runner.run(items.aclose())

    async def _workers_polling(self) -> bool:
        """Whether a worker polled the run's task queue in the last `POLLED_S` seconds."""
        queue = (await self.handle.describe()).task_queue or self.task_queue
        self.task_queue = queue
        request = DescribeTaskQueueRequest(
            namespace=self.client.namespace,
            task_queue=TaskQueue(name=queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
        found = await self.client.workflow_service.describe_task_queue(request)
        now = time.time()
        return any(now - poller.last_access_time.ToSeconds() < POLLED_S for poller in found.pollers)

    def _no_worker_text(self) -> str:
        return (
            f"No worker polls the task queue {self.task_queue!r} of the Temporal server at {self.address}: the run "
            f"waits until one does (start one with: replangraph worker --temporal {self.address} --task-queue "
            f"{self.task_queue} and the flags that build its graph)."
        )

    def _failing_text(self, why: str) -> str:
        return (
            f"The run's workflow task fails on the workers of task queue {self.task_queue!r}: {why.rstrip('.')}. "
            "The run makes no progress while it fails; the workers' logs say more."
        )

    def kept_values(self) -> dict[str, Any]:
        """The run's whole state, its kept outputs included: now while it runs, its final state once it completed.
        `RunNotFound` without such a run; `RunLost` when it ended without completing."""
        return self.call(self._kept_values())

    async def _kept_values(self) -> dict[str, Any]:
        description = await self._described()
        if description.status == WorkflowExecutionStatus.RUNNING:
            return await self.handle.query(ReplanWorkflow.state)
        return (await self._snapshot()).values

    def get_state(self, config: Any = None) -> RunSnapshot:
        """The run's snapshot now: what it waits on while it runs; its final state once it completed. `RunLost`
        when it ended without completing (failed, terminated, cancelled, timed out)."""
        return self.call(self._snapshot())

    async def _snapshot(self) -> RunSnapshot:
        description = await self.handle.describe()
        if description.status == WorkflowExecutionStatus.RUNNING:
            waiting = await pending(self.handle)
            interrupts = tuple(Interrupt(value=w["value"], id=w["id"]) for w in waiting)
            return RunSnapshot(dict(self.view), interrupts, () if interrupts else WORKING)
        try:
            return RunSnapshot(await self.handle.result())
        except WorkflowFailureError as error:
            ended = ENDED_AS.get(description.status, f"ended as {description.status}")
            cause = error.cause or error
            raise RunLost(
                f"The run on thread {self.thread} {ended} on Temporal ({cause}): it has no final answer."
            ) from None


async def next_item(items: AsyncIterator[Any]) -> Any:
    """The next item of ``items`` (`asyncio.Runner.run` takes a coroutine)."""
    return await anext(items)


async def started(step: Any) -> asyncio.Task:
    """``step`` as a task of the running loop (it goes on between the calls that run this object's loop)."""
    return asyncio.ensure_future(step)


async def finished(task: asyncio.Task, seconds: float) -> bool:
    """Whether ``task`` is done, waiting at most ``seconds`` for it."""
    await asyncio.wait({task}, timeout=seconds)
    return task.done()


async def result_of(task: asyncio.Task) -> Any:
    return await task


def is_command(inputs: Any) -> bool:
    """Whether ``inputs`` is a slash command (``/status``) given as text or as the graph's input."""
    if isinstance(inputs, Mapping):
        messages = inputs.get("messages") or []
        inputs = messages[-1] if messages else None
        if isinstance(inputs, tuple | list) and len(inputs) == 2:
            inputs = inputs[1]
        inputs = getattr(inputs, "content", inputs)
    return isinstance(inputs, str) and command_in(inputs) is not None
