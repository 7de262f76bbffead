"""compressor node: folds the older part of a subtask's window into a summary so the next request fits.

The summary carries the current plan (the plan message: at most 12 tasks listed) and the subtask's
instructions, so the agent never loses them, and says where the folded messages are kept in full.
Cuts never separate tool calls from their results.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from replangraph.config import AgentConfig, AgentProfile
from replangraph.context.carried import call_labels, own_start
from replangraph.context.compression import (
    Compression,
    compression_steps,
    split_window,
    transcript_entries,
)
from replangraph.context.fitting import PLAN_ID, excerpt, opening_window, output_id
from replangraph.context.outcomes import failed_with_window
from replangraph.context.results import keep_outputs
from replangraph.context.summarizing import summary_steps
from replangraph.context.window_monitor import ContextMonitor
from replangraph.context.window_outputs import is_taken
from replangraph.context.workspace import collect_writes
from replangraph.events import ANSWER_CUT, CONTEXT_COMPRESSED, emit
from replangraph.llm.aio import acall_model, arun_steps
from replangraph.llm.answers import was_cut
from replangraph.llm.bounds import cut_note, output_limit
from replangraph.llm.calls import call_model, guarded_steps, run_steps
from replangraph.llm.overflow import overflow_budget
from replangraph.llm.reading import answer_text
from replangraph.llm.time_limits import StepClock
from replangraph.names import COMPRESSOR
from replangraph.nodes.compression.prompts import MERGE_REQUEST, SUMMARIZER_PROMPT, SUMMARY_REQUEST
from replangraph.run_config import Configured
from replangraph.state import StateUpdate
from replangraph.tracing import task_label, traced

logger = logging.getLogger(__name__)

Steps = Generator[Any, Any, Any]
"""Work written once for both paths (`replangraph.llm.calls.run_steps`): the summary model's calls are made
by the sync driver, or awaited by the async one."""

PLAN_SHARE = 0.2
"""Most of the budget the plan re-injected with a summary may take; a longer one is shown as an excerpt."""


def fold_request(previous: str | None, text: str) -> list[AnyMessage]:
    """The summary model's request to fold ``text`` into ``previous``."""
    return [
        SystemMessage(SUMMARIZER_PROMPT),
        HumanMessage(SUMMARY_REQUEST.format(previous=previous or "(none)", messages=text)),
    ]


def merge_request(summaries: Sequence[str]) -> list[AnyMessage]:
    """The summary model's request to merge partial summaries (of consecutive parts, in order)."""
    parts = "\n\n".join(f"Part {n}:\n{text}" for n, text in enumerate(summaries, 1))
    return [SystemMessage(SUMMARIZER_PROMPT), HumanMessage(MERGE_REQUEST.format(parts=parts))]


def failed_summary(previous: str | None, folded: int, exc: Exception) -> str:
    """The summary when the summary model failed: ``previous`` and a note on where the folded messages are."""
    note = (
        f"(The summary model failed: {type(exc).__name__}: {exc}. {folded} earlier messages "
        "were folded without a summary; read them in full as said below.)"
    )
    return f"{previous}\n{note}" if previous else note


def folded_calls(task_id: str, window: Sequence[AnyMessage], folded: int) -> list[str]:
    """The labels of the calls of ``task_id``'s own (`own_start`: not those of a window carried over to it) among
    the first ``folded`` messages of ``window``'s body, which a compression folded into its summary."""
    head, summary, body = split_window(window)
    start = len(head) + (summary is not None)
    own = own_start(task_id, window)
    return call_labels([m for at, m in enumerate(body[:folded], start) if at >= own])


class Compressor(Configured):
    """Summarizes with ``summary_model`` (in chunks when the folded text exceeds its window);
    if that fails, the summary says so and the folded messages stay readable with ``read_output``."""

    def __init__(
        self,
        summary_model: BaseChatModel,
        profiles: Mapping[str, AgentProfile],
        tool_schemas: Mapping[str, Sequence],
        config: AgentConfig,
        monitor: ContextMonitor,
        summary_notes: Sequence[Callable[[Mapping[str, Any]], str]] = (),
    ):
        """``summary_notes``: what features keep with a summary's instructions (`Feature.summary_note`: human in
        the loop, the user's answers to the subtask's questions)."""
        self.summary_notes = list(summary_notes)
        self.summary_model = summary_model
        self.profiles = profiles
        self.tools = tool_schemas
        self.base_config = config
        self.monitor = monitor
        self.summary_monitor = monitor.for_model(summary_model)

    def ask_steps(self, request: list[AnyMessage], awaited: bool = False, trace: RunnableConfig | None = None) -> Steps:
        """The summary model's text for ``request`` (steps; ``trace``: the call's config, see `call_model`); its
        failure, or an empty answer, raised."""
        call = acall_model if awaited else call_model
        called = yield call(self.summary_model, request, self.config, monitor=self.summary_monitor, trace=trace)
        reply = called.result()
        text = answer_text(reply)
        if not text:
            raise ValueError("the summary model returned nothing")
        if was_cut(reply):  # kept, with a note: the folded messages stay readable with read_output
            limit = output_limit(self.config, self.summary_monitor)
            emit(ANSWER_CUT, task_id=None, part="summary", limit=limit)
            text = f"{text}\n{cut_note(limit)}"
        return text

    def summarize(self, previous: str | None, messages: Sequence[AnyMessage]) -> str:
        """A summary of ``previous`` plus ``messages``, every character of them shown to the summary model."""
        return run_steps(self.summarize_steps(previous, messages))

    def summarize_steps(
        self,
        previous: str | None,
        messages: Sequence[AnyMessage],
        awaited: bool = False,
        trace: RunnableConfig | None = None,
    ) -> Steps:
        """`summarize` as steps, the summary model awaited when ``awaited``, its calls made with ``trace``."""
        fits = self.summary_monitor.fits

        def summary() -> Steps:
            text, _ = yield from summary_steps(
                previous,
                transcript_entries(messages),
                fold=lambda prior, text: self.ask_steps(fold_request(prior, text), awaited, trace),
                merge=lambda texts: self.ask_steps(merge_request(texts), awaited, trace),
                fits_fold=lambda prior, text: fits(fold_request(prior, text)),
                fits_merge=lambda texts: fits(merge_request(texts)),
            )
            return text

        def failed(exc: Exception) -> str:
            logger.warning(
                "the summary model failed (%s: %s); messages folded without a summary", type(exc).__name__, exc
            )
            return failed_summary(previous, len(messages), exc)

        # Compression must not crash the run; the folded messages are kept.
        return (yield from guarded_steps(summary(), failed))

    def compress(self, payload: Mapping[str, Any], budget: int, awaited: bool = False) -> Steps:
        """The compressed window (steps, ending in a `Compression`); a window that is only the opening is
        built again to fit."""
        task = payload["task"]
        tools = self.tools[task["agent_type"]]
        window = list(payload["window"])
        _, summary, body = split_window(window)
        if not body and summary is None:  # the executor's opening, built again with its own system prompt
            first = window[0] if window else None
            kept = isinstance(first, SystemMessage) and isinstance(first.content, str)
            prompt = first.content if kept else self.profiles[task["agent_type"]].prompt
            opening = opening_window(prompt, payload, lambda w: self.monitor.tokens(w, tools), budget)
            return Compression(opening.request, 0, {}, opening.fits)
        plan = payload.get("plan", "")
        trace = traced(COMPRESSOR, task)
        plan_tokens = self.monitor.tokens([HumanMessage(plan)])
        if plan_tokens > budget * PLAN_SHARE:  # a long plan is re-injected as an excerpt (read_output reads it)
            plan = excerpt(plan, max(int(len(plan) * budget * PLAN_SHARE / plan_tokens), 300), PLAN_ID)
        steps = compression_steps(
            window,
            keep_last=self.config.keep_last_messages,
            fits=lambda w: self.monitor.fits(w, tools, budget),
            summarize=lambda previous, messages: self.summarize_steps(previous, messages, awaited, trace),
            plan=plan,
            instructions=f"({task['id']}) {task['content']}" + "".join(note(task) for note in self.summary_notes),
            task_id=task["id"],
            taken=is_taken(task),
            tokens=lambda w: self.monitor.tokens(w, tools),
        )
        return (yield from steps)

    @collect_writes
    def __call__(self, payload: Mapping[str, Any]) -> StateUpdate:
        """``payload`` is a `SubtaskInput` sent by the router (typed loosely so it adds no state keys)."""
        clock = StepClock(payload["task"].get("elapsed_s") or 0.0, self.config.step_timeout_s)
        return self.timed(payload, clock, run_steps(self.shrink(payload)))

    @collect_writes
    async def acall(self, payload: Mapping[str, Any]) -> StateUpdate:
        """`__call__` on the async path (``ainvoke``, ``astream``, a LangGraph server): the summary model is
        awaited."""
        clock = StepClock(payload["task"].get("elapsed_s") or 0.0, self.config.step_timeout_s)
        return self.timed(payload, clock, await arun_steps(self.shrink(payload, awaited=True)))

    @staticmethod
    def timed(payload: Mapping[str, Any], clock: StepClock, update: StateUpdate) -> StateUpdate:
        """``update`` with the subtask's time so far: summarizing counts as the step's own time."""
        update.setdefault("tasks", {}).setdefault(payload["task"]["id"], {})["elapsed_s"] = round(clock.elapsed(), 6)
        return update

    def shrink(self, payload: Mapping[str, Any], awaited: bool = False) -> Steps:
        """The update with the subtask's window compressed (or the subtask failed when it cannot fit; steps)."""
        task = payload["task"]
        tools = self.tools[task["agent_type"]]
        window = list(payload["window"])
        overflow = task.get("context_overflow") or {}
        budget = self.monitor.budget
        if overflow and not overflow.get("compressed") and not overflow.get("window"):
            # The provider counted more than we did, and did not say its window (when it did, the monitor's
            # budget follows it): halve what can shrink (all but the system prompt and tools).
            fixed = self.monitor.tokens(window[:1], tools)
            budget = overflow_budget(budget, overflow.get("tokens", budget), fixed)
        before = self.monitor.tokens(window, tools)
        result = yield from self.compress(payload, budget, awaited)
        after = self.monitor.tokens(result.window, tools)
        if not result.fits:
            error = f"context window too small: {after} tokens needed after compression, budget {budget}"
            return failed_with_window(task, window, error, task.get("model_calls", 0))
        logger.log(
            logging.INFO if overflow else logging.DEBUG,
            "compressed the window of %s%s: %d -> %d tokens (budget %d), %d messages folded",
            task_label(task),
            " after the provider refused it as too long" if overflow else "",
            before,
            after,
            budget,
            result.folded,
        )
        emit(
            CONTEXT_COMPRESSED,
            task_id=task["id"],
            tokens_before=before,
            tokens_after=after,
            folded=result.folded,
            saved=[output_id(task["id"], key) for key in result.saved],
        )
        change: dict[str, Any] = {}
        if overflow:
            change["context_overflow"] = {**overflow, "compressed": True}
        folded = folded_calls(task["id"], window, result.folded)
        if folded:
            change["folded_calls"] = [*task.get("folded_calls", []), *folded]
        update: dict[str, Any] = {"windows": {task["id"]: result.window}, **keep_outputs(task, result.saved)}
        if change:
            update["tasks"] = {task["id"]: change}
        return update
