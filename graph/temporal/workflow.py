"""The workflow: one run of the graph, the Pregel loop in the workflow and the nodes as activities.

A run that pauses (a question, the plan's approval: ``interrupt()`` in a node) waits for an answer by the update
`ReplanWorkflow.answer`; the query `ReplanWorkflow.pending` shows what waits. New input (a slash command, a
message) comes by the update `ReplanWorkflow.send` and goes in as the in-process chat path sends it: as new input
through the graph's entry. Input sent while the graph works stops it between steps first (LangGraph's drain: the
steps in flight finish, nothing runs twice); a run the input leaves stopped with work to do goes on with the
graph's ``/resume``, as ``replangraph resume`` does. Each step's ``updates``, every custom event and the state's
view each time the graph stops go to the workflow's stream (`replangraph.temporal.events`); the query
`ReplanWorkflow.values` shows the state's view now.

A long run **continues as new** (a new Temporal run of the same workflow id, with a history of its own) once its
history is long: Temporal suggests it, or it passed the request's ``history_limit`` events. The graph is stopped
between steps as for new input, and the new run starts from the state it reached (`Continuation`) and goes on with
``/resume``, as ``replangraph resume`` takes up a stopped thread; the stream's log goes along, its oldest items cut.
A run stopped with no subtask open (only the check and the final answer left) goes on in the same Temporal run.

Deterministic: no clock, no random ids, no threads here; handlers only queue what the run loop takes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow
from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamState

with workflow.unsafe.imports_passed_through():
    from langchain_core.messages import HumanMessage
    from langgraph.errors import GraphDrained
    from langgraph.runtime import RunControl
    from langgraph.types import Command

    from replangraph.builder import pool_size
    from replangraph.config import AgentConfig
    from replangraph.hosting import RUN_CAN_PAUSE, run_clock, run_random, step_clock
    from replangraph.llm.errors import ModelServerDown
    from replangraph.names import FINALIZE
    from replangraph.resume import RESUME, unfinished
    from replangraph.temporal.events import (
        TOPIC,
        custom_item,
        paused_item,
        state_view,
        updates_item,
        values_item,
    )
    from replangraph.temporal.pauses import Refused, as_input, resume_for, stopped_between_steps, waiting_of, with_ids
    from replangraph.temporal.registry import GRAPH, GRAPH_KEY, defaults_for

CONTINUED_FROM = FINALIZE
"""The node a continuation's state is written as (its only edge goes to the end: nothing is scheduled by it)."""
WORKFLOW = "replangraph"
"""The workflow type's name."""
TASK_QUEUE = "replangraph"
"""The task queue workers serve and runs start on, unless told another."""
STREAM_KEPT = 500
"""Stream items a continuation carries (the latest): a reader further behind goes on from the oldest kept. The
new run reads them in its first workflow task, with the state, within Temporal's 2 s limit on a workflow task's
code (2,000 of them were 5.3 MB at 4,000 subtasks)."""
MANAGED = frozenset({"remaining_steps"})
"""State keys LangGraph manages itself: not carried into a continuation."""


@dataclass
class Continuation:
    """What a run carries into its next Temporal run when it continues as new: the graph's state (``values``), the
    stream's log and where it stood (``stream``), and how many runs came before (``runs``)."""

    values: dict[str, Any]
    stream: WorkflowStreamState | None = None
    runs: int = 1


@dataclass
class RunRequest:
    """What a run starts from: the graph's ``input`` (its messages cross as LangChain messages), the run
    ``config`` (over the defaults `build_graph` compiled in, which the worker's registry holds), the run's
    ``context`` (an `AgentConfig`, or a mapping of its fields) and the graph's registered name.
    ``history_limit``: the history's length, in events, past which the run continues as new (None: once Temporal
    suggests it). ``continuation``: set by the run itself when it continues as new."""

    input: Any
    config: dict[str, Any] = field(default_factory=dict)
    context: Any = None
    graph: str = GRAPH
    history_limit: int | None = None
    continuation: Continuation | None = None


def is_resume(given: Any) -> bool:
    """Whether ``given`` (input taken by `ReplanWorkflow.send`) is the ``/resume`` command alone."""
    messages = given.get("messages") if isinstance(given, dict) else None
    return bool(messages) and len(messages) == 1 and getattr(messages[0], "content", None) == RESUME


def pool_for(context: Any) -> int:
    """LangGraph's pool for a run whose context asks for ``max_concurrency`` (`branch_pool_size`), else 0."""
    asked = context.get("max_concurrency") if isinstance(context, dict) else getattr(context, "max_concurrency", None)
    if isinstance(context, AgentConfig) and "max_concurrency" not in context.model_fields_set:
        asked = None
    return pool_size(asked) if isinstance(asked, int) else 0


class KeepsNothing(dict):
    """A task cache for the plugin's ``graph(name, cache=...)`` that keeps no result, so no task is skipped."""

    def __bool__(self) -> bool:  # the plugin replaces an empty (false) cache with a dict of its own
        return True

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def run_config(config: dict[str, Any], thread_id: str, graph_name: str = GRAPH) -> dict[str, Any]:
    """The run config: the caller's, the workflow id as the thread id, and the metadata that tells nodes in
    activities (which get no checkpointer) that the run can pause (`RUN_CAN_PAUSE`) and the tasks a node starts
    which graph the worker finds their node in (`GRAPH_KEY`)."""
    return {
        **config,
        "configurable": {**(config.get("configurable") or {}), "thread_id": thread_id},
        "metadata": {**(config.get("metadata") or {}), RUN_CAN_PAUSE: True, GRAPH_KEY: graph_name},
    }


@workflow.defn(name=WORKFLOW)
class ReplanWorkflow:
    """One run of the graph: the Pregel loop here, the nodes as activities. Its id is the run's thread id. It ends
    when the graph ends; while it waits for an answer it waits without limit (set an execution timeout)."""

    @workflow.init
    def __init__(self, request: RunRequest) -> None:
        carried = request.continuation.stream if request.continuation else None
        self.stream = WorkflowStream(carried)  # the plugin's stream topic needs it (`replangraph.temporal.events`)
        self.waiting: list[dict[str, Any]] = []
        """The interrupts the run waits on (`waiting_of`); empty while it works."""
        self.answers: dict[str, Any] | None = None
        """An answer taken by `answer`, until the run loop resumes with it."""
        self.inputs: list[dict[str, Any]] = []
        """Input taken by `send`, until the run loop runs it."""
        self.control: RunControl | None = None
        """The drain switch of the graph run in progress (None between runs)."""
        self.ended = False
        """The graph has ended: input is refused from then on (nothing would run it)."""
        self.values: dict[str, Any] = {}
        """The state after the graph's last step (`values` shows its view)."""
        self.paused: str | None = None
        """Why the graph stopped and waits to be told to go on (a model server stopped answering); None if not."""
        self.history_limit = request.history_limit
        self.rolling = False
        """The graph was stopped to continue as new (its history is long)."""
        self.finishing = False
        """The run's history is long but no subtask is open: it ends in this Temporal run."""

    @workflow.run
    async def run(self, request: RunRequest) -> dict[str, Any]:
        with workflow.unsafe.imports_passed_through():
            from langgraph.checkpoint.memory import InMemorySaver
            from temporalio.langgraph import graph

        step_clock.set(workflow.time)  # steps timed in the workflow (the tools node) decide the same on replay
        run_clock.set(workflow.time)  # and so do the rules and hooks that read the run's time (a deadline)
        run_random.set(workflow.random())
        # The plugin's task cache would key every activity by its whole input as JSON and keep every result in
        # the workflow's memory, to skip a task called again with the same input; a run continues as new with
        # its state instead, and every activity runs as it would in-process.
        app = graph(request.graph, cache=KeepsNothing()).compile(checkpointer=InMemorySaver(), name=request.graph)
        # what `build_graph` compiled in (the builder the plugin runs has lost it), then the caller's
        defaults = defaults_for(request.graph)
        config = run_config({**defaults, **request.config}, workflow.info().workflow_id, request.graph)
        pool = pool_for(request.context)
        if pool and "max_concurrency" not in request.config:  # the run's own concurrency, not the workers' compiled
            config["max_concurrency"] = max(config.get("max_concurrency") or 0, pool)
        given: Any = request.input
        values: dict[str, Any] = {}
        if request.continuation is not None:  # the state the last run reached, then on as `replangraph resume` goes
            await app.aupdate_state(config, request.continuation.values, as_node=CONTINUED_FROM)
            given = {"messages": [HumanMessage(RESUME, id=str(workflow.uuid4()))]}
        owed_resume = False  # new input stopped work between steps; the run goes on once the input is answered
        while True:
            values, drained = await self.steps(app, given, config, request.context, values)
            if self.rolling and drained and not self.inputs and self.answers is None:
                self.rolling = False
                if unfinished((await app.aget_state(config)).values):
                    await self.continue_as_new(app, config, request)
                self.finishing = True  # no subtask is open: the last steps (check, final answer) run in this run
                given = None  # on from where the drain stopped it
                continue
            self.rolling = False
            snapshot = await app.aget_state(config)
            self.waiting = waiting_of(snapshot.interrupts)
            self.stream.topic(TOPIC).publish(values_item(values))  # a reader now sees what waits in `pending`
            owed_resume = owed_resume or drained
            if owed_resume and not self.inputs:
                owed_resume = False
                if stopped_between_steps(snapshot):
                    self.inputs.append({"messages": [HumanMessage(RESUME, id=str(workflow.uuid4()))]})
            if not self.inputs and not self.waiting and not self.paused:
                self.ended = True
                break
            await workflow.wait_condition(lambda: self.answers is not None or bool(self.inputs))
            if self.answers is not None:
                given, self.answers = Command(resume=self.answers), None
            else:
                given = self.inputs.pop(0)
                if self.paused and is_resume(given):  # the nodes that had not finished run again, the rest stands
                    given = None
            self.waiting, self.paused = [], None
        self.stream.detach_pollers()  # a subscriber's poll in flight returns; it reads the rest once the run ends
        await workflow.wait_condition(workflow.all_handlers_finished)
        return values

    async def steps(
        self, app: Any, given: Any, config: dict[str, Any], context: Any, values: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """Run the graph on ``given`` until it ends, pauses or is drained for input; each ``updates`` chunk (and a
        custom one that reached this stream) to the stream topic. The last state (``values``, as ``ainvoke``
        returns it) and whether the run was drained."""
        topic = self.stream.topic(TOPIC)
        self.control = RunControl()
        modes = ["updates", "custom", "values"]
        try:
            async for mode, chunk in app.astream(
                given, config, context=context, stream_mode=modes, control=self.control
            ):
                if mode == "values":
                    values = self.values = chunk
                elif mode == "updates":
                    topic.publish(updates_item(chunk))
                    if not self.rolling and not self.finishing and self.history_is_long():
                        self.rolling = True
                        self.control.request_drain("the run's history is long: it continues as new")
                else:
                    topic.publish(custom_item(chunk))
        except GraphDrained:
            return values, True
        except ModelServerDown as down:  # the run pauses until it is told to go on (`RESUME`), as in-process
            self.paused = str(down)
            topic.publish(paused_item(self.paused))
            return values, False
        finally:
            self.control = None
        return values, False

    def history_is_long(self) -> bool:
        """Whether the run should continue as new: Temporal suggests it, or the history passed ``history_limit``."""
        info = workflow.info()
        if self.history_limit is not None and info.get_current_history_length() >= self.history_limit:
            return True
        return info.is_continue_as_new_suggested()

    async def continue_as_new(self, app: Any, config: dict[str, Any], request: RunRequest) -> None:
        """Carry the state the graph reached, and the stream, into a new run of this workflow (does not return)."""
        snapshot = await app.aget_state(config)
        values = {key: value for key, value in snapshot.values.items() if key not in MANAGED}
        self.stream.detach_pollers()  # a reader's poll returns; it follows the next run
        await workflow.wait_condition(workflow.all_handlers_finished)
        stream = self.stream.get_state()
        if len(stream.log) > STREAM_KEPT:
            self.stream.truncate(stream.base_offset + len(stream.log) - STREAM_KEPT)
            stream = self.stream.get_state()
        runs = request.continuation.runs + 1 if request.continuation else 1
        carried = Continuation(values=values, stream=stream, runs=runs)
        workflow.continue_as_new(dataclasses.replace(request, input=None, continuation=carried))

    @workflow.query
    def paused_for(self) -> str | None:
        """Why the run is paused, waiting to be told to go on (`send` ``/resume``); None when it is not."""
        return self.paused

    @workflow.query
    def pending(self) -> list[dict[str, Any]]:
        """The interrupts the run waits on: ``[{"id", "value"}]``, the value as the node asked (``kind``
        ``question`` or ``plan``, with LangChain's HITL request); [] while it works or after it ended."""
        return list(self.waiting)

    @workflow.query
    def values(self) -> dict[str, Any]:
        """The run's state after its last step, as a client shows it (`state_view`: without messages, windows
        and workspace); {} before the first step."""
        return state_view(self.values)

    @workflow.query
    def state(self) -> dict[str, Any]:
        """The run's whole state after its last step, its kept outputs included (what ``replangraph output``
        reads); {} before the first step. Large: it crosses by reference to the payload store."""
        return dict(self.values)

    @workflow.update
    async def answer(self, resume: Any) -> None:
        """Resume the paused run with ``resume``, as ``Command(resume=...)`` in-process: a mapping of interrupt
        id to answer, or one answer when one interrupt waits. Returns once the run took it."""
        self.answers = resume_for(resume, self.waiting)
        await workflow.wait_condition(lambda: self.answers is None)

    @answer.validator
    def check_answer(self, resume: Any) -> None:
        """Refused (`Refused`) when nothing waits, an answer is already on its way, or the ids do not wait."""
        if self.answers is not None:
            raise Refused("an answer is already on its way to the run")
        resume_for(resume, self.waiting)

    @workflow.update
    async def send(self, input: Any) -> None:
        """New input, as the chat path sends it (`as_input`): a slash command (``/status``, ``/cancel``...), or a
        message (it answers what waits, else it is a new goal). While the graph works, it is stopped between
        steps first. Returns once queued."""
        self.inputs.append(with_ids(as_input(input), lambda: str(workflow.uuid4())))
        if self.control is not None:
            self.control.request_drain("input sent to the run")

    @send.validator
    def check_send(self, input: Any) -> None:
        """Refused (`Refused`) once the graph has ended, and for input that is neither text nor the graph's input."""
        if self.ended:
            raise Refused("the run has ended: a new goal starts a new run")
        as_input(input)
