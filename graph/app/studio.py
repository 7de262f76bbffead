"""Graph factory for LangGraph Studio / ``langgraph dev`` (see langgraph.json).

The model comes from the environment: OPENAI_API_KEY, OPENAI_BASE_URL and
REPLANGRAPH_MODEL. Loading the graph needs no key; the first model call does.
Limits are set per assistant or per run through the context form (the
graph's context schema is AgentConfig); ``configurable`` keys named like its
fields, and ``model``, still work.
"""

from __future__ import annotations

import os

from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI

from replangraph.builder import build_graph
from replangraph.config import AgentConfig

DEFAULT_MODEL = "gpt-4o-mini"


def _api_key() -> str:
    key = os.environ.get("OPENAI_API_KEY")
    if key:
        return key
    if os.environ.get("OPENAI_BASE_URL"):
        return "not-needed"  # local OpenAI-compatible servers ignore the key
    raise RuntimeError("OPENAI_API_KEY is not set: export it (or OPENAI_BASE_URL for a local server) to call a model")


def chat_model_from_env(model: str | None = None) -> ChatOpenAI:
    """ChatOpenAI for ``model`` (else $REPLANGRAPH_MODEL, else gpt-4o-mini); the key is read at call time.

    Its client does not retry (``max_retries=0``): replangraph's own policy does, once per try.
    """
    name = model or os.environ.get("REPLANGRAPH_MODEL") or DEFAULT_MODEL
    return ChatOpenAI(model=name, api_key=_api_key, base_url=os.environ.get("OPENAI_BASE_URL") or None, max_retries=0)


def config_from_configurable(configurable: dict) -> AgentConfig:
    """AgentConfig from the ``configurable`` keys that name its fields."""
    fields = {k: v for k, v in configurable.items() if k in AgentConfig.model_fields}
    return AgentConfig(**fields)


def make_graph(config: RunnableConfig):
    """Build the graph for the LangGraph server, compiled without a checkpointer."""
    configurable = dict((config or {}).get("configurable") or {})
    model = chat_model_from_env(configurable.get("model"))
    return build_graph(model, config=config_from_configurable(configurable))
