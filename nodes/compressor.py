"""compressor node: folds the older part of a subtask's window into a summary so the next request fits.

The summary carries the current plan and the subtask's instructions, so the
agent never loses them. Cuts never separate tool calls from their results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langgraph.errors import GraphBubbleUp

from replangraph.compression import compress_window, transcript
from replangraph.config import AgentConfig
from replangraph.context import DEFAULT_CONTEXT_WINDOW, ContextMonitor, model_context_window
from replangraph.events import CONTEXT_COMPRESSED, emit
from replangraph.messages import message_text, truncate_middle
from replangraph.nodes.outcomes import failed
from replangraph.prompts import SUMMARIZER_PROMPT, SUMMARY_REQUEST
from replangraph.retry import invoke_with_retries


def summarizer_request(previous: str | None, messages: Sequence[AnyMessage], budget_tokens: int, monitor) -> list:
    """The summary model's request, with the transcript cut until it fits ``budget_tokens``."""
    text = transcript(messages)
    while True:
        request = [
            SystemMessage(SUMMARIZER_PROMPT),
            HumanMessage(SUMMARY_REQUEST.format(previous=previous or "(none)", messages=text)),
        ]
        if monitor.tokens(request) <= budget_tokens or len(text) < 500:
            return request
        text = truncate_middle(text, int(len(text) * 0.7))


class Compressor:
    """Summarizes with ``summary_model``; if that fails, the folded part becomes a short note."""

    def __init__(
        self,
        summary_model: BaseChatModel,
        tool_schemas: Mapping[str, Sequence],
        config: AgentConfig,
        monitor: ContextMonitor,
    ):
        self.summary_model = summary_model
        self.tools = tool_schemas
        self.config = config
        self.monitor = monitor
        window = model_context_window(summary_model) or config.context_window or DEFAULT_CONTEXT_WINDOW
        self.summary_budget = max(int((window - config.reserved_output) * config.compress_threshold), 1_000)

    def summarize(self, previous: str | None, messages: Sequence[AnyMessage]) -> str:
        """A summary of ``previous`` plus ``messages``; a plain note if the summary model fails."""
        request = summarizer_request(previous, messages, self.summary_budget, self.monitor)
        try:
            reply, _ = invoke_with_retries(self.summary_model, request, self.config)
            text = message_text(reply).strip()
            problem = "the summary model returned nothing"
        except GraphBubbleUp:
            raise
        except Exception as exc:  # compression must not crash the run
            text, problem = "", f"the summary model failed: {type(exc).__name__}: {exc}"
        if text:
            return text
        note = f"({problem}; {len(messages)} earlier messages were removed.)"
        return f"{previous}\n{note}" if previous else note

    def __call__(self, payload: Mapping[str, Any]) -> dict:
        """``payload`` is a `SubtaskInput` sent by the router (typed loosely so it adds no state keys)."""
        task = payload["task"]
        tools = self.tools[task["agent_type"]]
        window = list(payload["window"])
        before = self.monitor.tokens(window, tools)
        compressed, folded = compress_window(
            window,
            keep_last=self.config.keep_last_messages,
            fits=lambda w: not self.monitor.over_threshold(w, tools),
            summarize=self.summarize,
            plan=payload.get("plan", ""),
            instructions=f"({task['id']}) {task['content']}",
        )
        after = self.monitor.tokens(compressed, tools)
        if self.monitor.over_threshold(compressed, tools):
            return failed(
                task["id"],
                f"context window too small: {after} tokens needed after compression, budget {self.monitor.budget}",
                task.get("model_calls", 0),
            )
        emit(CONTEXT_COMPRESSED, task_id=task["id"], tokens_before=before, tokens_after=after, folded=folded)
        return {"windows": {task["id"]: compressed}}
