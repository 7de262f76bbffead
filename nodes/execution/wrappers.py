"""The executor's own wrappers of a subtask's model and tool calls (LangChain's ``wrap_*`` signatures).

Model calls, outermost first (see `model_chain`):
  iteration cap   - sees the final reply, after every retry and fallback, and the turn's whole count;
  step deadline   - one limit for everything below it, retry waits and fallbacks included;
  overflow refit  - a context overflow, from any model below, goes to the compressor;
  offers          - read_output, then the features' tools (ask_user): user middleware sees them;
  user middleware - ``build_graph(middleware=...)``, first outermost;
  retries         - transient errors of the one model the request names;
  tool-call repair- on each raw reply, against the tools of the request;
  the model call  - counted in ``request.state["attempts"]``.

Tool calls, outermost first (see `tool_chain`):
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

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.types import Command

from replangraph.context.fitting import PAGE_RE
from replangraph.context.kept import READ_OUTPUT, cut_observation, mark_kept
from replangraph.llm.calls import StepClock, StepTimeout, call_with_timeout, guarded, is_context_overflow, retrying
from replangraph.llm.reading import all_tool_calls, message_text, repair_tool_calls
from replangraph.middleware import ModelRequest, ModelResponse, ToolCallRequest, reply_of, tool_reply, with_tool_reply
from replangraph.names import TOOLKIT_NAMES
from replangraph.queue.tasks import preview


class StepFailed(Exception):
    """The turn ends the subtask as failed; the message is the error."""


class ContextOverflow(Exception):
    """The provider refused the request as too long (the original error is ``__cause__``)."""


def calls_so_far(request: ModelRequest) -> int:
    """The subtask's model calls, this turn's included."""
    return (request.state.get("task") or {}).get("model_calls", 0) + request.state.get("attempts", 0)


class IterationCap:
    """Fails the subtask when a reply still calls tools after ``limit`` model calls."""

    def __init__(self, limit: int):
        self.limit = limit

    def __call__(self, request: ModelRequest, handler: Callable) -> ModelResponse:
        response = handler(request)
        if all_tool_calls(reply_of(response)) and calls_so_far(request) >= self.limit:
            raise StepFailed(f"no final answer after max_step_iterations={self.limit} model turns")
        return response


class StepDeadline:
    """Raises ``StepTimeout`` once the step's time (``clock``) runs out; works for model and tool calls."""

    def __init__(self, clock: StepClock):
        self.clock = clock

    def __call__(self, request: Any, handler: Callable) -> Any:
        return call_with_timeout(lambda: handler(request), self.clock.left())


def refit_overflow(request: ModelRequest, handler: Callable) -> ModelResponse:
    """Turns a provider's context overflow into `ContextOverflow`: the executor sends the window to the compressor."""

    def refused(exc: Exception) -> ModelResponse:
        if is_context_overflow(exc):
            raise ContextOverflow(str(exc)) from exc
        raise exc

    return guarded(lambda: handler(request), refused)


class Retries:
    """Retries transient errors with the run's settings (the one policy: `replangraph.llm.calls.retrying`);
    no wait runs past the step's deadline, and no try starts after it."""

    def __init__(self, config: Any, clock: StepClock):
        self.config = config
        self.clock = clock

    def __call__(self, request: ModelRequest, handler: Callable) -> ModelResponse:
        # The step deadline outside times the whole chain in one worker thread; here no try starts
        # once the step's time is spent, and no wait runs past it.
        def tried() -> ModelResponse:
            left = self.clock.left()
            if left is not None and left <= 0:
                raise StepTimeout("no time left")
            return handler(request)

        response, _ = retrying(tried, self.config, deadline=self.clock.deadline())
        return response


def offered_names(tools: list) -> list[str]:
    """Names of tools given as BaseTool or as provider dicts."""
    return [t["name"] if isinstance(t, Mapping) else t.name for t in tools if isinstance(t, Mapping) or t.name]


class RepairToolCalls:
    """Reads tool calls written as text or misnamed in the reply (`repair_tool_calls`) against ``known``
    and the request's tools."""

    def __init__(self, known: list[str] = ()):
        self.known = list(known)

    def __call__(self, request: ModelRequest, handler: Callable) -> ModelResponse:
        response = handler(request)
        reply = reply_of(response)
        names = list(dict.fromkeys([*offered_names(request.tools), *self.known]))
        return ModelResponse([repair_tool_calls(reply, names)], response.structured_response)


BOUND_MODELS_KEPT = 64
"""Bindings a `BoundModels` keeps (the least recently used goes): one per model and tool list in use."""


class BoundModels:
    """The model call: ``request.model`` bound to the request's tools (bound once per model and tool list).

    A binding is looked up by the identity of the model and of each tool, and keeps them alive, so an
    identity is never reused for another object while its binding is kept (middleware may build tools
    per call)."""

    def __init__(self):
        self.bound: OrderedDict[tuple, tuple[Any, tuple, Any]] = OrderedDict()
        self.lock = threading.Lock()  # parallel subtasks share the executor

    def __call__(self, request: ModelRequest) -> ModelResponse:
        request.state["attempts"] = request.state.get("attempts", 0) + 1
        model = self.bind(request)
        system = [request.system_message] if request.system_message is not None else []
        return ModelResponse([model.invoke([*system, *request.messages])])

    def bind(self, request: ModelRequest) -> Any:
        """``request.model`` with its tools, tool choice and settings."""
        settings = dict(request.model_settings)
        if request.tool_choice is not None:
            settings["tool_choice"] = request.tool_choice
        tools = tuple(request.tools)
        key = (id(request.model), tuple(id(t) for t in tools), repr(sorted(settings.items())))
        with self.lock:
            found = self.bound.get(key)
            if found is not None:
                self.bound.move_to_end(key)
                return found[2]
        model = request.model
        bound = model.bind_tools(list(tools), **settings) if tools else model.bind(**settings)
        with self.lock:
            self.bound[key] = (model, tools, bound)  # kept alive: their ids are not reused while the key is
            while len(self.bound) > BOUND_MODELS_KEPT:
                self.bound.popitem(last=False)
        return bound


# --------------------------------------------------------------------------- tool calls


class RefusalGuard:
    """Notes a toolkit or ask_user refusal repeated word for word from the window (``request.state["messages"]``);
    the tools node then ends the subtask."""

    def __init__(self, repeats: Callable[[list, ToolMessage], bool]):
        self.repeats = repeats
        self.refused: tuple[dict, ToolMessage] | None = None

    def __call__(self, request: ToolCallRequest, handler: Callable) -> Any:
        result = handler(request)
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
        result = handler(request)
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


def errors_as_replies(request: ToolCallRequest, handler: Callable) -> Any:
    """A crashing tool or bad arguments: tell the agent in an error reply, keep the run."""

    def reply(exc: Exception) -> ToolMessage:
        name, call_id = request.tool_call.get("name", ""), request.tool_call.get("id") or ""
        return ToolMessage(f"Error: {type(exc).__name__}: {exc}", tool_call_id=call_id, name=name, status="error")

    return guarded(lambda: handler(request), reply)


def invoke_tool(known: Callable[[], list[str]]) -> Callable[[ToolCallRequest], ToolMessage | Command]:
    """The tool call: unknown tools and unreadable arguments become error messages; a tool's exception
    goes up through the user's middleware (LangChain's ToolRetryMiddleware retries it) to `errors_as_replies`."""

    def call(request: ToolCallRequest) -> ToolMessage | Command:
        tool_call = request.tool_call
        name, call_id = tool_call.get("name", ""), tool_call.get("id") or ""
        if tool_call.get("type") == "invalid_tool_call":
            text = (
                f"Error: the arguments of this call could not be read ({preview(tool_call.get('error'), 200)}). "
                f"Call {name} again with a JSON object of arguments."
            )
            return ToolMessage(text, tool_call_id=call_id, name=name, status="error")
        if request.tool is None:
            text = f"Error: no tool named {name!r}. Available: {', '.join(sorted(known()))}"
            return ToolMessage(text, tool_call_id=call_id, name=name, status="error")
        reply = request.tool.invoke({**tool_call, "type": "tool_call"})
        if isinstance(reply, ToolMessage | Command):
            return reply
        return ToolMessage(str(reply), tool_call_id=call_id, name=name)

    return call
