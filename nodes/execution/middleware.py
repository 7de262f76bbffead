"""The executor's middleware: LangChain v1's ``wrap_model_call`` / ``wrap_tool_call`` shapes, the chains, and the
order of the wrappers of a subtask's model and tool calls (the executor's own: ``model_wrappers.py``,
``tool_wrappers.py``; what a tool returned is read in ``tool_returns.py``).

A wrapper is ``wrapper(request, handler) -> result``: it may change the request, call ``handler`` (the next
wrapper, in the end the call itself) any number of times, or answer on its own. Chains compose as LangChain's
agent factory does: the first in the list is the outermost. The request types carry LangChain's field names
and ``override(**changes)``, so LangChain's own middleware runs on them; ``langchain`` itself is not imported
here. `split_middleware` (in ``adapting.py``: it runs once, at build time) takes the hooks of the user's
middleware and refuses what cannot run in a subtask; `Hook` and `async_form` (there too) run a hook written for one
path on the other.

Model calls, outermost first (see `Executor.chain`):
  step deadline   - one limit for everything below it, retry waits and fallbacks included;
  overflow refit  - a context overflow, from any model below, goes to the compressor;
  offers          - read_output, then the features' tools (ask_user): user middleware sees them;
  user middleware - ``build_graph(middleware=...)``, first outermost;
  retries         - transient errors of the one model the request names;
  tool-call repair- on each raw reply: reasoning out of its text, calls written as text or cut read
                    against the tools of the request;
  the model call  - counted in ``request.state["attempts"]``.

Tool calls, outermost first (see `ToolRunner.chain`):
  refusal guard   - sees every reply, toolkit and ask_user refusals included;
  output offload  - cuts every long reply, toolkit ones included, as the tools node always did;
  features        - question screening (ask_user): answered inline, or left pending for the ask node;
  toolkit         - replan tools run inline: never in the timeout pool, so their update never lands late;
  step deadline   - the rest run in the pool with what is left of the step's time;
  errors          - a tool's exception becomes an error reply, after the user's middleware saw it;
  user middleware - ``build_graph(middleware=...)``, first outermost;
  the tool call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from replangraph.nodes.execution.adapting import (  # noqa: F401  # Hook, run_coroutine, split_middleware: importable here
    Hook,
    async_form,
    run_coroutine,
    split_middleware,
)
from replangraph.nodes.execution.shapes import (  # the request shapes, importable here as before
    ModelHandler,
    ModelRequest,
    ModelResponse,
    ModelWrapper,
    ToolHandler,
    ToolResult,
    ToolWrapper,
)


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


async def _amodel_layer(wrapper: Any, inner: Any, request: ModelRequest) -> ModelResponse:
    return as_response(await wrapper(request, inner))


async def _atool_layer(wrapper: Any, inner: Any, request: ToolCallRequest) -> ToolResult:
    return await wrapper(request, inner)


def achain_model_calls(wrappers: Sequence[ModelWrapper], call: Callable) -> Callable:
    """`chain_model_calls` for the async path: each wrapper's async form (`async_form`) around the async ``call``."""
    handler = call
    for wrapper in reversed(wrappers):
        handler = functools.partial(_amodel_layer, async_form(wrapper), handler)
    return handler


def achain_tool_calls(wrappers: Sequence[ToolWrapper], call: Callable) -> Callable:
    """`chain_tool_calls` for the async path: each wrapper's async form (`async_form`) around the async ``call``."""
    handler = call
    for wrapper in reversed(wrappers):
        handler = functools.partial(_atool_layer, async_form(wrapper), handler)
    return handler


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
