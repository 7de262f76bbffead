"""What a subtask's tool call gets injected, as LangGraph's ``ToolNode`` injects it.

A tool may declare, beside the arguments the model fills:

- ``runtime: ToolRuntime``: the call's `tool_runtime` (state view, run context, store, stream writer, config, call id);
- ``Annotated[dict, InjectedState]``: the subtask's state view (`subtask_view`), or one key of it with
  ``InjectedState("messages")``;
- ``Annotated[BaseStore, InjectedStore()]``: the graph's store;
- ``Annotated[str, InjectedToolCallId]``: the call's id (langchain-core fills it itself from the tool call).

The model never sees them: a tool's ``tool_call_schema``, what models are bound to, leaves injected arguments out.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.tools import BaseTool
from langchain_core.tools.base import get_all_basemodel_annotations
from langgraph.config import get_config
from langgraph.prebuilt import InjectedState, InjectedStore, ToolRuntime
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import get_runtime
from pydantic import BaseModel


def subtask_view(task_id: str, messages: Sequence[Any], tasks: Mapping[str, Any], goal: str) -> dict[str, Any]:
    """The state a subtask's tool sees (``InjectedState``, ``ToolRuntime.state``) and its ``wrap_tool_call``
    middleware gets as ``request.state``: ``messages`` (the subtask's window: for a call to the agent's own tools,
    which runs as a task beside the turn's other calls, the window as the model saw it; for ``read_output``, this
    turn's earlier replies included), ``task_id``, ``task`` (its queue entry), ``tasks`` (the whole queue; for a
    call run in another process, as on Temporal, the subtask and those it depends on, as `crossing_view` cuts it)
    and ``goal`` (the run's goal). It is read-only by contract: the graph's state is changed by what a tool
    returns, never by writing here."""
    return {"messages": list(messages), "task_id": task_id, "task": tasks[task_id], "tasks": tasks, "goal": goal}


def tool_runtime(state: Any, tool_call_id: str | None, tools: Sequence[BaseTool] = ()) -> ToolRuntime:
    """The ``ToolRuntime`` of one tool call, built as ``ToolNode`` builds it: the run's context, store and stream
    writer (LangGraph's ``get_runtime()``) and the tools node's config; outside a graph run no context, no store,
    a stream writer that drops what it gets and an empty config."""
    try:
        runtime: Any = get_runtime()
    except (RuntimeError, KeyError):  # no run, or a runnable's config outside a graph (a tool invoked alone)
        runtime = None
    try:
        config = get_config()
    except RuntimeError:
        config = {}
    return ToolRuntime(
        state=state,
        context=getattr(runtime, "context", None),
        config=config,
        stream_writer=getattr(runtime, "stream_writer", None) or _drop,
        tool_call_id=tool_call_id,
        store=getattr(runtime, "store", None),
        tools=list(tools),
        execution_info=getattr(runtime, "execution_info", None),
        server_info=getattr(runtime, "server_info", None),
    )


def _drop(_: Any) -> None:
    """A stream writer outside a graph run: writes nowhere."""


# Hand-written: ToolNode's own injection (`ToolNode._inject_tool_args`, `_get_all_injected_args`) is private and
# bound to a ToolNode instance. What is reused is public: the markers (`ToolRuntime`, `InjectedState`,
# `InjectedStore`), langchain-core's `get_all_basemodel_annotations`, and ``tool_call_schema`` to tell injected
# arguments (hidden from the model) from the model's own.


@dataclass(frozen=True)
class Injections:
    """Which arguments of a tool are injected, and from where."""

    state: dict[str, str | None]
    """Argument -> the state view's key it gets (None: the whole view)."""
    store: str | None
    runtime: str | None
    hidden: frozenset[str]
    """Every injected argument (InjectedToolCallId ones too): a value the model wrote for one is dropped."""
    optional: frozenset[str]
    """Injected arguments with a default: left out when the view lacks their key."""


NO_INJECTIONS = Injections({}, None, None, frozenset(), frozenset())


def injections(tool: BaseTool) -> Injections:
    """What ``tool`` asks to be injected, read from its input schema's annotations."""
    schema = tool.get_input_schema()
    visible = tool.tool_call_schema
    if not (_is_model(schema) and _is_model(visible)):  # a JSON-schema tool: nothing to inject
        return NO_INJECTIONS
    return _schema_injections(schema, visible)


@functools.lru_cache(maxsize=256)  # a tool's schema classes stay the same objects: read them once
def _schema_injections(schema: type[BaseModel], visible: type[BaseModel]) -> Injections:
    """What a tool with input schema ``schema`` and model-facing schema ``visible`` asks to be injected."""
    annotations = get_all_basemodel_annotations(schema)
    hidden = frozenset(annotations) - frozenset(visible.model_fields)
    if not hidden:
        return NO_INJECTIONS
    state: dict[str, str | None] = {}
    store = runtime = None
    for name in hidden:
        annotation = annotations[name]
        if (marker := _marker(annotation, InjectedState)) is not None:
            state[name] = getattr(marker, "field", None)  # the class itself (no field): the whole view
        elif _marker(annotation, InjectedStore) is not None:
            store = name
        elif name == "runtime" or _is_runtime(annotation):
            runtime = name
    fields = schema.model_fields
    optional = frozenset(n for n in state if n in fields and not fields[n].is_required())
    return Injections(state, store, runtime, hidden, optional)


def injected_call(request: ToolCallRequest) -> dict[str, Any]:
    """``request.tool_call`` as a ``ToolCall`` for ``request.tool``, its injected arguments set from
    ``request.runtime`` (built from ``request.state`` when the request carries none). The model's own values
    for injected arguments are dropped, as ``ToolNode`` drops them: the model cannot forge them.

    Raises ValueError for what cannot be injected (no store, a state key the view lacks): the caller's error
    handling turns it into an error reply for the agent."""
    call = {**request.tool_call, "type": "tool_call"}
    wanted = injections(request.tool)
    if not wanted.hidden:
        return call
    runtime = request.runtime
    if not isinstance(runtime, ToolRuntime):  # a request built without one (a test, a middleware's own)
        runtime = tool_runtime(request.state, call.get("id"))
    args = {k: v for k, v in (call.get("args") or {}).items() if k not in wanted.hidden}
    view = runtime.state if isinstance(runtime.state, Mapping) else {}
    for name, key in wanted.state.items():
        if key is None:
            args[name] = runtime.state
        elif key in view:
            args[name] = view[key]
        elif name not in wanted.optional:
            raise ValueError(
                f"tool {call.get('name')!r} asks for state key {key!r}, which a subtask's state does not hold "
                f"(it holds {', '.join(view)})"
            )
    if wanted.store is not None:
        if runtime.store is None:
            raise ValueError(
                f"tool {call.get('name')!r} needs a store (InjectedStore): build the graph with build_graph(store=...)"
            )
        args[wanted.store] = runtime.store
    if wanted.runtime is not None:
        args[wanted.runtime] = runtime
    return {**call, "args": args}


def _is_model(schema: Any) -> bool:
    return isinstance(schema, type) and issubclass(schema, BaseModel)


def _marker(annotation: Any, kind: type) -> Any:
    """The ``kind`` marker (an instance, or the class itself) in an ``Annotated`` annotation, also inside an
    optional one (``Annotated[...] | None``); None if it has none."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        for arg in typing.get_args(annotation)[1:]:
            if isinstance(arg, kind) or (isinstance(arg, type) and issubclass(arg, kind)):
                return arg
    if origin is typing.Union or origin is types.UnionType:
        return next((m for a in typing.get_args(annotation) if (m := _marker(a, kind)) is not None), None)
    return None


def _is_runtime(annotation: Any) -> bool:
    """Whether ``annotation`` is ``ToolRuntime`` (or ``ToolRuntime[Context, State]``, or a subclass)."""
    kind = typing.get_origin(annotation) or annotation
    return isinstance(kind, type) and issubclass(kind, ToolRuntime)
