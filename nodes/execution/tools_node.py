"""The tools node (`ToolRunner`): the pending tool calls of every subtask in progress, each an agent's own tool
call run as a task of its own (`replangraph.nodes.execution.calls`), then the router picks what's next. It is
also the join point of parallel executor branches: however many subtasks took a model turn in the last step,
this node runs once. Its calls go through the tool-call chain of `replangraph.nodes.execution.middleware`."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command

from replangraph.config import AgentConfig, AgentProfile
from replangraph.context.carried import known_reads, made_calls, made_progress, own_part
from replangraph.context.fitting import cut_answered_args, output_id, unique_key
from replangraph.context.outcomes import (
    combined_ending,
    completed_with_window,
    earlier_reads,
    failed_with_window,
    merge_updates,
    window_reads,
    with_read_digests,
)
from replangraph.context.results import full_result, keep_outputs
from replangraph.context.window_outputs import drop_old_observations, is_taken, marked_outputs, window_outputs
from replangraph.context.workspace import collect_writes
from replangraph.events import held_events
from replangraph.llm.aio import arun_steps
from replangraph.llm.calls import guarded_steps, run_steps
from replangraph.llm.errors import StepTimeout
from replangraph.llm.reading import (
    answer_text,
    ends_with_answer,
    message_text,
    pending_tool_calls,
)
from replangraph.llm.time_limits import StepClock
from replangraph.names import ASK_USER, READ_OUTPUT, TOOLKIT_NAMES
from replangraph.nodes.execution.calls import (
    CallJob,
    CallSpec,
    NotStarted,
    SavedCalls,
    astart_calls,
    in_flight_bound,
    start_calls,
)
from replangraph.nodes.execution.continuing import stopped_at_limit
from replangraph.nodes.execution.endings import (  # rare ends of a turn; a turn that goes well runs none of them
    NOT_ASKED,
    TURN_KEPT,
    no_reply,
    not_run,
    repeated_refusal,
    turn_record,
    unfinished,
    with_more_result,
)
from replangraph.nodes.execution.executor import Steps
from replangraph.nodes.execution.injection import subtask_view, tool_runtime
from replangraph.nodes.execution.middleware import ToolCallRequest, ToolWrapper, achain_tool_calls, chain_tool_calls
from replangraph.nodes.execution.model_wrappers import StepDeadline
from replangraph.nodes.execution.tool_returns import command_reply, ends_subtask
from replangraph.nodes.execution.tool_wrappers import (
    OutputOffload,
    RefusalGuard,
    ToolkitInline,
    ainvoke_tool,
    errors_as_replies,
    invoke_tool,
)
from replangraph.policy import DEFAULT_POLICY, TextPolicy
from replangraph.queue.tasks import Task, is_follow_up
from replangraph.run_config import Configured
from replangraph.state import StateUpdate
from replangraph.tools.read_output import subtask_reader
from replangraph.tools.replan_toolkit.toolkit import (
    ReplanSession,
    replan_toolkit,
    turn_failures,
    turn_outputs,
)

Work = tuple[str, list, Mapping[str, Task], str]
"""A subtask with tool calls to run: its id, its window, the queue, the goal."""


def is_repeated_refusal(window: Sequence[AnyMessage], reply: ToolMessage) -> bool:
    """Whether ``reply`` refuses a toolkit or ask_user call exactly as an earlier reply in the window did."""
    if reply.status != "error" or reply.name not in (*TOOLKIT_NAMES, ASK_USER):
        return False
    text = message_text(reply)
    return any(
        isinstance(m, ToolMessage) and m.status == "error" and m.name == reply.name and message_text(m) == text
        for m in window
    )


class ToolRunner(Configured):
    """Executes tool calls with the subtask's tools plus its own replan toolkit."""

    effects_in_tasks = True
    """Each call to an agent's own tool is a task of its own (`replangraph.nodes.execution.calls`); what runs in
    the node itself (the replan toolkit, ``read_output``, the wrappers) only reads and writes the state."""

    def __init__(
        self,
        profiles: Mapping[str, AgentProfile],
        config: AgentConfig,
        feature_types: Sequence[str] = (),
        *,
        feature_wrappers: Sequence[ToolWrapper] = (),
        middleware: Sequence[ToolWrapper] = (),
        answer_takers: Sequence[Callable[[AgentConfig], bool]] = (),
        stops: Sequence[Callable[[Mapping[str, Any], AgentConfig], Any]] = (),
        policy: TextPolicy = DEFAULT_POLICY,
    ):
        """``feature_wrappers``: the features' wrappers (ask_user's screening); ``middleware``: the user's
        ``wrap_tool_call`` hooks (see `chain`); ``answer_takers``: whether a feature's node ends an answered
        subtask (`replangraph.features.Feature.takes_answers`); ``stops``: the features' stop hooks (a stop
        that skips running subtasks runs none of their calls); ``policy``: the text heuristics a hand-off's
        follow-ups go through (`replangraph.policy`)."""
        self.policy = policy
        self.answer_takers = list(answer_takers)
        self.stops = list(stops)
        self.profiles = profiles
        self.agent_types = [*profiles, *feature_types]
        """What a hand-off may assign: the agent types and those features added (a team)."""
        self.base_config = config
        self.feature_wrappers = list(feature_wrappers)
        self.middleware = list(middleware)

    def wrappers(
        self, clock: StepClock, guard: RefusalGuard, offload: OutputOffload, inline: ToolkitInline, saved: SavedCalls
    ) -> list[ToolWrapper]:
        """The tool call's wrappers, outermost first (why this order: `replangraph.nodes.execution.middleware`):
        refusal guard, output offload, features, toolkit inline, the calls that ran as tasks (`SavedCalls`), then
        `call_wrappers`."""
        return [guard, offload, *self.feature_wrappers, inline, saved, *self.call_wrappers(clock)]

    def call_wrappers(self, clock: StepClock) -> list[ToolWrapper]:
        """The wrappers around the tool itself, also in a call's own task: step deadline, errors as replies, user
        middleware."""
        return [StepDeadline(clock), errors_as_replies, *self.middleware]

    def chain(
        self, clock: StepClock, guard: RefusalGuard, offload: OutputOffload, known: list[str], saved: SavedCalls
    ) -> Any:
        """The tool call wrapped in `wrappers`."""
        call = invoke_tool(lambda: known)
        inline = ToolkitInline(chain_tool_calls([errors_as_replies], call))
        return chain_tool_calls(self.wrappers(clock, guard, offload, inline, saved), call)

    def achain(
        self, clock: StepClock, guard: RefusalGuard, offload: OutputOffload, known: list[str], saved: SavedCalls
    ) -> Any:
        """`chain` on the async path: tools awaited (`ainvoke_tool`); the toolkit still runs inline."""
        inline = ToolkitInline(chain_tool_calls([errors_as_replies], invoke_tool(lambda: known)))
        call = ainvoke_tool(lambda: known, self.config.max_concurrency)
        return achain_tool_calls(self.wrappers(clock, guard, offload, inline, saved), call)

    def call_jobs(self, work: Sequence[Work], clocks: Mapping[str, StepClock], asynchronous: bool) -> list[CallJob]:
        """The calls to the agents' own tools in ``work``, each to run as a task of its own (`start_calls`), in a
        fixed order: the subtasks in ``work``'s order, each one's calls in the order the model made them."""
        jobs = []
        for task_id, window, tasks, goal in work:
            own = {t.name: t for t in self.profiles[tasks[task_id]["agent_type"]].tools}
            calls = [
                call
                for call in pending_tool_calls(window)
                if call.get("name") in own and call.get("type") != "invalid_tool_call"
            ]
            if not calls or ends_with_answer(window):
                continue
            agent_type, clock = tasks[task_id]["agent_type"], clocks[task_id]
            chain = self.call_chain(own, clock, asynchronous)
            view = subtask_view(task_id, window, tasks, goal)
            jobs += [
                CallJob(task_id, call, own[call["name"]], view, list(own.values()), chain, clock, agent_type)
                for call in calls
            ]
        return jobs

    def call_chain(self, own: Mapping[str, BaseTool], clock: StepClock, asynchronous: bool) -> Any:
        """A call to one of ``own`` (an agent's tools by name) wrapped in `call_wrappers`."""
        known = functools.partial(list, own)
        if asynchronous:
            return achain_tool_calls(self.call_wrappers(clock), ainvoke_tool(known, self.config.max_concurrency))
        return chain_tool_calls(self.call_wrappers(clock), invoke_tool(known))

    def job_from_spec(self, spec: CallSpec, asynchronous: bool) -> CallJob:
        """The job a `CallSpec` describes, rebuilt from this runner's agents: in another process (a Temporal
        worker's activity), with the step's deadline as its clock."""
        own = {t.name: t for t in self.profiles[spec.agent_type].tools}
        clock = StepClock.until(spec.deadline)
        chain = self.call_chain(own, clock, asynchronous)
        tool = own[spec.call["name"]]
        return CallJob(spec.task_id, spec.call, tool, spec.view, list(own.values()), chain, clock, spec.agent_type)

    def run_subtask_tools(self, work: Work, clock: StepClock, started: Mapping[tuple[str, str], Any]) -> StateUpdate:
        """The state update after one subtask's pending tool calls (their time counts as the step's); the calls
        in ``started`` ran as tasks of their own."""
        return run_steps(self.subtask_steps(work, self.chain, clock, started))

    async def arun_subtask_tools(
        self, work: Work, clock: StepClock, started: Mapping[tuple[str, str], Any]
    ) -> StateUpdate:
        """`run_subtask_tools` on the async path: the tools are awaited (`ainvoke_tool`)."""
        return await arun_steps(self.subtask_steps(work, self.achain, clock, started))

    def subtask_steps(
        self, work: Work, chain: Callable, clock: StepClock, started: Mapping[tuple[str, str], Any]
    ) -> Steps:
        """The state update after one subtask's pending tool calls through ``chain`` (`Steps`).

        A crash in this subtask's step fails this subtask only, and the events its tools
        emitted before the crash never go out (the update that carried them is lost).
        """
        task_id, window, tasks, goal = work
        task = tasks[task_id]
        if ends_with_answer(window):  # the check is off: the answer is the result (what was read comes along)
            return completed_with_window(task, window, answer_text(window[-1]), task.get("model_calls", 0))
        saved = SavedCalls(task_id, started)
        replies: list[ToolMessage] = []  # filled as calls return, so a crash keeps what they brought
        cut: dict[str, str] = {}  # the whole texts of the replies it cuts: kept even if the step then crashes

        def run() -> Steps:
            with held_events():
                return (yield from self.run_calls(task_id, window, tasks, goal, clock, replies, cut, chain, saved))

        def crashed(exc: Exception) -> StateUpdate:  # a bug in one subtask's step must not take its siblings down
            error = f"tools crashed: {type(exc).__name__}: {exc}"
            return failed_with_window(task, [*window, *replies], error, task.get("model_calls", 0))

        update = yield from guarded_steps(run(), crashed)
        update = merge_updates([keep_outputs(task, cut), update])  # what it cut, kept even after a crash
        own = update.setdefault("tasks", {}).setdefault(task_id, {})
        if own is not None:
            own["elapsed_s"] = round(clock.elapsed(), 6)
        return update

    def run_calls(
        self,
        task_id: str,
        window: Sequence[AnyMessage],
        tasks: Mapping[str, Task],
        goal: str,
        clock: StepClock,
        replies: list[ToolMessage],
        cut: dict[str, str],
        chain: Callable,
        saved: SavedCalls,
    ) -> Steps:
        """The state update after running one subtask's pending tool calls through ``chain`` (`Steps`; their
        replies go to ``replies``, the whole texts of the replies it cuts to ``cut``, by key).

        Every call of the turn runs, also those before or after a call that ends the subtask (a hand-off,
        a replan request): their outputs follow the hand-off's summary in the result (`turn_outputs`),
        what failed is told to the replanner, and a question is not asked (the answer would reach no one).
        Once the step's time is out only the toolkit still runs. Several calls that end the subtask
        become one ending (`combined_ending`): a hand-off wins, the others add their reasons."""
        task = tasks[task_id]
        parent = tasks.get(task.get("parent_id") or "")

        def new_data(
            summary: str,
        ) -> bool:  # a hand-off's data and calls, with what its agent read, against its parent's
            reads = window_reads(task, [*window, *replies])
            text = "\n".join([summary, *(r.text for r in reads)])
            if not is_follow_up(task):
                return True
            before = full_result(parent) if parent is not None else None
            return made_progress(text, reads, parent, before, known_reads(tasks, task_id))

        session = ReplanSession(
            task_id,
            tasks,
            self.agent_types,
            self.config,
            goal=goal,
            progress=made_calls(own_part(task_id, window)),
            new_data=new_data,
            policy=self.policy,
        )
        answered = [t for w in self.feature_wrappers for t in getattr(w, "answered_tools", list)()]
        tools = [*self.profiles[task["agent_type"]].tools, *replan_toolkit(session), *answered]
        if any(call.get("name") == READ_OUTPUT for call in pending_tool_calls(window)):
            tools.append(subtask_reader(tasks, goal, task_id, self.config.max_observation_chars))  # built when called
        toolbox = {t.name: t for t in tools}
        calls = task.get("model_calls", 0)
        changes: list[dict] = []  # what the tools returned for the state, in call order
        endings: list[dict] = []  # the updates of calls that ended the subtask, in call order
        waiting: list[dict] = []  # ask_user calls the ask node would put to the user
        timeout: str | None = None
        timed_out: set[str] = set()  # the call the step's deadline stopped (its id)
        saved_before = is_taken(task)

        def taken(key: str) -> bool:
            return key in cut or saved_before(key)

        guard = RefusalGuard(is_repeated_refusal)
        offload = OutputOffload(task, self.config.max_observation_chars, taken, cut)
        run = chain(clock, guard, offload, list(toolbox), saved)
        turn = pending_tool_calls(window)
        # Every call runs, whatever ends the subtask: a hand-off's other calls reach its result.
        for call in turn:
            name = call.get("name", "")
            # the toolkit runs inline, past the deadline; a call that ran as a task keeps what it returned
            if timeout is not None and name not in TOOLKIT_NAMES and not saved.has(call):
                replies.append(not_run(call, f"the step had no time left ({timeout})."))
                continue
            state = subtask_view(task_id, [*window, *replies], tasks, goal)
            request = ToolCallRequest(call, toolbox.get(name), state, tool_runtime(state, call.get("id"), tools))
            try:
                result = yield run(request)
            except StepTimeout as exc:
                timeout = timeout or f"step exceeded step_timeout_s={self.config.step_timeout_s:g} in tool {name!r}"
                if isinstance(exc, NotStarted):
                    replies.append(not_run(call, f"the step had no time left ({timeout})."))
                    continue
                timed_out.add(call.get("id") or "")
                replies.append(unfinished(call, timeout))
                continue
            if result is None and name == ASK_USER:  # it waits for the user: the ask node answers it
                waiting.append(call)
                continue
            if result is None:  # a middleware that answered nothing: the call still needs a reply
                result = no_reply(call)
            reply, change = command_reply(result, call, task_id, tasks) if isinstance(result, Command) else (result, {})
            if change and ends_subtask(change, task_id):
                endings.append(merge_updates([change, {"windows": {task_id: None}}]))
            elif change:
                changes.append(change)
            replies.append(reply)
        session.close()
        skip: set[str] = set()  # a repeated refusal is the reason, not an output
        if guard.refused is not None and not endings:  # the repeat guard ends only a subtask nothing else ended
            skip.add(guard.refused[0].get("id") or "")
            endings.append(repeated_refusal(task, *guard.refused, calls))
        # A limit that stopped the subtask: its time (a tool ran past it), or its turns (this was its last).
        limit = timeout or (None if calls < self.config.max_step_iterations else self.turns_used())
        if endings or task.get("limit_reached"):
            limit = None if endings else task["limit_reached"]
        if not endings and limit is None:
            keep = self.config.max_observations
            window = cut_answered_args(task_id, window, replies, self.config.max_observation_chars, taken, cut)
            new_window, dropped = drop_old_observations([*window, *replies], keep, task_id, taken)
            changes.append(keep_outputs(task, dropped))
            return merge_updates([*changes, {"windows": {task_id: new_window}}])
        # The window goes: keep every output it had read, and the turn's replies whole (no drop notes).
        replies.extend(not_run(call, NOT_ASKED) for call in waiting)  # nobody waits: the questions go in the result
        if not endings:  # a limit: what it read is its result, and the rest goes on in this window as a continuation
            read, outputs = marked_outputs(task_id, [*window, *replies], taken)
            changes.append(keep_outputs(task, outputs))
            return merge_updates(
                [*changes, stopped_at_limit(task, tasks, read, limit, calls, self.config, self.agent_types)]
            )
        to_keep = window_outputs(window, taken)
        record_key = unique_key("turn-at-end", lambda k: taken(k) or k in to_keep)
        record = output_id(task_id, record_key)
        more, outputs = turn_outputs(task_id, turn, replies, skip, lambda k: taken(k) or k in to_keep, record)
        to_keep.update(outputs)
        flags = [f"{timeout}, so its output and that of any tool call after it are missing"] * (timeout is not None)
        failures = turn_failures(turn, replies, skip | timed_out, record)  # the timeout is a flag already
        message = next((m for m in reversed(window) if isinstance(m, AIMessage)), None)
        if (message is not None and answer_text(message)) or any(record in t for t in (more, *failures)):
            to_keep[record_key] = turn_record(message, turn)
            more = "\n\n".join(part for part in (more, TURN_KEPT.format(id=record)) if part)
        changes.append(keep_outputs(task, to_keep))
        ending = with_read_digests(combined_ending(task_id, endings, [*flags, *failures]), task, window)
        more = earlier_reads(ending, task, window, more)  # what earlier turns read that the summary omits
        return merge_updates([*changes, with_more_result(ending, task, more) if more else ending])

    def turns_used(self) -> str:
        """Why a subtask that used its last model turn stops."""
        return f"no final answer after max_step_iterations={self.config.max_step_iterations} model turns"

    @collect_writes  # the toolkit's events go out with the update that carries them
    def __call__(self, state: Mapping) -> StateUpdate:
        return self.run_all(state)

    @collect_writes
    async def acall(self, state: Mapping) -> StateUpdate:
        """`__call__` on the async path: the calls awaited (tools: `ainvoke_tool`)."""
        work = self.work(state)
        if not work:
            return {}
        clocks = self.clocks(work)
        jobs = self.call_jobs(work, clocks, asynchronous=True)
        started = await astart_calls(jobs, in_flight_bound(self.config.max_concurrency))
        return merge_updates(
            await asyncio.gather(*(self.arun_subtask_tools(one, clocks[one[0]], started) for one in work))
        )

    def run_all(self, state: Mapping) -> StateUpdate:
        """The update after running every subtask's pending tool calls: the calls to the agents' own tools as tasks
        of their own (`replangraph.nodes.execution.calls`), then each subtask's turn in order."""
        work = self.work(state)
        if not work:
            return {}
        clocks = self.clocks(work)
        started = start_calls(
            self.call_jobs(work, clocks, asynchronous=False), in_flight_bound(self.config.max_concurrency)
        )
        return merge_updates([self.run_subtask_tools(one, clocks[one[0]], started) for one in work])

    def clocks(self, work: Sequence[Work]) -> dict[str, StepClock]:
        """Each subtask's step clock, started now: its calls and its turn's end share it."""
        limit = self.config.step_timeout_s
        return {task_id: StepClock(tasks[task_id].get("elapsed_s") or 0.0, limit) for task_id, _, tasks, _ in work}

    def work(self, state: Mapping) -> list[Work]:
        """The subtasks with tool calls to run: ``(task id, window, tasks, goal)`` each; none once a feature
        stops the run skipping what runs (a cancelled run: the finalizer is next)."""
        settings = self.config
        if any((stop := halt(state, settings)) is not None and stop.skip_running for halt in self.stops):
            return []
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        windows = state.get("windows") or {}
        goal = state.get("goal", "")
        answers = not any(takes(settings) for takes in self.answer_takers)  # else a feature's node takes them
        return [
            (task_id, window, tasks, goal)
            for task_id, window in windows.items()
            if task_id in tasks
            and tasks[task_id]["status"] == "in_progress"
            and (
                pending_tool_calls(window)
                or tasks[task_id].get("limit_reached")
                or (answers and ends_with_answer(window))
            )
        ]
