"""Each call to an agent's own tools as a LangGraph task of its own, so its result is saved as soon as it returns.

LangGraph saves a task's writes when the task ends. When the tools node ran every subtask's calls inside its own
task, a crash lost every result of the step, and a resume made all those calls again: for a tool with effects
outside the run (a purchase, an email), the difference that matters. LangGraph's durable-execution guide asks for
side effects to go in tasks (``langgraph.func.task``), which a graph node may call: each call's result is written
to the checkpointer when the call returns, and when the node runs again after a crash LangGraph hands back the
saved results instead of calling again. Only the calls in flight at the crash run twice.

Why tasks started from the tools node rather than a ``Send`` per call (what ``create_agent`` does): a ``Send``
needs a superstep of its own between the model turn and the node that reads the replies, one more checkpoint per
turn, and the node that joins the replies could not tell a turn whose calls are still running from one that had
none. Started from the node, the calls keep the supersteps (and checkpoints) of a turn as they were.

What stays in the tools node, in call order: the replan toolkit, ``read_output``, ``ask_user`` and the wrappers
that look at a reply (refusal guard, output offload, the features'): our own quick code, with no effects outside
the state, so a hand-off still sees what the turn's reads before it returned.

LangGraph tells a node's tasks apart by the order it starts them in, so the node starts them in a fixed order
(the subtasks in the order of the state's windows, each one's calls in the order the model made them) and never
skips one on a timing-dependent condition: a call started after the step's time ran out returns at once, unrun.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.func import task
from langgraph.prebuilt.tool_node import ToolCallRequest

from replangraph.events import caught_events, emit
from replangraph.llm.errors import StepTimeout
from replangraph.llm.time_limits import StepClock
from replangraph.node_calls import in_run
from replangraph.nodes.execution.injection import tool_runtime
from replangraph.queue.tasks import Task

CALL_TASK = "tool_call"
"""The name of a tool call's task (in traces, streams and the checkpointer's writes)."""
NOT_STARTED = "not started"
STOPPED = "stopped"


@dataclass
class CallSpec:
    """A `CallJob` as plain data, for a task that runs in another process (an activity on a Temporal worker):
    the tool, its chain and its clock are rebuilt there from the graph's own `ToolRunner` (`job_from_spec`)."""

    task_id: str
    agent_type: str
    call: dict
    view: dict
    """The subtask's view (`subtask_view`), its messages as LangChain objects."""
    deadline: float | None
    """When the step's time runs out (epoch seconds, `StepClock.deadline`), None without a limit."""


@dataclass
class CallJob:
    """One call to an agent's own tool, ready to run as a task: ``chain`` runs it through the step's deadline,
    the error replies and the user's middleware (`replangraph.nodes.execution.middleware`)."""

    task_id: str
    call: dict
    tool: BaseTool
    state: dict
    """The subtask's view (`subtask_view`): its window as the model saw it when it made the call."""
    tools: Sequence[BaseTool]
    chain: Callable[[ToolCallRequest], Any]
    clock: StepClock
    agent_type: str = ""

    def spec(self) -> CallSpec:
        """What crosses to another process instead of this job (nothing in-process does): its view's queue holds
        the subtask and those it depends on, so that what crosses grows with the subtask, not with the run."""
        return CallSpec(self.task_id, self.agent_type, self.call, crossing_view(self.state), self.clock.deadline())

    def __str__(self) -> str:
        """Short: what a host's code that writes a task's argument as text (Temporal's plugin keys each task by
        its arguments' JSON, ``str`` for objects) gets, rather than the reprs of every tool the job holds."""
        return f"CallJob({self.task_id!r}, {self.call.get('id')!r}, {self.call.get('name')!r}, {id(self)})"

    def no_time_left(self) -> bool:
        left = self.clock.left()
        return left is not None and left <= 0

    @property
    def key(self) -> tuple[str, str]:
        return self.task_id, self.call.get("id") or ""

    def request(self) -> ToolCallRequest:
        """The call's request; its ``ToolRuntime`` is the task's own (its config, store and stream writer)."""
        return ToolCallRequest(
            self.call, self.tool, self.state, tool_runtime(self.state, self.call.get("id"), self.tools)
        )


def crossing_view(view: dict) -> dict:
    """A subtask's view (`subtask_view`) with its queue cut to the subtask, whole, and the subtasks it depends on,
    each as the queue's own fields (`Task`'s): what features add to a subtask stays home. A parent's completion
    verdict lists every follow-up it queued, and each of them depends on it; carried into each of their calls, the
    calls' inputs would grow with the run."""
    tasks = view.get("tasks") or {}
    task_id = view.get("task_id")
    own = tasks.get(task_id) or view.get("task") or {}
    cut = {task_id: tasks[task_id]} if task_id in tasks else {}
    cut.update({k: queue_fields(tasks[k]) for k in own.get("depends_on") or () if k in tasks and k not in cut})
    return {**view, "tasks": cut}


QUEUE_FIELDS = Task.__required_keys__ | Task.__optional_keys__
"""The fields the queue itself defines on a subtask (features add others)."""


def queue_fields(task: Mapping[str, Any]) -> dict[str, Any]:
    """``task`` with the queue's own fields only."""
    return {k: v for k, v in task.items() if k in QUEUE_FIELDS}


JobBuilder = Callable[[CallSpec, bool], CallJob]
_job_builder: JobBuilder | None = None


def build_jobs_with(builder: JobBuilder | None) -> None:
    """Set how this process turns a `CallSpec` back into a `CallJob` (``builder(spec, asynchronous)``): a
    Temporal worker's, from its own graph (`replangraph.temporal.registry`)."""
    global _job_builder
    _job_builder = builder


def job_from_spec(job: CallJob | CallSpec, asynchronous: bool) -> CallJob:
    """``job`` itself, or the job a `CallSpec` describes, rebuilt by this process's builder."""
    if isinstance(job, CallJob):
        return job
    if _job_builder is None:
        raise RuntimeError("a tool call arrived as a CallSpec, and this process has no graph to rebuild it from")
    return _job_builder(job, asynchronous)


@task(name=CALL_TASK)
def run_call(job: CallJob | CallSpec) -> dict[str, Any]:
    """What the call returned (``{"result": ...}``), or ``{"timeout": ...}`` when the step's time ran out first."""
    job = job_from_spec(job, asynchronous=False)
    if job.no_time_left():
        return {"timeout": NOT_STARTED}
    with caught_events() as events:
        try:
            return {"result": job.chain(job.request()), "events": events}
        except StepTimeout:
            return {"timeout": STOPPED, "events": events}


@task(name=CALL_TASK)  # the same name: a run killed under ``invoke`` and resumed under ``ainvoke`` finds its results
async def arun_call(job: CallJob | CallSpec) -> dict[str, Any]:
    """`run_call` on the async path: ``job.chain`` is awaited."""
    job = job_from_spec(job, asynchronous=True)
    if job.no_time_left():
        return {"timeout": NOT_STARTED}
    with caught_events() as events:
        try:
            return {"result": await job.chain(job.request()), "events": events}
        except StepTimeout:
            return {"timeout": STOPPED, "events": events}


def in_flight_bound(max_concurrency: int) -> int:
    """How many calls may run at once: ``max_concurrency`` (subtasks in progress), and two fewer than LangGraph's
    pool (the run config's ``max_concurrency``), which also runs the tools node and writes each call's result:
    a result must never wait behind a call started after it."""
    try:
        pool = get_config().get("max_concurrency")
    except RuntimeError:
        pool = None
    return max(1, min(max_concurrency, pool - 2 if isinstance(pool, int) else max_concurrency))


def start_calls(jobs: Iterable[CallJob], bound: int) -> dict[tuple[str, str], Future]:
    """Start ``jobs`` as tasks, in order, at most ``bound`` running at once; their futures by (task id, call id).
    Outside a run each runs here and then."""
    started: dict[tuple[str, str], Future] = {}
    if not in_run():
        for job in jobs:
            done: Future = Future()
            done.set_result(run_call.func(job))
            started[job.key] = done
        return started
    running: set[Future] = set()
    for job in jobs:
        while len(running) >= bound:
            _, running = wait(running, return_when=FIRST_COMPLETED)
        future = run_call(job)
        started[job.key] = future
        running.add(future)
    return started


async def astart_calls(jobs: Iterable[CallJob], bound: int) -> dict[tuple[str, str], Awaitable]:
    """`start_calls` on the async path."""
    started: dict[tuple[str, str], Awaitable] = {}
    if not in_run():
        for job in jobs:
            done = asyncio.get_running_loop().create_future()
            done.set_result(await arun_call.func(job))
            started[job.key] = done
        return started
    running: set[Any] = set()
    for job in jobs:
        while len(running) >= bound:
            _, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        future = arun_call(job)
        started[job.key] = future
        running.add(future)
    return started


class NotStarted(StepTimeout):
    """A call whose task found no time left in the step: it never ran."""


def outcome(record: Mapping[str, Any]) -> Any:
    """What a call's task returned, as the tools node's chain returns it; StepTimeout when the time ran out. The
    events its tool emitted go out now, held with the subtask's other events (a crashed step announces nothing)."""
    for caught in record.get("events") or ():
        emit(**caught)
    timeout = record.get("timeout")
    if timeout == NOT_STARTED:
        raise NotStarted("no time left")
    if timeout is not None:
        raise StepTimeout("the call did not finish in the step's time")
    return record.get("result")


class SavedCalls:
    """The tools node's wrapper that hands it what a call that ran as its own task returned (`start_calls`);
    other calls go on to ``handler``."""

    def __init__(self, task_id: str, started: Mapping[tuple[str, str], Any]):
        self.task_id, self.started = task_id, started

    def has(self, call: Mapping[str, Any]) -> bool:
        return (self.task_id, call.get("id") or "") in self.started

    def __call__(self, request: ToolCallRequest, handler: Callable) -> Any:
        future = self.started.get((self.task_id, request.tool_call.get("id") or ""))
        return handler(request) if future is None else outcome(future.result())

    async def awrap(self, request: ToolCallRequest, handler: Callable) -> Any:
        future = self.started.get((self.task_id, request.tool_call.get("id") or ""))
        if future is None:
            return await handler(request)
        return outcome(await (asyncio.wrap_future(future) if isinstance(future, Future) else future))
