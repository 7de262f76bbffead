"""The shapes of the executor's middleware: LangChain v1's request and response types (`ModelRequest`,
`ModelResponse`, with LangChain's field names and ``override(**changes)``) and the handler and wrapper types of
model and tool calls. Used by `replangraph.nodes.execution.middleware` (the chains) and
`replangraph.nodes.execution.adapting` (LangChain's own middleware); imports neither."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command


@dataclass
class ModelRequest:
    """One model call of a subtask (LangChain's ``ModelRequest`` fields; ``messages`` exclude the system message)."""

    model: Any
    messages: list[BaseMessage]
    system_message: SystemMessage | None = None
    tool_choice: Any = None
    tools: list[Any] = field(default_factory=list)
    response_format: Any = None
    state: dict[str, Any] = field(default_factory=dict)
    runtime: Any = None
    model_settings: dict[str, Any] = field(default_factory=dict)

    @property
    def system_prompt(self) -> str | None:
        """The system message's text, if any."""
        return None if self.system_message is None else self.system_message.text

    def override(self, **changes: Any) -> ModelRequest:
        """A copy with ``changes`` applied (``system_prompt=`` sets the system message)."""
        if "system_prompt" in changes:
            prompt = changes.pop("system_prompt")
            changes["system_message"] = None if prompt is None else SystemMessage(prompt)
        return replace(self, **changes)


@dataclass
class ModelResponse:
    """What a model call returned: its messages (one AIMessage, usually) and any structured output."""

    result: list[BaseMessage]
    structured_response: Any = None


ModelHandler = Callable[[ModelRequest], ModelResponse]
ModelWrapper = Callable[[ModelRequest, ModelHandler], Any]
ToolResult = ToolMessage | Command | None
"""A tool call's result; None leaves the call pending (a question the ask node puts to the user)."""
ToolHandler = Callable[[ToolCallRequest], ToolResult]
ToolWrapper = Callable[[ToolCallRequest, ToolHandler], ToolResult]
