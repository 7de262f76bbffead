"""ask_user: the tool an executing agent calls to ask the user one question.

Only its schema is bound to the model: the tools node screens the calls
(`replangraph.nodes.human.questions.screen_question`) and the ask node pauses the run with
``interrupt()`` and answers each call with what the user said.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from replangraph.names import ASK_USER
from replangraph.nodes.human.questions import AskArgs
from replangraph.prompts import ASK_USER_DESCRIPTION


def ask_user_tool() -> BaseTool:
    """The tool's schema, for binding to the model (the graph answers its calls, never this function)."""

    def ask(question: Any) -> str:
        raise ToolException("ask_user is answered by the graph's ask node")

    return StructuredTool.from_function(ask, name=ASK_USER, description=ASK_USER_DESCRIPTION, args_schema=AskArgs)
