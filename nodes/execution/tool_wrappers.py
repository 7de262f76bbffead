"""The tools node's own wrappers of a subtask's tool call (their order: `replangraph.nodes.execution.middleware`):
the refusal guard, the output offload, the toolkit run inline, errors as replies, and the call itself."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from replangraph.context.excerpts import PAGE_RE
from replangraph.context.fitting import mark_kept
from replangraph.context.window_outputs import cut_observation
from replangraph.llm.aio import (
    aguarded,
    awaits_natively,
    in_pool,
    off_loop,
)
from replangraph.llm.calls import guarded
from replangraph.llm.formats import CUT_CALL
from replangraph.llm.reading import message_text
from replangraph.llm.time_limits import CALL_WORKERS
from replangraph.names import READ_OUTPUT, TOOLKIT_NAMES, TOOLS
from replangraph.nodes.execution.adapting import (  # noqa: F401  # Hook, run_coroutine, split_middleware: importable here
    Hook,
    async_form,
    run_coroutine,
    split_middleware,
)
from replangraph.nodes.execution.injection import injected_call
from replangraph.nodes.execution.middleware import tool_reply, with_tool_reply
from replangraph.queue.tasks import preview
from replangraph.tracing import traced


class RefusalGuard:
    """Notes a toolkit or ask_user refusal repeated word for word from the window (``request.state["messages"]``);
    the tools node then ends the subtask."""

    def __init__(self, repeats: Callable[[list, ToolMessage], bool]):
        self.repeats = repeats
        self.refused: tuple[dict, ToolMessage] | None = None

    def __call__(self, request: ToolCallRequest, handler: Callable) -> Any:
        return self.noted(request, handler(request))

    async def awrap(self, request: ToolCallRequest, handler: Callable) -> Any:
        return self.noted(request, await handler(request))

    def noted(self, request: ToolCallRequest, result: Any) -> Any:
        """``result``, its reply noted when it repeats a refusal."""
        reply = tool_reply(result)
        if reply is not None and self.refused is None and self.repeats(request.state["messages"], reply):
            self.refused = (request.tool_call, reply)
        return result


class OutputOffload:
    """Cuts a reply longer than ``max_chars``; its full text goes to ``cut`` (key -> text), which the tools node keeps;
    a page read back with read_output is marked kept, never saved again."""

    def __init__(self, task: Any, max_chars: int, taken: Callable[[str], bool], cut: dict[str, str]):
        self.task, self.max_chars, self.taken, self.cut = task, max_chars, taken, cut

    def __call__(self, request: ToolCallRequest, handler: Callable) -> Any:
        return self.offloaded(handler(request))

    async def awrap(self, request: ToolCallRequest, handler: Callable) -> Any:
        result = await handler(request)
        return await off_loop(lambda: self.offloaded(result))  # ``taken`` may read the store

    def offloaded(self, result: Any) -> Any:
        """``result`` with its reply cut to ``max_chars`` (the whole text kept in ``cut``)."""
        reply = tool_reply(result)
        if reply is None:
            return result
        new = reply
        page = PAGE_RE.match(message_text(new)) if new.name == READ_OUTPUT else None
        if page:
            new = mark_kept(new, message_text(new), page.group(1))
        new, key, full_text = cut_observation(new, self.max_chars, self.task["id"], self.taken)
        if full_text is not None:
            self.cut[key] = full_text  # the tools node keeps it, even if a later call in this step crashes
        return with_tool_reply(result, reply, new) if new is not reply else result


class ToolkitInline:
    """Runs replan toolkit calls with ``call`` at once, past the wrappers below (our own fast code)."""

    def __init__(self, call: Callable):
        self.call = call

    def __call__(self, request: ToolCallRequest, handler: Callable) -> Any:
        return self.call(request) if request.tool_call.get("name") in TOOLKIT_NAMES else handler(request)

    async def awrap(self, request: ToolCallRequest, handler: Callable) -> Any:
        """The toolkit runs inline on the async path too (quick code of our own, between two awaits; off the loop
        when the run has a store, which ending a subtask reads: `off_loop`)."""
        if request.tool_call.get("name") in TOOLKIT_NAMES:
            return await off_loop(lambda: self.call(request))
        return await handler(request)


def error_reply(request: ToolCallRequest, exc: Exception) -> ToolMessage:
    """The error reply telling the agent that its call raised ``exc``."""
    name, call_id = request.tool_call.get("name", ""), request.tool_call.get("id") or ""
    return ToolMessage(f"Error: {type(exc).__name__}: {exc}", tool_call_id=call_id, name=name, status="error")


def errors_as_replies(request: ToolCallRequest, handler: Callable) -> Any:
    """A crashing tool or bad arguments: tell the agent in an error reply, keep the run."""
    return guarded(lambda: handler(request), functools.partial(error_reply, request))


async def aerrors_as_replies(request: ToolCallRequest, handler: Callable) -> Any:
    """`errors_as_replies` on the async path."""
    return await aguarded(lambda: handler(request), functools.partial(error_reply, request))


errors_as_replies.awrap = aerrors_as_replies  # type: ignore[attr-defined]  # its async form (`async_form`)


def invoke_tool(known: Callable[[], list[str]]) -> Callable[[ToolCallRequest], ToolMessage | Command]:
    """The tool call, its injected arguments set (`injected_call`): unknown tools and unreadable arguments become
    error messages; a tool's exception goes up through the user's middleware (LangChain's ToolRetryMiddleware
    retries it) to `errors_as_replies`."""

    def call(request: ToolCallRequest) -> ToolMessage | Command:
        refused = unusable_call(request, known)
        if refused is not None:
            return refused
        return as_tool_result(
            request, request.tool.invoke(injected_call(request), traced(TOOLS, request.state.get("task")))
        )

    return call


def ainvoke_tool(known: Callable[[], list[str]], workers: int) -> Callable:
    """`invoke_tool` on the async path: a tool with async code of its own is awaited (``ainvoke``); a sync one
    runs in replangraph's pool of at least ``workers`` threads (LangChain's default would be asyncio's default
    pool, cores + 4 threads, however many subtasks run at once)."""

    async def call(request: ToolCallRequest) -> ToolMessage | Command:
        refused = unusable_call(request, known)
        if refused is not None:
            return refused
        tool, tool_call = request.tool, injected_call(request)
        config = traced(TOOLS, request.state.get("task"))
        if awaits_natively(tool):
            return as_tool_result(request, await tool.ainvoke(tool_call, config))
        reply = await in_pool(lambda: tool.invoke(tool_call, config), max(workers, CALL_WORKERS))
        return as_tool_result(request, reply)

    return call


def unusable_call(request: ToolCallRequest, known: Callable[[], list[str]]) -> ToolMessage | None:
    """The error reply for a call that cannot run (cut off, unreadable arguments, unknown tool), else None."""
    tool_call = request.tool_call
    name, call_id = tool_call.get("name", ""), tool_call.get("id") or ""
    if tool_call.get("type") == "invalid_tool_call" and CUT_CALL in str(tool_call.get("error")):
        return ToolMessage(f"Error: {tool_call['error']}.", tool_call_id=call_id, name=name, status="error")
    if tool_call.get("type") == "invalid_tool_call":
        text = (
            f"Error: the arguments of this call could not be read ({preview(tool_call.get('error'), 200)}). "
            f"Call {name} again with a JSON object of arguments."
        )
        return ToolMessage(text, tool_call_id=call_id, name=name, status="error")
    if request.tool is None:
        text = f"Error: no tool named {name!r}. Available: {', '.join(sorted(known()))}"
        return ToolMessage(text, tool_call_id=call_id, name=name, status="error")
    return None


def as_tool_result(request: ToolCallRequest, reply: Any) -> ToolMessage | Command:
    """What a tool returned, as a ToolMessage (or the Command it returned)."""
    if isinstance(reply, ToolMessage | Command):
        return reply
    return ToolMessage(
        str(reply), tool_call_id=request.tool_call.get("id") or "", name=request.tool_call.get("name", "")
    )
