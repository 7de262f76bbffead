"""Context monitor: how full a subtask's next model request would be."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AnyMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool

from replangraph.config import AgentConfig, Configured

TokenCounter = Callable[[Sequence[AnyMessage], Sequence[Any]], int]
DEFAULT_CONTEXT_WINDOW = 200_000


def approximate_tokens(messages: Sequence[AnyMessage], tools: Sequence[BaseTool | dict] = ()) -> int:
    """Offline token estimate of a request: messages plus tool schemas."""
    return count_tokens_approximately(messages, tools=list(tools) or None)


def model_context_window(model: Any) -> int | None:
    """``max_input_tokens`` from a chat model's profile, if it has one."""
    profile = getattr(model, "profile", None) or {}
    value = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    return int(value) if value else None


class ContextMonitor(Configured):
    """Counts request tokens against the effective window (context window minus reserved output).

    Every phase (planner, executor, compressor, summarizer, verifier, replanner,
    finalizer) measures its requests with the same counter; `for_model` gives a
    monitor for another model's window. The figures follow the run's settings.
    """

    def __init__(self, config: AgentConfig, model: Any = None, counter: TokenCounter | None = None):
        self.base_config = config
        self.model_window = model_context_window(model)
        self.counter = counter or approximate_tokens

    @property
    def context_window(self) -> int:
        """Input tokens the model accepts: ``context_window``, else the model's profile, else 200,000."""
        return self.config.context_window or self.model_window or DEFAULT_CONTEXT_WINDOW

    @property
    def reserved_output(self) -> int:
        """Tokens kept for the answer; a small window keeps at least three quarters for the request."""
        return min(self.config.reserved_output, self.context_window // 4)

    @property
    def effective_window(self) -> int:
        return max(self.context_window - self.reserved_output, 1)

    @property
    def threshold(self) -> float:
        return self.config.compress_threshold

    def for_model(self, model: Any) -> ContextMonitor:
        """A monitor with this one's counter and ``model``'s window (``context_window`` still wins)."""
        if model is None or model_context_window(model) is None:
            return self
        return ContextMonitor(self.base_config, model, self.counter)

    def tokens(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> int:
        """Tokens the request would use.

        With the default counter, the latest model reply's ``usage_metadata`` is
        preferred: its input and output tokens plus an estimate of what came after.
        """
        if self.counter is approximate_tokens:
            for index in range(len(messages) - 1, -1, -1):
                usage = getattr(messages[index], "usage_metadata", None)
                if usage and usage.get("input_tokens"):
                    later = approximate_tokens(messages[index + 1 :]) if index + 1 < len(messages) else 0
                    return usage["input_tokens"] + usage.get("output_tokens", 0) + later
        return self.counter(messages, tools)

    def usage(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> float:
        """Tokens over the effective window."""
        return self.tokens(messages, tools) / self.effective_window

    def over_threshold(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> bool:
        """Whether the request would pass ``compress_threshold``."""
        return bool(messages) and self.usage(messages, tools) > self.threshold

    def fits(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = (), budget: int | None = None) -> bool:
        """Whether the request stays within ``budget`` (default: the compression threshold)."""
        return self.tokens(messages, tools) <= (self.budget if budget is None else budget)

    @property
    def budget(self) -> int:
        """Most tokens a request may use before compression."""
        return int(self.effective_window * self.threshold)
