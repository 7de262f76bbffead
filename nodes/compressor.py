"""compressor node: shrinks a subtask's window back under the context budget.

Cuts never separate an AI message with tool calls from its tool results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage

from replangraph.config import AgentConfig
from replangraph.context import ContextMonitor
from replangraph.events import CONTEXT_COMPRESSED, emit
from replangraph.messages import truncate_middle
from replangraph.nodes.outcomes import failed

HEAD = 2  # the system prompt and the subtask message always stay


def safe_cut(window: Sequence[AnyMessage], keep_last: int) -> int:
    """Index where the kept tail starts: at most ``keep_last`` messages, never on a ToolMessage."""
    cut = max(len(window) - keep_last, HEAD)
    while cut < len(window) and isinstance(window[cut], ToolMessage):
        cut += 1
    return cut


def drop_middle(window: Sequence[AnyMessage], keep_last: int) -> list[AnyMessage]:
    """Head and tail with a note standing for the dropped messages."""
    cut = safe_cut(window, keep_last)
    dropped = cut - HEAD
    if dropped <= 0:
        return list(window)
    note = HumanMessage(f"[{dropped} earlier messages of this subtask were removed to fit the context window.]")
    return [*window[:HEAD], note, *window[cut:]]


def shrink_largest_observation(window: list[AnyMessage]) -> bool:
    """Halve the largest tool output in place; False when nothing is left to shrink."""
    sizes = [
        (len(m.content), i) for i, m in enumerate(window) if isinstance(m, ToolMessage) and isinstance(m.content, str)
    ]
    if not sizes:
        return False
    size, index = max(sizes)
    if size <= 200:
        return False
    window[index] = window[index].model_copy(update={"content": truncate_middle(window[index].content, size // 2)})
    return True


class Compressor:
    """Brings a window under the budget: drop the middle, then shrink the largest tool outputs."""

    def __init__(self, tool_schemas: Mapping[str, Sequence], config: AgentConfig, monitor: ContextMonitor):
        self.tools = tool_schemas
        self.config = config
        self.monitor = monitor

    def __call__(self, payload: Mapping[str, Any]) -> dict:
        """``payload`` is a `SubtaskInput` sent by the router (typed loosely so it adds no state keys)."""
        task = payload["task"]
        tools = self.tools[task["agent_type"]]
        window = list(payload["window"])
        before = self.monitor.tokens(window, tools)
        window = drop_middle(window, self.config.keep_last_messages)
        while self.monitor.over_threshold(window, tools) and shrink_largest_observation(window):
            pass
        after = self.monitor.tokens(window, tools)
        if self.monitor.over_threshold(window, tools):
            return failed(
                task["id"],
                f"context window too small: {after} tokens needed after compression, budget {self.monitor.budget}",
                task.get("model_calls", 0),
            )
        emit(CONTEXT_COMPRESSED, task_id=task["id"], tokens_before=before, tokens_after=after)
        return {"windows": {task["id"]: window}}
