"""Graph factory for LangGraph Studio / ``langgraph dev`` (see langgraph.json).

The model comes from the environment: OPENAI_API_KEY, OPENAI_BASE_URL and
REPLANGRAPH_MODEL. Loading the graph needs no key; the first model call does.
Without REPLANGRAPH_MODEL (or a ``model`` in ``configurable``), a base URL's
server is asked for its models (``GET /models``) and its only model is used;
a server that lists several or none, or does not answer yet, gets gpt-4o-mini
(loading the graph never fails on it) and is asked again at the next run,
while a model once found is remembered as long as the process runs. ``chat_model_from_env`` called on the
server's event loop (your own factory) asks at the model's first request instead, never on the loop.
Your tools and agent types come from REPLANGRAPH_TOOLS (``module:attr``, comma
separated: a tool, a function or a list of them) and REPLANGRAPH_AGENTS
(``module:attr``: a dict of agent type to AgentProfile, or to Team for a team). ``make_demo_graph`` is
the offline demo scenario (scripted model), so Studio shows a full run without a key.
Limits are set per assistant or per run through the context form (the
graph's context schema is AgentConfig); ``configurable`` keys named like its
fields, and ``model``, still work, but not in the same run as ``context`` (the
server refuses a run that sets both).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from pydantic import Field

from replangraph import build_graph
from replangraph.app.demo import build_demo_graph
from replangraph.app.loading import agents_in, load_attr
from replangraph.app.server import (
    KEY_ENV,
    MODEL_ENV,
    NoModel,
    ServerDown,
    env_base_url,
    listed_models,
    without_query,
)
from replangraph.config import AgentConfig

DEFAULT_MODEL = "gpt-4o-mini"


def _api_key(base_url: str | None = None) -> str:
    key = os.environ.get(KEY_ENV)
    if key:
        return key
    if env_base_url(base_url):
        return "not-needed"  # local OpenAI-compatible servers ignore the key
    raise RuntimeError("OPENAI_API_KEY is not set: export it (or OPENAI_BASE_URL for a local server) to call a model")


@functools.lru_cache(maxsize=32)
def _only_model(url: str) -> str:
    """The one model the server at ``url`` lists; LookupError (not cached) when it lists none or several."""
    models, note = listed_models(url)
    if not models or len(models) > 1:
        raise LookupError(note or f"it serves {len(models)} models")
    return models[0]


def served_model(url: str) -> str | None:
    """The only model the server at ``url`` lists, else None (it lists none or several, refuses the key, or does
    not answer). Only a found model is cached: a server asked before it was up is asked again next time."""
    try:
        return _only_model(url)
    except (LookupError, NoModel, ServerDown):
        return None


class ServedChatOpenAI(ChatOpenAI):
    """ChatOpenAI that asks its server for the model at its first request, in the request's thread (or a
    worker thread for an async one), not where it was built: built on an event loop (a ``langgraph.json``
    factory), asking there would block the loop. Until a model is found it asks again at each request
    and uses its ``model`` (gpt-4o-mini)."""

    models_url: str | None = Field(default=None, exclude=True)
    """The server to ask (``GET /models``) for its only model; None once found."""

    def use_served_model(self) -> None:
        if self.models_url and (found := served_model(self.models_url)):
            self.model_name, self.models_url = found, None

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        self.use_served_model()
        return super()._generate(*args, **kwargs)

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        self.use_served_model()
        yield from super()._stream(*args, **kwargs)

    async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.to_thread(self.use_served_model)
        return await super()._agenerate(*args, **kwargs)

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        await asyncio.to_thread(self.use_served_model)
        async for chunk in super()._astream(*args, **kwargs):
            yield chunk


def on_event_loop() -> bool:
    """Whether this thread runs an event loop (where nothing may block: ``langgraph dev`` checks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def chat_model_from_env(model: str | None = None, base_url: str | None = None) -> ChatOpenAI:
    """ChatOpenAI for ``model`` (else $REPLANGRAPH_MODEL, else with a base URL the one model its server lists,
    else gpt-4o-mini) at ``base_url`` (else $OPENAI_BASE_URL, else OpenAI); the key is read at call time.
    Called on an event loop (a factory ``langgraph dev`` calls), it does not ask the server there: the model
    (a `ServedChatOpenAI`) asks at its first request.

    Its client does not retry (``max_retries=0``): replangraph's own policy does, once per try.
    """
    url = env_base_url(base_url)
    name = model or os.environ.get(MODEL_ENV)
    settings: dict[str, Any] = {"api_key": lambda: _api_key(url), "base_url": url, "max_retries": 0}
    if url and urlsplit(url).query:  # the client appends its paths to the base URL: the query goes on its own
        settings["base_url"], settings["default_query"] = without_query(url)
    if not name and url and on_event_loop():
        return ServedChatOpenAI(model=DEFAULT_MODEL, models_url=url, **settings)
    return ChatOpenAI(model=name or (url and served_model(url)) or DEFAULT_MODEL, **settings)


def config_from_configurable(configurable: dict) -> AgentConfig:
    """AgentConfig from the ``configurable`` keys that name its fields."""
    fields = {k: v for k, v in configurable.items() if k in AgentConfig.model_fields}
    return AgentConfig(**fields)


def load_tools(specs: list[str], what: str = "tools") -> list:
    """Tools named ``module:attr`` (a tool, a function, or a list of them)."""
    tools: list = []
    for spec in specs:
        found = load_attr(spec, what)
        tools.extend(found if isinstance(found, list | tuple) else [found])
    return tools


def tools_from_env() -> list:
    """The tools named in $REPLANGRAPH_TOOLS (comma separated ``module:attr``)."""
    specs = [s for s in os.environ.get("REPLANGRAPH_TOOLS", "").split(",") if s.strip()]
    return load_tools(specs, "REPLANGRAPH_TOOLS")


def agents_from_env() -> dict | None:
    """The agent types named in $REPLANGRAPH_AGENTS (``module:attr``: a dict of agent type to AgentProfile or
    Team), or None when it is not set."""
    spec = os.environ.get("REPLANGRAPH_AGENTS", "").strip()
    return agents_in(load_attr(spec, "REPLANGRAPH_AGENTS"), "REPLANGRAPH_AGENTS") if spec else None


def graph_from_env(config: RunnableConfig):
    """The graph `make_graph` serves, built here and now: the model, tools and agent types from the environment,
    ``model`` and AgentConfig's fields from ``configurable``; compiled without a checkpointer."""
    configurable = dict((config or {}).get("configurable") or {})
    model = chat_model_from_env(configurable.get("model"))
    return build_graph(
        model, tools=tools_from_env(), agents=agents_from_env(), config=config_from_configurable(configurable)
    )


def make_graph(config: RunnableConfig):
    """Build the graph for the LangGraph server, compiled without a checkpointer (the server keeps one).

    Called in a running event loop (the server calls it on its loop, once per run), it returns an awaitable
    instead, which the server awaits: the graph is built in a worker thread, since importing the tools and
    asking the model server for its model block, and ``langgraph dev`` refuses blocking calls on its loop.
    """
    return asyncio.to_thread(graph_from_env, config) if on_event_loop() else graph_from_env(config)


def make_demo_graph(config: RunnableConfig):
    """The offline demo (a scripted model reading the bundled catalogue), for Studio without a key."""
    return build_demo_graph(config_from_configurable(dict((config or {}).get("configurable") or {})))
