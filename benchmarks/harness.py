"""Running one agent on one world and measuring it: items recovered, model calls, prompt tokens, wall time.

Tokens come from each reply's ``usage_metadata`` (the scripted personas report
``count_tokens_approximately`` of the request, tool schemas included; a real
endpoint reports its own count), read by a callback handler, so every agent is
measured the same way. The same handler measures how much of the worker requests
a provider could cache: the longest prefix all of them share (`Prefix`).
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import LLMResult

from replangraph import AgentConfig, build_graph

from .worlds import World

WORKER_NODES = {"executor", "agent", "model"}
"""Graph nodes whose model calls do the subtask work (replangraph's executor; ReAct's agent/model node)."""
SUBTASK_MARK = "Your subtask ("
"""Where a replangraph worker request's own subtask text begins (the id, then the instructions)."""


def serialized(messages: list, tools: list | None) -> str:
    """A request as a provider reads it, in the order providers cache it: the system text, the tool
    schemas, then every other message (its type, text and tool calls)."""
    system = [m for m in messages if m.type == "system"]
    parts = [str(m.content) for m in system] + [json.dumps(tools or [], sort_keys=True)]
    for m in messages:
        if m.type != "system":
            calls = json.dumps(getattr(m, "tool_calls", None) or [], sort_keys=True, default=str)
            parts.append(f"{m.type}: {m.content}{calls}")
    return "\n".join(parts)


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if a[:mid] == b[:mid] else (lo, mid)
    return lo


@dataclass
class Prefix:
    """The longest prefix every worker request shares, what providers cache across requests.

    ``share``: that prefix over the requests' length (characters, summed over requests);
    ``breaks_early``: whether it ends before a request's own subtask text (`SUBTASK_MARK`),
    i.e. something subtask-specific sits in the instructions or the tool schemas."""

    first: str = ""
    length: int = -1
    requests: int = 0
    chars: int = 0
    subtask_at: int = -1

    def add(self, text: str) -> None:
        if self.length < 0:
            self.first, self.length = text, len(text)
        else:
            self.length = common_prefix(self.first[: self.length], text)
        self.requests += 1
        self.chars += len(text)
        at = text.find(SUBTASK_MARK)
        if at >= 0:
            self.subtask_at = at if self.subtask_at < 0 else min(self.subtask_at, at)

    @property
    def share(self) -> float:
        return self.length * self.requests / self.chars if self.chars else 0.0

    @property
    def breaks_early(self) -> bool | None:
        """None for agents without subtasks (no request holds `SUBTASK_MARK`)."""
        if self.subtask_at < 0 or self.requests < 2:
            return None
        return self.length < self.subtask_at


class Meter(BaseCallbackHandler):
    """Counts chat model calls (failed ones too) and the prompt tokens of each answered call, by graph node."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompts: list[tuple[str, int]] = []
        self.nodes: dict[UUID, str] = {}
        self.prefix = Prefix()
        self.lock = threading.Lock()

    def on_chat_model_start(self, serialized_model, messages, *, run_id: UUID, metadata=None, **kwargs: Any) -> None:
        node = (metadata or {}).get("langgraph_node", "")
        tools = (kwargs.get("invocation_params") or {}).get("tools")
        with self.lock:
            self.calls += 1
            self.nodes[run_id] = node
            if node in WORKER_NODES and messages:
                self.prefix.add(serialized(messages[0], tools))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        message = getattr(response.generations[0][0], "message", None) if response.generations else None
        usage = getattr(message, "usage_metadata", None) or {}
        with self.lock:
            self.prompts.append((self.nodes.get(run_id, ""), int(usage.get("input_tokens") or 0)))

    @property
    def prompt_tokens(self) -> int:
        return sum(tokens for _, tokens in self.prompts)

    def largest(self, nodes: set[str] | None = None) -> int:
        return max((t for node, t in self.prompts if nodes is None or node in nodes), default=0)


@dataclass
class Outcome:
    """One run of one agent on one world."""

    recovered: int
    size: int
    calls: int
    prompt_tokens: int
    largest_worker_prompt: int
    largest_prompt: int
    wall_s: float
    error: str | None = None
    requests: list[tuple[str, int]] = field(default_factory=list)
    """``(graph node, prompt tokens)`` of every answered model call, in order."""
    prefix: Prefix = field(default_factory=Prefix)
    """The prefix every worker request shares."""
    answer: str = ""
    """The run's final answer ("" when it crashed)."""


def measure(world: World, invoke: Callable[[Meter], str]) -> Outcome:
    """Run ``invoke(meter) -> final answer`` and score it; an exception is a crashed run (nothing recovered)."""
    meter = Meter()
    started = time.perf_counter()
    error = None
    try:
        answer = invoke(meter)
    except Exception as exc:  # a crashed agent recovers nothing; the table says why
        answer, error = "", f"{type(exc).__name__}"
    wall = time.perf_counter() - started
    return Outcome(
        recovered=world.score(answer),
        size=world.size,
        calls=meter.calls,
        prompt_tokens=meter.prompt_tokens,
        largest_worker_prompt=meter.largest(WORKER_NODES),
        largest_prompt=meter.largest(),
        wall_s=wall,
        error=error,
        requests=list(meter.prompts),
        prefix=meter.prefix,
        answer=answer,
    )


def replangraph_agent(verify: bool, **config: Any) -> Callable[[BaseChatModel, World], Outcome]:
    """replangraph with default limits (and the completion check when ``verify``)."""

    def run(model: BaseChatModel, world: World) -> Outcome:
        graph = build_graph(model, tools=world.tools, config=AgentConfig(verify_results=verify, **config))

        def invoke(meter: Meter) -> str:
            state = graph.invoke({"messages": [("user", world.goal)]}, {"callbacks": [meter]})
            return state["final_answer"]

        return measure(world, invoke)

    return run


def react_agent(model: BaseChatModel, world: World) -> Outcome:
    """LangGraph's prebuilt ReAct agent with the world's tools, allowed as many steps as it wants."""
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        # langchain.agents.create_agent is its successor; this one needs no package beyond langgraph.
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(model, world.tools)
    return agent_run(agent, world)


LIMIT_NOTICE = "Model call limits exceeded:"
"""How the message ``ModelCallLimitMiddleware`` ends a run with begins (it is not the model's)."""


def last_text(state: Mapping[str, Any]) -> str:
    """What a ReAct run's model wrote last: the text of its last message, or, when the call budget ended the
    run, of the last one before the middleware's notice (often a turn that called tools, so "")."""
    for message in reversed(state.get("messages") or []):
        if isinstance(message, AIMessage) and not str(message.text).startswith(LIMIT_NOTICE):
            return str(message.text)
    return ""


def agent_run(agent: Any, world: World) -> Outcome:
    """``agent`` (a compiled ReAct-style graph) on ``world``'s goal, measured and scored. The recursion limit is
    out of the way: a budget ends the run through its middleware (one model call is about five supersteps)."""

    def invoke(meter: Meter) -> str:
        return last_text(
            agent.invoke({"messages": [("user", world.goal)]}, {"callbacks": [meter], "recursion_limit": 100_000})
        )

    return measure(world, invoke)


def call_limit(budget: int | None) -> list[Any]:
    """``ModelCallLimitMiddleware`` for ``budget`` model calls (the run then ends with what it has), or none."""
    from langchain.agents.middleware import ModelCallLimitMiddleware

    return [] if budget is None else [ModelCallLimitMiddleware(run_limit=budget, exit_behavior="end")]


def create_agent_baseline(todo_list: bool, budget: int | None = None) -> Callable[[BaseChatModel, World], Outcome]:
    """langchain's ``create_agent`` (a plain ReAct loop), with ``TodoListMiddleware`` (the ``write_todos`` tool and
    its prompt) when ``todo_list``; at most ``budget`` model calls, else as many as it wants."""

    def run(model: BaseChatModel, world: World) -> Outcome:
        from langchain.agents import create_agent
        from langchain.agents.middleware import TodoListMiddleware

        todos = [TodoListMiddleware()] if todo_list else []
        return agent_run(create_agent(model, world.tools, middleware=[*todos, *call_limit(budget)]), world)

    return run


def deepagents_baseline(budget: int | None = None) -> Callable[[BaseChatModel, World], Outcome]:
    """deepagents' ``create_deep_agent`` (todo list, file system, subagents, summarization) with the world's tools;
    at most ``budget`` model calls of the main agent (a subagent's calls are its own), else as many as it wants."""

    def run(model: BaseChatModel, world: World) -> Outcome:
        from deepagents import create_deep_agent

        return agent_run(create_deep_agent(model=model, tools=world.tools, middleware=call_limit(budget)), world)

    return run


deepagents_agent = deepagents_baseline()
"""deepagents with as many model calls as it wants (the persona table's column)."""


def deepagents_available() -> bool:
    try:
        import deepagents  # noqa: F401
    except ImportError:
        return False
    return True


def summarization_agent(
    trigger_tokens: int, keep_messages: int, **middleware: Any
) -> Callable[[BaseChatModel, World], Outcome]:
    """langchain's ``create_agent`` (a plain ReAct loop) with ``SummarizationMiddleware``: summarize once the
    messages reach ``trigger_tokens``, keep the last ``keep_messages``; the same model writes the summaries.
    ``middleware`` overrides the middleware's other arguments (none: its defaults, as a user gets them)."""

    def run(model: BaseChatModel, world: World) -> Outcome:
        from langchain.agents import create_agent
        from langchain.agents.middleware import SummarizationMiddleware

        summarizing = SummarizationMiddleware(
            model=model, trigger=("tokens", trigger_tokens), keep=("messages", keep_messages), **middleware
        )
        agent = create_agent(model, world.tools, middleware=[summarizing])

        def invoke(meter: Meter) -> str:
            state = agent.invoke(
                {"messages": [("user", world.goal)]}, {"callbacks": [meter], "recursion_limit": 100_000}
            )
            return last_text(state)

        return measure(world, invoke)

    return run


def langchain_available() -> bool:
    """Whether langchain 1.x (``create_agent``, ``SummarizationMiddleware``) is installed."""
    try:
        from langchain.agents import create_agent  # noqa: F401
        from langchain.agents.middleware import SummarizationMiddleware  # noqa: F401
    except ImportError:
        return False
    return True
