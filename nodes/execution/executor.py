"""The executor node (`Executor`): one model turn of one subtask, in its own message window; parallel subtasks are
parallel branches. Its model call goes through the chain of `replangraph.nodes.execution.middleware`; the calls
the turn asks for run in the tools node (`replangraph.nodes.execution.tools_node`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.tools import BaseTool

from replangraph.config import AgentConfig, AgentProfile
from replangraph.context.fitting import opening_window
from replangraph.context.outcomes import (
    failed_with_window,
)
from replangraph.context.window_monitor import ContextMonitor, approximate_tokens
from replangraph.context.workspace import collect_writes
from replangraph.events import STEP_STARTED, emit
from replangraph.llm.aio import arun_steps
from replangraph.llm.answers import was_cut
from replangraph.llm.bounds import output_limit
from replangraph.llm.calls import guarded_steps, run_steps
from replangraph.llm.errors import StepTimeout, is_server_down, server_url
from replangraph.llm.reading import (
    all_tool_calls,
    answer_text,
)
from replangraph.llm.retries import client_timeout, paused_if_down, replangraph_retries
from replangraph.llm.time_limits import StepClock
from replangraph.nodes.execution.endings import (  # rare ends of a turn; a turn that goes well runs none of them
    nudged,
    too_small,
    was_nudged,
    with_cut_note,
)
from replangraph.nodes.execution.middleware import (
    ModelRequest,
    ModelWrapper,
    achain_model_calls,
    chain_model_calls,
    reply_of,
)
from replangraph.nodes.execution.model_wrappers import (
    BoundModels,
    ContextOverflow,
    OfferReadOutput,
    RepairToolCalls,
    Retries,
    StepDeadline,
    StepFailed,
    refit_overflow,
)
from replangraph.nodes.execution.prompts import system_prompt
from replangraph.policy import DEFAULT_POLICY, TextPolicy
from replangraph.run_config import Configured
from replangraph.state import StateUpdate
from replangraph.tools.read_output import read_output_tool
from replangraph.tools.replan_toolkit.toolkit import (
    replan_toolkit,
    split_replan_marker,
)
from replangraph.tracing import task_label

logger = logging.getLogger(__name__)


Steps = Generator[Any, Any, StateUpdate]
"""A node's work written once for both paths (`replangraph.llm.calls.run_steps`)."""


def replied(handler: Callable, request: ModelRequest) -> Generator[Any, Any, AIMessage]:
    """The model's reply to ``request`` through ``handler`` (`Steps`)."""
    return reply_of((yield handler(request)))


def turn_failure(
    executor: Executor,
    task: Mapping[str, Any],
    window: list,
    started: float,
    calls: int,
    exc: Exception,
    clock: StepClock,
) -> StateUpdate:
    """The update for a model turn that raised ``exc`` (``calls``: the model calls spent, tries included);
    `ModelServerDown` when the server stopped answering and the run pauses for that."""
    paused_if_down(exc, executor.config)
    if isinstance(exc, StepTimeout):  # the tools node ends it: with a continuation when it made progress
        why = f"step exceeded step_timeout_s={clock.limit_s}"
        change = {"status": "in_progress", "model_calls": calls, "started_at": started, "limit_reached": why}
        return {"tasks": {task["id"]: change}, "windows": {task["id"]: window}}
    if isinstance(exc, StepFailed):
        return executor.fail(task, window, str(exc), calls)
    if isinstance(exc, ContextOverflow):
        return overflowed(executor, task, window, started, calls, exc.__cause__ or exc)
    calls = max(calls, task.get("model_calls", 0) + 1)  # the call was made, even if it never answered
    if isinstance(exc, RecursionError):  # the client could not even read the reply
        return executor.fail(task, window, "model call failed: its reply nests too deeply to be read", calls)
    url = server_url(exc) if is_server_down(exc) else None
    where = f" (the model server at {url} did not answer)" if url else ""
    return executor.fail(task, window, f"model call failed: {type(exc).__name__}: {exc}{where}", calls)


def overflowed(
    executor: Executor, task: Mapping[str, Any], window: list, started: float, calls: int, exc: Exception
) -> StateUpdate:
    """The provider refused the request as too long: compress and try once more, else fail the step."""
    if (task.get("context_overflow") or {}).get("compressed"):
        return executor.fail(
            task,
            window,
            f"the request exceeds the model's context window even after compression: {exc}",
            calls,
        )
    tools = executor.tool_schemas[task["agent_type"]]
    # The window (and the size) the error names are learned; the compressor then fits the real window.
    learned = executor.monitor.learn_overflow(exc, approximate_tokens(window, tools))
    # Usage figures may come from a server that counts differently: take the larger count.
    tokens = max(executor.monitor.tokens(window, tools), executor.monitor.counter(window, tools))
    logger.info(
        "the model refused the window of %s as too long for its context window (%d tokens by our count); "
        "the compressor refits it",
        task_label(task),
        tokens,
    )
    record = {"tokens": tokens, "compressed": False, "error": str(exc)[:300]}
    if learned:
        record["window"] = executor.monitor.context_window
    change = {"status": "in_progress", "model_calls": calls, "started_at": started, "context_overflow": record}
    return {"tasks": {task["id"]: change}, "windows": {task["id"]: window}}


class Executor(Configured):
    """Runs one model turn of the subtask in the payload.

    A reply with tool calls goes to the tools node; a reply without them is the
    subtask's result (or a replan request when it carries ``[REPLAN]``). The agent
    gets ``read_output`` once its window points at kept text. A provider's
    ``ContextOverflowError`` sends the window to the compressor, and the call is
    tried once more.
    """

    def __init__(
        self,
        model: BaseChatModel,
        profiles: Mapping[str, AgentProfile],
        config: AgentConfig,
        monitor: ContextMonitor | None = None,
        *,
        tool_schemas: Mapping[str, list[BaseTool]] | None = None,
        feature_wrappers: Sequence[ModelWrapper] = (),
        middleware: Sequence[ModelWrapper] = (),
        policy: TextPolicy = DEFAULT_POLICY,
    ):
        """``tool_schemas``: each agent type's fullest tool list, what the window is fitted to;
        ``feature_wrappers``: the features' wrappers (they offer tools such as ask_user);
        ``middleware``: the user's ``wrap_model_call`` hooks (see `chain`); ``policy``: the text heuristics
        (it tells an announced call from an answer)."""
        self.policy = policy
        self.profiles = profiles
        self.base_config = config
        self.monitor = monitor or ContextMonitor(config, model)
        self.model = model
        self.toolkit = replan_toolkit(None)
        reader = read_output_tool(lambda _: None, list, config.max_observation_chars)
        self.tool_schemas = tool_schemas or {n: [*p.tools, *self.toolkit, reader] for n, p in profiles.items()}
        self.offers = [OfferReadOutput(reader), *feature_wrappers]
        self.middleware = list(middleware)
        self.call_model = BoundModels()
        self.base_tools = {name: [*p.tools, *self.toolkit] for name, p in profiles.items()}

    def wrappers(self, clock: StepClock, agent_type: str) -> list[ModelWrapper]:
        """The model call's wrappers, outermost first (why this order: `replangraph.nodes.execution.middleware`):
        step deadline, overflow refit, offers, user middleware, retries, tool-call repair."""
        config = self.config
        known = [t.name for t in self.tool_schemas[agent_type]]
        return [
            StepDeadline(clock),
            refit_overflow,
            *self.offers,
            *self.middleware,
            Retries(config, clock),
            RepairToolCalls(known),
        ]

    def chain(self, clock: StepClock, agent_type: str) -> Callable[[ModelRequest], Any]:
        """The model call wrapped in `wrappers`."""
        return chain_model_calls(self.wrappers(clock, agent_type), self.call_model)

    def achain(self, clock: StepClock, agent_type: str) -> Callable[[ModelRequest], Awaitable[Any]]:
        """`chain` on the async path: the same wrappers' async forms around an awaited model call."""
        return achain_model_calls(self.wrappers(clock, agent_type), self.call_model.acall)

    def request(self, task: Mapping[str, Any], window: list) -> ModelRequest:
        """The turn's model request: the agent type's model and tools, the window (its system message apart)."""
        agent_type = task["agent_type"]
        system = window[0] if window and isinstance(window[0], SystemMessage) else None
        return ModelRequest(
            model=self.profiles[agent_type].model or self.model,
            messages=window[1:] if system is not None else list(window),
            system_message=system,
            tools=list(self.base_tools[agent_type]),
            state={
                "messages": window,
                "task": task,
                "attempts": 0,
                "output_limit": output_limit(self.config, self.monitor),
                "client_retries": replangraph_retries(self.config) == 0,  # one retry policy: the Retries wrapper's
                "client_timeout": client_timeout(self.config),  # the client gives up when the step's time does
            },
        )

    @collect_writes
    def __call__(self, payload: Mapping[str, Any]) -> StateUpdate:
        """``payload`` is a `SubtaskInput` sent by the router (typed loosely so it adds no state keys)."""
        clock = StepClock(payload["task"].get("elapsed_s") or 0.0, self.config.step_timeout_s)
        return self.timed(payload, clock, run_steps(self.turn(payload, clock, self.chain)))

    @collect_writes
    async def acall(self, payload: Mapping[str, Any]) -> StateUpdate:
        """`__call__` on the async path (``ainvoke``, ``astream``, a LangGraph server): the model is awaited."""
        clock = StepClock(payload["task"].get("elapsed_s") or 0.0, self.config.step_timeout_s)
        return self.timed(payload, clock, await arun_steps(self.turn(payload, clock, self.achain)))

    def timed(self, payload: Mapping[str, Any], clock: StepClock, update: StateUpdate) -> StateUpdate:
        """``update`` with the subtask's time so far."""
        task = payload["task"]
        if task["id"] in (update.get("tasks") or {}):
            update["tasks"][task["id"]]["elapsed_s"] = round(clock.elapsed(), 6)
        return update

    def turn(self, payload: Mapping[str, Any], clock: StepClock, chain: Callable) -> Steps:
        """The state update of one model turn, its model call made through ``chain(clock, agent_type)``
        (`Steps`)."""
        task = payload["task"]
        task_id = task["id"]
        window = list(payload.get("window") or [])
        spent = task.get("model_calls", 0)
        # The fullest tool list fits the window to the budget; the model gets what this turn offers.
        tools = self.tool_schemas[task["agent_type"]]
        if not window:
            # A required tool the agent type lacks (a plan kept after retries, an edit): a warning, not a stop.
            have = {t.name for t in tools}
            missing = [name for name in task.get("required_tools") or () if name not in have]
            warning = {"missing_tools": missing} if missing else {}
            emit(STEP_STARTED, task_id=task_id, content=task["content"], agent_type=task["agent_type"], **warning)
            logger.debug(
                "%s started (agent type %s, depth %d)", task_label(task), task["agent_type"], task.get("depth", 0)
            )
            opening = opening_window(
                system_prompt(self.profiles[task["agent_type"]].prompt, self.config.batch_size),
                payload,
                lambda w: self.monitor.tokens(w, tools),
                self.monitor.budget,
            )
            if not opening.fits:
                return too_small(task, self.monitor.tokens(opening.request, tools), self.monitor.budget, spent)
            window = opening.request
        started = task.get("started_at") or time.time()
        request = self.request(task, window)
        outcome = yield from guarded_steps(replied(chain(clock, task["agent_type"]), request), lambda exc: exc)
        if isinstance(outcome, Exception):  # a failed step is a failed task, not a crashed run
            return self.failure(task, window, started, spent + request.state["attempts"], outcome, clock)
        reply = outcome
        if request.state.get("sent"):
            self.monitor.observe(*request.state["sent"], reply)
        calls = spent + request.state["attempts"]
        cleared = {"context_overflow": None} if task.get("context_overflow") else {}
        if all_tool_calls(reply):
            change = {"status": "in_progress", "model_calls": calls, "started_at": started, **cleared}
            return {"tasks": {task_id: change}, "windows": {task_id: [*window, reply]}}
        text = answer_text(reply)
        if not text:
            return self.fail(task, window, "the model ended the subtask with an empty answer", calls)
        if was_cut(reply):  # kept, with a note: the agent's data is worth more than nothing, and the report names it
            text, reply = with_cut_note(reply, text, output_limit(self.config, self.monitor), task_id)
            cleared["answer_cut"] = True
        marker = split_replan_marker(text)
        if marker:
            partial, reason = marker
            return self.fail(
                task,
                window,
                f"replan requested: {reason}",
                calls,
                result=partial or None,
                replan_request={"trigger": "marker", "reason": reason},
            )
        # said, not done: asked once to act in the same conversation (a reply the reader does not take for an
        # announcement is an answer, and the completion check judges it)
        if self.policy.announces(text, [t.name for t in request.tools]) and not was_nudged(window):
            return nudged({**task, "started_at": started}, window, reply, calls)
        # The answer waits in the window: the verifier node checks and completes the subtask, or with the check
        # off the tools node completes it; both see the whole run, so what the agent read reaches its result.
        change = {"status": "in_progress", "model_calls": calls, "started_at": started, **cleared}
        return {"tasks": {task_id: change}, "windows": {task_id: [*window, reply]}}

    def failure(
        self, task: Mapping[str, Any], window: list, started: float, calls: int, exc: Exception, clock: StepClock
    ) -> StateUpdate:
        """The update for a model turn that raised ``exc`` (`turn_failure`)."""
        return turn_failure(self, task, window, started, calls, exc, clock)

    def fail(self, task: Mapping[str, Any], window: list, error: str, calls: int, **extra: Any) -> StateUpdate:
        """A failed subtask whose window goes: what it had read and written is kept."""
        return failed_with_window(task, window, error, calls, **extra)
