"""LangChain's own middleware in a subtask: which of its hooks the executor runs (`split_middleware`, used once,
when the graph is built) and why it refuses the rest; and how a hook written for one path runs on the other
(`Hook`, `async_form`). A sync run without user middleware runs none of it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from replangraph.llm.aio import in_pool
from replangraph.llm.time_limits import call_pool
from replangraph.nodes.execution.shapes import ModelWrapper, ToolWrapper

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


# --------------------------------------------------------------------------- a hook on the other path


def async_form(wrapper: Any) -> Callable:
    """A wrapper's async form: its ``awrap`` (replangraph's wrappers, a middleware's `Hook`), else the sync wrapper
    run in a worker thread whose handler awaits the rest of the chain on the event loop."""
    own = getattr(wrapper, "awrap", None)
    if own is not None:
        return own

    async def bridged(request: Any, handler: Callable) -> Any:
        loop = asyncio.get_running_loop()

        def sync_handler(inner_request: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(handler(inner_request), loop).result()

        return await in_pool(lambda: wrapper(request, sync_handler))

    return bridged


def run_coroutine(coroutine: Any) -> Any:
    """Run ``coroutine`` to its end from sync code: in a new event loop, in a worker thread when this thread
    runs a loop already (``graph.invoke`` in a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    return call_pool().submit(asyncio.run, coroutine).result()


class Hook:
    """One hook of a user's middleware (``wrap_model_call`` or ``wrap_tool_call``) in both forms: ``sync`` and
    ``asynchronous`` (LangChain's ``awrap_*``), either of them None. The sync path runs an async-only hook in an
    event loop of its own; the async path runs a sync-only hook as `async_form` does."""

    def __init__(self, sync: Callable | None, asynchronous: Callable | None):
        self.sync, self.asynchronous = sync, asynchronous

    def __call__(self, request: Any, handler: Callable) -> Any:
        if self.sync is not None:
            return self.sync(request, handler)

        async def ahandler(inner_request: Any) -> Any:
            return await in_pool(lambda: handler(inner_request))

        return run_coroutine(self.asynchronous(request, ahandler))  # type: ignore[misc]  # one of them is set

    async def awrap(self, request: Any, handler: Callable) -> Any:
        if self.asynchronous is not None:
            return await self.asynchronous(request, handler)
        return await async_form(self.sync)(request, handler)
