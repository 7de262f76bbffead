"""The executor's middleware: LangChain v1's ``wrap_model_call`` / ``wrap_tool_call`` shapes, the chains, and the
executor's own wrappers of a subtask's model and tool calls.

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
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from replangraph.context.excerpts import PAGE_RE
from replangraph.context.fitting import mark_kept, mentions_read_output
from replangraph.context.window_outputs import cut_observation
from replangraph.context.workspace import WORKSPACE
from replangraph.events import EVENTS
from replangraph.llm.aio import (
    acall_with_timeout,
    aguarded,
    ainvoke_model,
    aretrying,
    awaits_natively,
    in_pool,
    off_loop,
)
from replangraph.llm.bounds import with_output_bound
from replangraph.llm.calls import guarded
from replangraph.llm.errors import StepTimeout, is_context_overflow
from replangraph.llm.formats import CUT_CALL
from replangraph.llm.reading import message_text, repair_tool_calls, split_reasoning
from replangraph.llm.replies import note_reply
from replangraph.llm.retries import retrying
from replangraph.llm.time_limits import CALL_WORKERS, StepClock, call_with_timeout
from replangraph.names import EXECUTOR, READ_OUTPUT, TOOLKIT_NAMES, TOOLS
from replangraph.nodes.execution.adapting import (  # noqa: F401  # Hook, run_coroutine, split_middleware: importable here
    Hook,
    async_form,
    run_coroutine,
    split_middleware,
)
from replangraph.nodes.execution.injection import injected_call
from replangraph.nodes.execution.shapes import (  # the request shapes, importable here as before
    ModelHandler,
    ModelRequest,
    ModelResponse,
    ModelWrapper,
    ToolHandler,
    ToolResult,
    ToolWrapper,
)
from replangraph.queue.tasks import Task, preview
from replangraph.tracing import call_label, trace_fields, traced

# --------------------------------------------------------------------------- chains


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


# --------------------------------------------------------------------------- the executor's model wrappers


class StepFailed(Exception):
    """The turn ends the subtask as failed; the message is the error."""


class ContextOverflow(Exception):
    """The provider refused the request as too long (the original error is ``__cause__``)."""


class StepDeadline:
    """Raises ``StepTimeout`` once the step's time (``clock``) runs out; works for model and tool calls."""

    def __init__(self, clock: StepClock):
        self.clock = clock

    def __call__(self, request: Any, handler: Callable) -> Any:
        return call_with_timeout(lambda: handler(request), self.clock.left())

    async def awrap(self, request: Any, handler: Callable) -> Any:
        return await acall_with_timeout(lambda: handler(request), self.clock.left())


def overflow_refused(exc: Exception) -> ModelResponse:
    """Raise `ContextOverflow` for a provider's context overflow, else ``exc`` again."""
    if is_context_overflow(exc):
        raise ContextOverflow(str(exc)) from exc
    raise exc


def refit_overflow(request: ModelRequest, handler: Callable) -> ModelResponse:
    """Turns a provider's context overflow into `ContextOverflow`: the executor sends the window to the compressor."""
    return guarded(lambda: handler(request), overflow_refused)


async def arefit_overflow(request: ModelRequest, handler: Callable) -> ModelResponse:
    """`refit_overflow` on the async path."""
    return await aguarded(lambda: handler(request), overflow_refused)


refit_overflow.awrap = arefit_overflow  # type: ignore[attr-defined]  # its async form (`async_form`)


class Retries:
    """Retries transient errors with the run's settings (the one policy: `replangraph.llm.retries.retrying`);
    no wait runs past the step's deadline, and no try starts after it."""

    def __init__(self, config: Any, clock: StepClock):
        self.config = config
        self.clock = clock

    def __call__(self, request: ModelRequest, handler: Callable) -> ModelResponse:
        # The step deadline outside times the whole chain in one worker thread; here no try starts
        # once the step's time is spent, and no wait runs past it.
        def tried() -> ModelResponse:
            self.check_time()
            return handler(request)

        response, _ = retrying(tried, self.config, self.clock.deadline(), model_call_label(request))
        return response

    async def awrap(self, request: ModelRequest, handler: Callable) -> ModelResponse:
        async def tried() -> ModelResponse:
            self.check_time()
            return await handler(request)

        response, _ = await aretrying(tried, self.config, self.clock.deadline(), model_call_label(request))
        return response

    def check_time(self) -> None:
        """`StepTimeout` once the step's time is spent: no try starts then."""
        left = self.clock.left()
        if left is not None and left <= 0:
            raise StepTimeout("no time left")


def model_call_config(request: ModelRequest) -> Any:
    """The config of a subtask's model call: the executor's node and the subtask (`traced`)."""
    return traced(EXECUTOR, request.state.get("task"))


def model_call_label(request: ModelRequest) -> str:
    """How the log names a subtask's model call."""
    return call_label(trace_fields(EXECUTOR, request.state.get("task")))


def offered_names(tools: list) -> list[str]:
    """Names of tools given as BaseTool or as provider dicts."""
    return [t["name"] if isinstance(t, Mapping) else t.name for t in tools if isinstance(t, Mapping) or t.name]


class RepairToolCalls:
    """Takes reasoning (``<think>``) out of the reply's text (`split_reasoning`: it stays on the message, in
    ``additional_kwargs``), then reads tool calls written as text, misnamed or cut off (`repair_tool_calls`)
    against ``known`` and the request's tools."""

    def __init__(self, known: list[str] = ()):
        self.known = list(known)

    def __call__(self, request: ModelRequest, handler: Callable) -> ModelResponse:
        return self.repaired(request, handler(request))

    async def awrap(self, request: ModelRequest, handler: Callable) -> ModelResponse:
        return self.repaired(request, await handler(request))

    def repaired(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
        """``response`` with its reply's reasoning set apart and its tool calls read."""
        reply = reply_of(response)
        names = list(dict.fromkeys([*offered_names(request.tools), *self.known]))
        return ModelResponse([repair_tool_calls(split_reasoning(reply), names)], response.structured_response)


BOUND_MODELS_KEPT = 64
"""Bindings a `BoundModels` keeps (the least recently used goes): one per model and tool list in use."""


class BoundModels:
    """The model call: ``request.model`` bound to the request's tools (bound once per model and tool list), its
    answer bounded to ``request.state["output_limit"]`` tokens, its client's own retries off when
    ``request.state["client_retries"]`` is False and its client's own timeout at most
    ``request.state["client_timeout"]`` seconds (the step's limit; `with_output_bound`). What was sent is left in
    ``request.state["sent"]`` (messages, tools), to calibrate token counts from the reply's usage.

    A binding is looked up by the identity of the model and of each tool, and keeps them alive, so an
    identity is never reused for another object while its binding is kept (middleware may build tools
    per call)."""

    def __init__(self):
        self.bound: OrderedDict[tuple, tuple[Any, tuple, Any]] = OrderedDict()
        self.lock = threading.Lock()  # parallel subtasks share the executor

    def __call__(self, request: ModelRequest) -> ModelResponse:
        model, sent = self.counted(request)
        reply = model.invoke(sent, model_call_config(request))
        note_reply(sent, reply)
        return ModelResponse([reply])

    async def acall(self, request: ModelRequest) -> ModelResponse:
        """The call on the async path (`ainvoke_model`)."""
        model, sent = self.counted(request)
        reply = await ainvoke_model(model, sent, model_call_config(request))
        note_reply(sent, reply)
        return ModelResponse([reply])

    def counted(self, request: ModelRequest) -> tuple[Any, list[BaseMessage]]:
        """The bound model and the messages to send; the try counted, what is sent noted."""
        request.state["attempts"] = request.state.get("attempts", 0) + 1
        model = self.bind(request)
        system = [request.system_message] if request.system_message is not None else []
        sent = [*system, *request.messages]
        request.state["sent"] = (sent, list(request.tools))
        return model, sent

    def bind(self, request: ModelRequest) -> Any:
        """``request.model`` with its tools, tool choice and settings."""
        settings = dict(request.model_settings)
        if request.tool_choice is not None:
            settings["tool_choice"] = request.tool_choice
        tools = tuple(request.tools)
        limit, quiet = request.state.get("output_limit"), request.state.get("client_retries") is False
        timeout = request.state.get("client_timeout")
        key = (id(request.model), tuple(id(t) for t in tools), repr(sorted(settings.items())), limit, quiet, timeout)
        with self.lock:
            found = self.bound.get(key)
            if found is not None:
                self.bound.move_to_end(key)
                return found[2]
        model = with_output_bound(request.model, limit, client_retries=not quiet, timeout_s=timeout)
        bound = model.bind_tools(list(tools), **settings) if tools else model.bind(**settings)
        with self.lock:
            self.bound[key] = (model, tools, bound)  # kept alive: their ids are not reused while the key is
            while len(self.bound) > BOUND_MODELS_KEPT:
                self.bound.popitem(last=False)
        return bound


class OfferReadOutput:
    """Offers ``reader`` (the read_output tool) once the window points at kept text."""

    def __init__(self, reader: Any):
        self.reader = reader

    def __call__(self, request: ModelRequest, handler: Callable) -> Any:
        return handler(self.offered(request))

    async def awrap(self, request: ModelRequest, handler: Callable) -> Any:
        return await handler(self.offered(request))

    def offered(self, request: ModelRequest) -> ModelRequest:
        """``request``, with the reader among its tools once the window points at kept text."""
        if mentions_read_output(request.state.get("messages") or request.messages):
            request = request.override(tools=[*request.tools, self.reader])
        return request


# --------------------------------------------------------------------------- the executor's tool wrappers


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


# --------------------------------------------------------------------------- what a tool returned


ToolReply = tuple[ToolMessage, dict]
"""A tool call's reply to the agent, and the state update the tool returned (usually {})."""


def command_reply(command: Command, call: dict, task_id: str, tasks: Mapping[str, Task]) -> ToolReply:
    """The reply and state update of a tool that returned ``Command(update=...)``, as LangGraph's
    ``ToolNode`` reads one: its ``messages`` hold the reply. The update may change ``tasks`` and
    end the calling subtask (``windows: {its id: None}``); anything else is refused.

    A reply that names another call is taken as this call's (the window must answer every call).
    """
    name, call_id = call.get("name", ""), call.get("id") or ""
    update = dict(command.update or {})
    messages = update.pop("messages", None) or []
    reply = next((m for m in messages if isinstance(m, ToolMessage)), None)
    windows = update.get("windows") or {}
    problems = [f"key {k!r}" for k in update if k not in ("tasks", "windows", WORKSPACE, EVENTS)]  # effects too
    problems += effect_problems(update)
    problems += [f"window {k!r}" for k, v in windows.items() if k != task_id or v is not None]
    removed = [k for k, v in (update.get("tasks") or {}).items() if v is None]
    problems += [
        f"removal of running task {k!r}" for k in removed if (tasks.get(k) or {}).get("status") == "in_progress"
    ]
    problems += ["goto"] * bool(command.goto) + ["graph"] * (command.graph is not None)
    if problems:
        return refused_command(name, call_id, problems, reply), {}
    if reply is None:
        reply = ToolMessage("Done.", tool_call_id=call_id, name=name)
    elif reply.tool_call_id != call_id or not reply.name:
        reply = reply.model_copy(update={"tool_call_id": call_id, "name": reply.name or name})
    return reply, {k: v for k, v in update.items() if v}


def refused_command(name: str, call_id: str, problems: list[str], reply: ToolMessage | None) -> ToolMessage:
    """The error reply for a tool's ``Command`` this graph cannot apply (``problems``): nothing of it is applied,
    the agent is told why and gets the tool's own reply, if it had one."""
    text = (
        f"Error: tool {name} returned a Command this graph cannot apply ({', '.join(problems)}), so nothing was "
        "updated: a replangraph tool cannot update the graph state directly. It should return its result as its "
        "output (text or a ToolMessage) and keep data for later calls in the store (ToolRuntime.store); a Command "
        "may only queue or end tasks ('tasks', 'windows') and keep outputs ('workspace', 'events')."
    )
    said = message_text(reply) if reply is not None else ""
    if said:
        text += f" Go on with the tool's own reply: {said}"
    return ToolMessage(text, tool_call_id=call_id, name=name, status="error")


def effect_problems(update: Mapping[str, Any]) -> list[str]:
    """What is wrong with the effects a tool's update carries: ``events`` must be a list of objects naming
    their ``event``, and ``workspace`` entries objects by step and key (a bad effect would fail the whole
    tools node when it is applied, and with it every parallel subtask)."""
    events, entries = update.get(EVENTS), update.get(WORKSPACE)
    problems = []
    if events is not None and not (
        isinstance(events, list) and all(isinstance(e, Mapping) and isinstance(e.get("event"), str) for e in events)
    ):
        problems.append("events that are not a list of objects with an 'event' name")
    if entries is not None and not (
        isinstance(entries, Mapping)
        and all(
            isinstance(step, str) and isinstance(keyed, Mapping) and all(isinstance(v, Mapping) for v in keyed.values())
            for step, keyed in entries.items()
        )
    ):
        problems.append("workspace entries that are not objects by step and key")
    return problems


def ends_subtask(update: Mapping, task_id: str) -> bool:
    """Whether a tool's update ends the subtask: its window closed, or its status no longer in progress."""
    status = ((update.get("tasks") or {}).get(task_id) or {}).get("status", "in_progress")
    return task_id in (update.get("windows") or {}) or status != "in_progress"
