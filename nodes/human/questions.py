"""ask_user's questions: read leniently, screened, answered. No LangGraph here.

The tools node answers the calls it can without the user (unreadable, asked before,
over ``max_clarifications``) and leaves the others pending; the ask node then pauses
the run with ``interrupt()`` and answers the call with what the user said.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from pydantic import BaseModel, ValidationError

from replangraph.config import AgentConfig
from replangraph.llm.formats import load_json
from replangraph.llm.reading import UnreadableInput, as_text, text_field
from replangraph.names import ASK_USER
from replangraph.nodes.human.prompts import (
    ASKED_BEFORE,
    NO_ANSWER,
    NO_MORE_QUESTIONS,
    NO_QUESTIONS,
    QUESTION_DESCRIPTION,
)
from replangraph.queue.tasks import Task

QUESTION_NAMES = ("question", "questions", "q", "query", "text", "message", "prompt")
OPTION_NAMES = ("options", "choices")
"""Lists some models add to a question: shown to the user with it."""


class AskArgs(BaseModel):
    question: text_field(QUESTION_DESCRIPTION, QUESTION_NAMES)


def question_of(call: Mapping[str, Any]) -> str:
    """The question a call asks, read leniently (a bare string, an alias, a list, fenced JSON); "" if none."""
    args = call.get("args")
    if isinstance(args, str):
        try:
            args = load_json(args)
        except UnreadableInput:
            return args.strip()
    if isinstance(args, Mapping):
        try:
            question = as_text(AskArgs.model_validate(args).question).strip()
        except ValidationError:
            question = ""
        if not question:
            texts = [as_text(v).strip() for v in args.values() if as_text(v).strip()]
            return texts[0] if len(texts) == 1 else ""  # one unnamed text field is the question
        options = next((args[k] for k in OPTION_NAMES if k in args), None)
        listed = [t for t in (as_text(o).strip() for o in options) if t] if isinstance(options, list) else []
        return f"{question} (options: {' / '.join(listed)})" if listed else question
    return as_text(args).strip()


def same_question(a: str, b: str) -> bool:
    """Whether two questions are the same, ignoring case, spacing and closing punctuation."""

    def norm(text: str) -> str:
        return re.sub(r"\s+", " ", text).strip(" ?!.:").casefold()

    return norm(a) == norm(b)


def screen_question(call: Mapping[str, Any], task: Task, config: AgentConfig) -> ToolMessage | None:
    """The answer to a question the user need not see (empty, asked before, over the limit), else None."""
    call_id = call.get("id") or ""
    question = question_of(call)
    if not question:
        text = "Error: ask_user needs `question`: the one question to ask the user, as text."
        return ToolMessage(text, tool_call_id=call_id, name=ASK_USER, status="error")
    asked = task.get("clarifications") or []
    earlier = next((c for c in asked if same_question(c["question"], question)), None)
    if earlier is not None:
        text = ASKED_BEFORE.format(answer=earlier["answer"])
        return ToolMessage(text, tool_call_id=call_id, name=ASK_USER, status="error")
    if len(asked) >= config.max_clarifications:
        template = NO_MORE_QUESTIONS if config.max_clarifications else NO_QUESTIONS
        text = template.format(asked=len(asked), limit=config.max_clarifications)
        return ToolMessage(text, tool_call_id=call_id, name=ASK_USER, status="error")
    return None


def answer_text(answer: Any) -> str:
    """What the agent is told the user answered (any resume value; empty: told to go on)."""
    if isinstance(answer, Mapping) and "answer" in answer:
        answer = answer["answer"]
    return as_text(answer).strip() or NO_ANSWER
