"""Pausing a run for the user: ``interrupt()`` with a clear error where the run cannot pause,
and how an answer is read (the cancel word, a slash command, plain text)."""

from __future__ import annotations

import re
from typing import Any

from langgraph.config import get_config
from langgraph.types import interrupt

from replangraph.config import AgentConfig
from replangraph.llm.reading import as_text

CHECKPOINTER_KEY = "__pregel_checkpointer"
"""Where LangGraph keeps the run's checkpointer in its config (None without one; a subgraph gets its parent's)."""


def has_checkpointer() -> bool:
    """Whether the run in progress can pause: it has a checkpointer (its own, its parent graph's, or the
    one ``langgraph dev`` gives it at run time).

    LangGraph 1.2 has no public way to ask: ``Runtime`` holds no checkpointer (``execution_info.thread_id``
    is only the config's), and ``interrupt()`` without one raises nothing; the run just ends with
    ``__interrupt__``. So this reads the private config key, here only; a ``Runtime.checkpointer`` (or
    an error from ``interrupt()``) would replace it.
    """
    return get_config().get("configurable", {}).get(CHECKPOINTER_KEY) is not None


COMMAND_RE = re.compile(r"^/([A-Za-z][\w-]*)(?:\s+(.*))?$", re.S)
"""A slash command: ``/name`` and optional argument text after white space."""


class CheckpointerRequired(RuntimeError):
    """The run must pause for the user, and it has no checkpointer to pause with."""


def pause_for_user(request: dict[str, Any], what: str) -> Any:
    """``interrupt(request)``: the user's answer once the run is resumed with ``Command(resume=...)``.

    Without a checkpointer LangGraph would end the run with ``__interrupt__`` and nothing to
    resume; raise `CheckpointerRequired` naming the fix instead.
    """
    if not has_checkpointer():
        raise CheckpointerRequired(
            f"{what} pauses the run until the user answers, which needs a checkpointer: "
            "build_graph(..., checkpointer=InMemorySaver()) (from langgraph.checkpoint.memory) or a SQLite saver "
            "(replangraph.durable.open_saver), and a thread_id in the run config"
            + ("; or AgentConfig(max_clarifications=0) to run without questions" if what == "ask_user" else "")
            + ("; or AgentConfig(approve_plan=False)" if what == "approve_plan" else "")
        )
    return interrupt(request)


def is_cancel(answer: Any, config: AgentConfig) -> bool:
    """Whether an answer is the cancel word (case and spaces ignored)."""
    return isinstance(answer, str) and answer.strip().casefold() == config.cancel_word.strip().casefold()


def slash_command(answer: Any) -> str | None:
    """The text of an answer that is a slash command (``/status``, ``/todo buy milk``), else None.
    A path (``/home/me/data.csv``) is an answer, not a command."""
    text = answer.strip() if isinstance(answer, str) else ""
    return text if COMMAND_RE.match(text) else None


def unwrapped(answer: Any) -> Any:
    """The answer inside ``{"answer": ...}`` (as UIs often send it), the text of content blocks
    (``[{"type": "text", "text": ...}]``), else the answer itself."""
    if isinstance(answer, dict) and "answer" in answer:
        answer = answer["answer"]
    if isinstance(answer, list) and answer and all(isinstance(b, dict) and b.get("type") == "text" for b in answer):
        return as_text(answer)
    return answer
