"""A scripted tool-calling chat model for tests and offline demos. No LLM is called.

The reply is chosen by a function of the request (its messages and bound tools),
never by call order, so parallel branches stay deterministic.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from replangraph.llm.reading import message_text


@dataclass(frozen=True)
class ScriptedRequest:
    """One model request as the responder sees it."""

    messages: Sequence[BaseMessage]
    tool_names: tuple[str, ...]

    @property
    def system(self) -> str:
        """Text of the system messages."""
        return "\n".join(message_text(m) for m in self.messages if isinstance(m, SystemMessage))

    @property
    def prompt(self) -> str:
        """Text of the human messages."""
        return "\n".join(message_text(m) for m in self.messages if isinstance(m, HumanMessage))

    @property
    def tool_results(self) -> list[ToolMessage]:
        """Tool messages in the request, oldest first."""
        return [m for m in self.messages if isinstance(m, ToolMessage)]

    def tool_name(self, result: ToolMessage) -> str:
        """Which tool produced ``result`` (looked up by call id when the message carries no name)."""
        if result.name:
            return result.name
        for message in self.messages:
            for call in getattr(message, "tool_calls", None) or []:
                if call.get("id") == result.tool_call_id:
                    return call["name"]
        return ""

    def called(self, tool_name: str) -> bool:
        """Whether the request already holds a result of ``tool_name``."""
        return any(self.tool_name(m) == tool_name for m in self.tool_results)

    def last_result(self, tool_name: str) -> str | None:
        """Text of the latest result of ``tool_name``."""
        found = [message_text(m) for m in self.tool_results if self.tool_name(m) == tool_name]
        return found[-1] if found else None


Reply = AIMessage | str | dict | list
Responder = Callable[[ScriptedRequest], Reply]


def tool_call(name: str, args: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    """A tool call for a scripted reply (id derived from name and args when not given)."""
    if call_id is None:
        digest = hashlib.sha1(f"{name}:{json.dumps(args, sort_keys=True, default=str)}".encode()).hexdigest()
        call_id = f"call_{digest[:12]}"
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def as_message(reply: Reply) -> AIMessage:
    """An AIMessage from a responder's reply: text, one tool call dict, a list of them, or a message."""
    if isinstance(reply, AIMessage):
        return reply
    if isinstance(reply, str):
        return AIMessage(content=reply)
    calls = [reply] if isinstance(reply, dict) else list(reply)
    return AIMessage(content="", tool_calls=[c if "id" in c else tool_call(c["name"], c["args"]) for c in calls])


class ScriptedChatModel(BaseChatModel):
    """Chat model whose reply is ``respond(request)``.

    Supports ``bind_tools`` (so ``with_structured_output`` works through tool calling)
    and reports approximate ``usage_metadata``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    respond: Responder
    bound_tools: list[dict] = Field(default_factory=list)
    tool_choice: Any = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> ScriptedChatModel:
        """A copy of this model that sees ``tools`` in its requests."""
        return self.model_copy(
            update={"bound_tools": [convert_to_openai_tool(t) for t in tools], "tool_choice": tool_choice}
        )

    def _get_invocation_params(self, stop: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        """The call's parameters, with the bound tools as ChatOpenAI reports them (for callbacks)."""
        return {**super()._get_invocation_params(stop=stop, **kwargs), "tools": self.bound_tools}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        names = tuple(t["function"]["name"] for t in self.bound_tools)
        reply = as_message(self.respond(ScriptedRequest(messages=list(messages), tool_names=names)))
        used = count_tokens_approximately(messages, tools=self.bound_tools or None)
        try:
            produced = count_tokens_approximately([reply])
        except RecursionError:  # absurdly nested arguments: the graph under test must cope, not this count
            produced = 0
        reply = reply.model_copy(
            update={
                "usage_metadata": {"input_tokens": used, "output_tokens": produced, "total_tokens": used + produced}
            }
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])
