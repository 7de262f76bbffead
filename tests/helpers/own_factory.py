"""docs/studio.md's own graph factory, served by test_langgraph_dev: ``chat_model_from_env()`` called where
``langgraph dev`` calls a factory, on its event loop, with $OPENAI_BASE_URL set and no model named."""

from replangraph import AgentProfile, build_graph
from replangraph.app.studio import chat_model_from_env


def count_words(text: str) -> int:
    """How many words `text` holds."""
    return len(text.split())


def make(config):
    writer = AgentProfile(prompt="You write short, sourced reports.", description="writes the report")
    return build_graph(chat_model_from_env(), tools=[count_words], agents={"writer": writer})
