"""executor node: one model turn of one subtask, in the subtask's own message window."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langchain_core.tools import BaseTool

from replangraph.config import AgentConfig, AgentProfile
from replangraph.context.fitting import ContextMonitor, opening_window
from replangraph.context.kept import collect_writes, completed, failed, failed_with_window
from replangraph.llm.calls import StepClock, StepTimeout, guarded
from replangraph.llm.reading import all_tool_calls, message_text
from replangraph.names import REPLAN_MARKER
from replangraph.nodes.execution.middleware import (
    BoundModels,
    ContextOverflow,
    IterationCap,
    ModelRequest,
    ModelWrapper,
    OfferReadOutput,
    RepairToolCalls,
    Retries,
    StepDeadline,
    StepFailed,
    chain_model_calls,
    refit_overflow,
    reply_of,
)
from replangraph.state import STEP_STARTED, Configured, StateUpdate, emit
from replangraph.tools.read_output import read_output_tool
from replangraph.tools.replan_toolkit.toolkit import replan_toolkit


def split_replan_marker(text: str) -> tuple[str, str] | None:
    """``(partial result, reason)`` if the text carries the replan marker, else None."""
    if REPLAN_MARKER not in text:
        return None
    before, _, after = text.partition(REPLAN_MARKER)
    return before.strip(), after.strip() or "no reason given"


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
    ):
        """``tool_schemas``: each agent type's fullest tool list, what the window is fitted to;
        ``feature_wrappers``: the features' wrappers (they offer tools such as ask_user);
        ``middleware``: the user's ``wrap_model_call`` hooks (see `chain`)."""
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

    def chain(self, clock: StepClock, agent_type: str) -> Callable[[ModelRequest], Any]:
        """The model call wrapped, outermost first (why this order: `replangraph.nodes.execution.middleware`):
        iteration cap, step deadline, overflow refit, offers, user middleware, retries, tool-call repair."""
        config = self.config
        known = [t.name for t in self.tool_schemas[agent_type]]
        wrappers = [
            IterationCap(config.max_step_iterations),
            StepDeadline(clock),
            refit_overflow,
            *self.offers,
            *self.middleware,
            Retries(config, clock),
            RepairToolCalls(known),
        ]
        return chain_model_calls(wrappers, self.call_model)

    def request(self, task: Mapping[str, Any], window: list) -> ModelRequest:
        """The turn's model request: the agent type's model and tools, the window (its system message apart)."""
        agent_type = task["agent_type"]
        system = window[0] if window and isinstance(window[0], SystemMessage) else None
        return ModelRequest(
            model=self.profiles[agent_type].model or self.model,
            messages=window[1:] if system is not None else list(window),
            system_message=system,
            tools=list(self.base_tools[agent_type]),
            state={"messages": window, "task": task, "attempts": 0},
        )

    @collect_writes
    def __call__(self, payload: Mapping[str, Any]) -> StateUpdate:
        """``payload`` is a `SubtaskInput` sent by the router (typed loosely so it adds no state keys)."""
        task = payload["task"]
        clock = StepClock(task.get("elapsed_s") or 0.0, self.config.step_timeout_s)
        update = self.turn(payload, clock)
        if task["id"] in (update.get("tasks") or {}):
            update["tasks"][task["id"]]["elapsed_s"] = round(clock.elapsed(), 6)
        if payload.get("alone") and (update.get("windows") or {}).get(task["id"], []) is None:
            update["ended_alone"] = True  # nothing to join: the router decides at once
        return update

    def turn(self, payload: Mapping[str, Any], clock: StepClock) -> StateUpdate:
        """The state update of one model turn."""
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
            opening = opening_window(
                self.profiles[task["agent_type"]],
                payload,
                self.config.batch_size,
                lambda w: self.monitor.tokens(w, tools),
                self.monitor.budget,
            )
            if not opening.fits:
                needed = self.monitor.tokens(opening.request, tools)
                return failed(
                    task,
                    f"context window too small for this subtask: its prompt, instructions and tool schemas "
                    f"need {needed} tokens with the goal and every input shown as an excerpt, "
                    f"budget {self.monitor.budget}",
                    spent,
                )
            window = opening.request
        started = task.get("started_at") or time.time()
        request = self.request(task, window)
        outcome = guarded(lambda: reply_of(self.chain(clock, task["agent_type"])(request)), lambda exc: exc)
        if isinstance(outcome, Exception):  # a failed step is a failed task, not a crashed run
            return self.failure(task, window, started, spent + request.state["attempts"], outcome, clock)
        reply = outcome
        calls = spent + request.state["attempts"]
        cleared = {"context_overflow": None} if task.get("context_overflow") else {}
        if all_tool_calls(reply):
            change = {"status": "in_progress", "model_calls": calls, "started_at": started, **cleared}
            return {"tasks": {task_id: change}, "windows": {task_id: [*window, reply]}}
        text = message_text(reply).strip()
        if not text:
            return self.fail(task, window, "the model ended the subtask with an empty answer", calls)
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
        if self.config.verify_results:
            # The answer waits in the window for the verifier node, which completes the subtask.
            change = {"status": "in_progress", "model_calls": calls, "started_at": started, **cleared}
            return {"tasks": {task_id: change}, "windows": {task_id: [*window, reply]}}
        update = completed(task, text, calls)
        update["tasks"][task_id].update(cleared)
        return update

    def failure(
        self, task: Mapping[str, Any], window: list, started: float, calls: int, exc: Exception, clock: StepClock
    ) -> StateUpdate:
        """The update for a model turn that raised ``exc`` (``calls``: the model calls spent, tries included)."""
        if isinstance(exc, StepTimeout):
            return self.fail(task, window, f"step exceeded step_timeout_s={clock.limit_s}", calls)
        if isinstance(exc, StepFailed):
            return self.fail(task, window, str(exc), calls)
        if isinstance(exc, ContextOverflow):
            return self.overflowed(task, window, started, calls, exc.__cause__ or exc)
        calls = max(calls, task.get("model_calls", 0) + 1)  # the call was made, even if it never answered
        if isinstance(exc, RecursionError):  # the client could not even read the reply
            return self.fail(task, window, "model call failed: its reply nests too deeply to be read", calls)
        return self.fail(task, window, f"model call failed: {type(exc).__name__}: {exc}", calls)

    def fail(self, task: Mapping[str, Any], window: list, error: str, calls: int, **extra: Any) -> StateUpdate:
        """A failed subtask whose window goes: what it had read and written is kept."""
        return failed_with_window(task, window, error, calls, **extra)

    def overflowed(
        self, task: Mapping[str, Any], window: list, started: float, calls: int, exc: Exception
    ) -> StateUpdate:
        """The provider refused the request as too long: compress and try once more, else fail the step."""
        if (task.get("context_overflow") or {}).get("compressed"):
            return self.fail(
                task,
                window,
                f"the request exceeds the model's context window even after compression: {exc}",
                calls,
            )
        tools = self.tool_schemas[task["agent_type"]]
        # Usage figures may come from a server that counts differently: take the larger count.
        tokens = max(self.monitor.tokens(window, tools), self.monitor.counter(window, tools))
        change = {
            "status": "in_progress",
            "model_calls": calls,
            "started_at": started,
            "context_overflow": {"tokens": tokens, "compressed": False, "error": str(exc)[:300]},
        }
        return {"tasks": {task["id"]: change}, "windows": {task["id"]: window}}
