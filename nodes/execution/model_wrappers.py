"""The executor's own wrappers of a subtask's model call (their order: `replangraph.nodes.execution.middleware`):
the step deadline, the overflow refit, the offer of read_output, the retries, the repair of tool calls written as
text, and the model bounded for the call."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage

from replangraph.context.fitting import mentions_read_output
from replangraph.llm.aio import (
    acall_with_timeout,
    aguarded,
    ainvoke_model,
    aretrying,
)
from replangraph.llm.bounds import with_output_bound
from replangraph.llm.calls import guarded
from replangraph.llm.errors import StepTimeout, is_context_overflow
from replangraph.llm.reading import repair_tool_calls, split_reasoning
from replangraph.llm.replies import note_reply
from replangraph.llm.retries import retrying
from replangraph.llm.time_limits import StepClock, call_with_timeout
from replangraph.names import EXECUTOR
from replangraph.nodes.execution.adapting import (  # noqa: F401  # Hook, run_coroutine, split_middleware: importable here
    Hook,
    async_form,
    run_coroutine,
    split_middleware,
)
from replangraph.nodes.execution.middleware import reply_of
from replangraph.nodes.execution.shapes import (  # the request shapes, importable here as before
    ModelRequest,
    ModelResponse,
)
from replangraph.tracing import call_label, trace_fields, traced


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
