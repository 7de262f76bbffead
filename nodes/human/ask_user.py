"""ask_user: the tool an executing agent calls to ask the user one question, and the executor's wrappers for it.

Only its schema is bound to the model: `offer_ask_user` adds it to a subtask's model calls
while the subtask may still ask; `screen_questions` answers the calls the user need not see
(`replangraph.nodes.human.questions.screen_question`) and leaves the others pending, and the
ask node pauses the run with ``interrupt()`` and answers each with what the user said.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from replangraph.config import AgentConfig, Configured
from replangraph.names import ASK_USER
from replangraph.nodes.human.prompts import ASK_USER_DESCRIPTION
from replangraph.nodes.human.questions import AskArgs, screen_question


def ask_user_tool() -> BaseTool:
    """The tool's schema, for binding to the model (the graph answers its calls, never this function)."""

    def ask(question: Any) -> str:
        raise ToolException("ask_user is answered by the graph's ask node")

    return StructuredTool.from_function(ask, name=ASK_USER, description=ASK_USER_DESCRIPTION, args_schema=AskArgs)


class OfferAskUser(Configured):
    """``wrap_model_call``: adds ask_user to the request's tools while the subtask (``request.state["task"]``)
    has questions left under ``max_clarifications``."""

    def __init__(self, config: AgentConfig, tool: BaseTool | None = None):
        self.base_config = config
        self.tool = tool or ask_user_tool()

    def __call__(self, request: Any, handler: Callable) -> Any:
        asked = len(request.state["task"].get("clarifications") or [])
        if self.config.max_clarifications > asked:
            request = request.override(tools=[*request.tools, self.tool])
        return handler(request)


class ScreenQuestions(Configured):
    """``wrap_tool_call``: answers an ask_user call the user need not see (empty, asked before, over the limit);
    returns None for one the ask node must put to the user. Other calls go on to ``handler``."""

    def __init__(self, config: AgentConfig, tool: BaseTool | None = None):
        self.base_config = config
        self.tool = tool or ask_user_tool()

    def __call__(self, request: Any, handler: Callable) -> Any:
        if request.tool_call.get("name") != ASK_USER:
            return handler(request)
        return screen_question(request.tool_call, request.state["task"], self.config)

    def answered_tools(self) -> list[BaseTool]:
        """Tools whose calls this wrapper answers, for the tools node's list of known tools."""
        return [self.tool] if self.config.max_clarifications else []
