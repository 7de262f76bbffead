"""Middleware for the executor's calls: LangChain v1's ``wrap_model_call`` / ``wrap_tool_call`` shapes.

A wrapper is ``wrapper(request, handler) -> result``: it may change the request, call
``handler`` (the next wrapper, in the end the call itself) any number of times, or answer
on its own. Chains compose as LangChain's agent factory does: the first in the list is the
outermost. The request types carry LangChain's field names and ``override(**changes)``,
so LangChain's own middleware runs on them; ``langchain`` itself is not imported here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

__all__ = [
    "ModelRequest",
    "ModelResponse",
    "ToolCallRequest",
    "chain_model_calls",
    "chain_tool_calls",
    "split_middleware",
]


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


def as_response(result: Any) -> ModelResponse:
    """A wrapper's result as a `ModelResponse` (a bare AIMessage, or LangChain's own response types)."""
    if isinstance(result, BaseMessage):
        return ModelResponse([result])
    if hasattr(result, "model_response"):  # LangChain's ExtendedModelResponse
        if getattr(result, "command", None) is not None:
            raise ValueError("a wrap_model_call returned a Command: a subtask's model call cannot update the state")
        result = result.model_response
    if isinstance(result, ModelResponse):
        return result
    return ModelResponse(list(result.result), getattr(result, "structured_response", None))


def reply_of(response: ModelResponse) -> AIMessage:
    """The model's reply in a response: its last AIMessage (any other last message becomes one)."""
    replies = [m for m in response.result if isinstance(m, AIMessage)]
    if replies:
        return replies[-1]
    last = response.result[-1] if response.result else None
    return AIMessage(content=last.content if last is not None else "")


def _model_layer(wrapper: ModelWrapper, inner: ModelHandler, request: ModelRequest) -> ModelResponse:
    return as_response(wrapper(request, inner))


def chain_model_calls(wrappers: Sequence[ModelWrapper], call: ModelHandler) -> ModelHandler:
    """``call`` wrapped by ``wrappers``, the first outermost; every layer hands back a `ModelResponse`."""
    handler = call
    for wrapper in reversed(wrappers):
        handler = functools.partial(_model_layer, wrapper, handler)
    return handler


def chain_tool_calls(wrappers: Sequence[ToolWrapper], call: ToolHandler) -> ToolHandler:
    """``call`` wrapped by ``wrappers``, the first outermost."""
    handler = call
    for wrapper in reversed(wrappers):
        handler = functools.partial(_tool_layer, wrapper, handler)
    return handler


def _tool_layer(wrapper: ToolWrapper, inner: ToolHandler, request: ToolCallRequest) -> ToolResult:
    return wrapper(request, inner)


def tool_reply(result: ToolResult) -> ToolMessage | None:
    """The ToolMessage a tool result carries (a Command's first one), if any."""
    if isinstance(result, ToolMessage):
        return result
    if isinstance(result, Command) and isinstance(result.update, dict):
        return next((m for m in result.update.get("messages") or () if isinstance(m, ToolMessage)), None)
    return None


def with_tool_reply(result: ToolResult, old: ToolMessage, new: ToolMessage) -> ToolResult:
    """``result`` with its reply ``old`` replaced by ``new``."""
    if not isinstance(result, Command):
        return new
    messages = [new if m is old else m for m in result.update.get("messages") or ()]
    return replace(result, update={**result.update, "messages": messages})


# --------------------------------------------------------------------------- LangChain's own middleware

NODE_HOOKS = {
    "before_agent": "it runs once per agent run, and a subtask is no run of its own",
    "after_agent": "it runs once per agent run, and a subtask is no run of its own",
    "before_model": "it is a graph node that updates the agent's state, and a subtask's window is no such state",
    "after_model": "it is a graph node that updates the agent's state, and a subtask's window is no such state",
}
"""LangChain hooks the executor cannot run, and why."""
AGENT_STATE_KEYS = frozenset({"messages", "jump_to", "structured_response"})


def langchain_base(middleware: Any) -> type | None:
    """LangChain's ``AgentMiddleware`` class when ``middleware`` is one (found without importing langchain)."""
    return next(
        (
            c
            for c in type(middleware).__mro__
            if c.__name__ == "AgentMiddleware" and c.__module__.startswith("langchain")
        ),
        None,
    )


def overrides(middleware: Any, base: type | None, hook: str) -> bool:
    """Whether ``middleware`` defines ``hook`` (for a LangChain middleware: other than the base class does)."""
    own = getattr(type(middleware), hook, None)
    return own is not None and (base is None or own is not getattr(base, hook, None))


def refusal(middleware: Any) -> str | None:
    """Why ``middleware`` cannot run inside one subtask, or None when it can."""
    base = langchain_base(middleware)
    for hook, why in NODE_HOOKS.items():
        if overrides(middleware, base, hook) or overrides(middleware, base, "a" + hook):
            return f"it defines {hook}: {why}"
    extra = sorted(set(getattr(getattr(middleware, "state_schema", None), "__annotations__", {})) - AGENT_STATE_KEYS)
    if base is not None and extra:
        return f"its state_schema adds {', '.join(extra)}: a subtask carries no state keys of a middleware's own"
    if getattr(middleware, "tools", None):
        return "it brings tools of its own: give them to build_graph(tools=...) or an AgentProfile"
    for hook in ("wrap_model_call", "wrap_tool_call"):
        if overrides(middleware, base, "a" + hook) and not overrides(middleware, base, hook):
            return f"it defines only a{hook}: the executor calls models and tools synchronously"
    return None


def middleware_name(middleware: Any) -> str:
    """The name a middleware goes by in errors."""
    return getattr(middleware, "name", None) or type(middleware).__name__


def split_middleware(middleware: Sequence[Any]) -> tuple[list[ModelWrapper], list[ToolWrapper]]:
    """The ``wrap_model_call`` and ``wrap_tool_call`` hooks of ``middleware``, in order; ValueError for one
    that does not make sense inside a subtask."""
    model_wrappers: list[ModelWrapper] = []
    tool_wrappers: list[ToolWrapper] = []
    for item in middleware:
        if not any(callable(getattr(item, hook, None)) for hook in ("wrap_model_call", "wrap_tool_call")):
            raise ValueError(
                f"middleware {middleware_name(item)} has neither wrap_model_call nor wrap_tool_call: pass an "
                "AgentMiddleware, or an object with one of those methods (request, handler) -> response"
            )
        why = refusal(item)
        if why:
            raise ValueError(f"middleware {middleware_name(item)} cannot wrap a subtask's calls: {why}")
        base = langchain_base(item)
        if overrides(item, base, "wrap_model_call"):
            model_wrappers.append(item.wrap_model_call)
        if overrides(item, base, "wrap_tool_call"):
            tool_wrappers.append(item.wrap_tool_call)
    return model_wrappers, tool_wrappers
