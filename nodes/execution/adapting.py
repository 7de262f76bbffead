"""LangChain's own middleware in a subtask: which of its hooks the executor runs (`split_middleware`) and why
it refuses the rest. Used once, when the graph is built; no call of a run goes through here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replangraph.nodes.execution.middleware import ModelWrapper, ToolWrapper


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
    return None


def middleware_name(middleware: Any) -> str:
    """The name a middleware goes by in errors."""
    return getattr(middleware, "name", None) or type(middleware).__name__


def split_middleware(middleware: Sequence[Any]) -> tuple[list[ModelWrapper], list[ToolWrapper]]:
    """The ``wrap_model_call`` and ``wrap_tool_call`` hooks of ``middleware``, in order; ValueError for one
    that does not make sense inside a subtask."""
    from replangraph.nodes.execution.middleware import Hook  # it imports this module

    model_wrappers: list[ModelWrapper] = []
    tool_wrappers: list[ToolWrapper] = []
    hooks = ("wrap_model_call", "wrap_tool_call", "awrap_model_call", "awrap_tool_call")
    for item in middleware:
        if not any(callable(getattr(item, hook, None)) for hook in hooks):
            raise ValueError(
                f"middleware {middleware_name(item)} has neither wrap_model_call nor wrap_tool_call (nor their async "
                "forms): pass an AgentMiddleware, or an object with one of those methods (request, handler) -> response"
            )
        why = refusal(item)
        if why:
            raise ValueError(f"middleware {middleware_name(item)} cannot wrap a subtask's calls: {why}")
        base = langchain_base(item)
        for hook, wrappers in (("wrap_model_call", model_wrappers), ("wrap_tool_call", tool_wrappers)):
            sync = getattr(item, hook) if overrides(item, base, hook) else None
            asynchronous = getattr(item, "a" + hook) if overrides(item, base, "a" + hook) else None
            if asynchronous is None and sync is not None:
                wrappers.append(sync)  # the async path runs it in a worker thread
            elif asynchronous is not None:
                wrappers.append(Hook(sync, asynchronous))
    return model_wrappers, tool_wrappers
