"""executor node: one model turn of one subtask, in the subtask's own message window."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.errors import GraphBubbleUp

from replangraph.compression import shrink_largest
from replangraph.config import AgentConfig, AgentProfile
from replangraph.context import ContextMonitor
from replangraph.events import STEP_STARTED, emit
from replangraph.messages import all_tool_calls, message_text, repair_tool_calls
from replangraph.nodes.outcomes import completed, failed
from replangraph.prompts import REPLAN_MARKER, execution_rules, subtask_text
from replangraph.retry import StepTimeout, call_with_timeout, retrying, seconds_left
from replangraph.state import SubtaskInput
from replangraph.tools.replan_toolkit import replan_toolkit


def opening_window(profile: AgentProfile, payload: SubtaskInput, batch_size: int) -> list[AnyMessage]:
    """A fresh window: the profile's prompt with the rules, then the subtask and its inputs."""
    task = payload["task"]
    dependencies = [(d["id"], d["content"], d["result"]) for d in payload.get("dependencies", [])]
    return [
        SystemMessage(profile.prompt + "\n\n" + execution_rules(batch_size)),
        HumanMessage(subtask_text(payload["goal"], task["id"], task["content"], dependencies)),
    ]


def split_replan_marker(text: str) -> tuple[str, str] | None:
    """``(partial result, reason)`` if the text carries the replan marker, else None."""
    if REPLAN_MARKER not in text:
        return None
    before, _, after = text.partition(REPLAN_MARKER)
    return before.strip(), after.strip() or "no reason given"


class Executor:
    """Runs one model turn of the subtask in the payload.

    A reply with tool calls goes to the tools node; a reply without them is the
    subtask's result (or a replan request when it carries ``[REPLAN]``).
    """

    def __init__(
        self,
        model: BaseChatModel,
        profiles: Mapping[str, AgentProfile],
        config: AgentConfig,
        monitor: ContextMonitor | None = None,
    ):
        self.profiles = profiles
        self.config = config
        self.monitor = monitor or ContextMonitor(config, model)
        self.tools = {name: [*profile.tools, *replan_toolkit(None)] for name, profile in profiles.items()}
        self.models = {
            name: (profile.model or model).bind_tools(self.tools[name]) for name, profile in profiles.items()
        }

    def fit_opening(self, window: list[AnyMessage], agent_type: str) -> list[AnyMessage]:
        """The opening window, its largest parts (dependency results) cut until it fits the context."""
        tools = self.tools[agent_type]
        while self.monitor.over_threshold(window, tools) and shrink_largest(window):
            pass
        return window

    def __call__(self, payload: Mapping[str, Any]) -> dict:
        """``payload`` is a `SubtaskInput` sent by the router (typed loosely so it adds no state keys)."""
        task = payload["task"]
        task_id = task["id"]
        window = list(payload.get("window") or [])
        if not window:
            window = opening_window(self.profiles[task["agent_type"]], payload, self.config.batch_size)
            window = self.fit_opening(window, task["agent_type"])
            emit(STEP_STARTED, task_id=task_id, content=task["content"], agent_type=task["agent_type"])
        started = task.get("started_at") or time.time()
        spent = task.get("model_calls", 0)
        limit = self.config.step_timeout_s
        timed_out = f"step exceeded step_timeout_s={limit:g}"
        if limit is not None and seconds_left(started, limit) <= 0:
            return failed(task_id, timed_out, spent)
        model = self.models[task["agent_type"]]
        try:
            # Each try gets only what is left of the step's time, waits between tries included.
            reply, attempts = retrying(
                lambda: call_with_timeout(lambda: model.invoke(window), seconds_left(started, limit)),
                self.config,
                deadline=None if limit is None else started + limit,
            )
        except GraphBubbleUp:
            raise
        except StepTimeout as exc:
            return failed(task_id, timed_out, spent + getattr(exc, "attempts", 1))
        except RecursionError as exc:  # the client could not even read the reply
            calls = spent + getattr(exc, "attempts", 1)
            return failed(task_id, "model call failed: its reply nests too deeply to be read", calls)
        except Exception as exc:  # a failed step is a failed task, not a crashed run
            calls = spent + getattr(exc, "attempts", 1)
            return failed(task_id, f"model call failed: {type(exc).__name__}: {exc}", calls)
        calls = spent + attempts
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=message_text(reply))
        reply = repair_tool_calls(reply, [t.name for t in self.tools[task["agent_type"]]])
        if all_tool_calls(reply):
            if calls >= self.config.max_step_iterations:
                return failed(
                    task_id,
                    f"no final answer after max_step_iterations={self.config.max_step_iterations} model turns",
                    calls,
                )
            change = {"status": "in_progress", "model_calls": calls, "started_at": started}
            return {"tasks": {task_id: change}, "windows": {task_id: [*window, reply]}}
        text = message_text(reply).strip()
        if not text:
            return failed(task_id, "the model ended the subtask with an empty answer", calls)
        marker = split_replan_marker(text)
        if marker:
            partial, reason = marker
            return failed(
                task_id,
                f"replan requested: {reason}",
                calls,
                result=partial or None,
                replan_request={"trigger": "marker", "reason": reason},
            )
        if self.config.verify_results:
            # The answer waits in the window for the verifier node, which completes the subtask.
            change = {"status": "in_progress", "model_calls": calls, "started_at": started}
            return {"tasks": {task_id: change}, "windows": {task_id: [*window, reply]}}
        return completed(task_id, text, calls)
