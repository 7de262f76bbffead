"""Pausing a run for the user: ``interrupt()`` with a clear error where the run cannot pause,
and how an answer is read (the cancel word, a slash command, plain text)."""

from __future__ import annotations

import re
from typing import Any

from langgraph.types import interrupt

from replangraph.config import AgentConfig
from replangraph.llm.reading import as_text
from replangraph.nodes.human.names import COMMAND_PATTERN
from replangraph.run_config import has_checkpointer

COMMAND_RE = re.compile(COMMAND_PATTERN, re.S)
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


DECISION_TYPES = ("approve", "edit", "reject", "respond")
"""LangChain v1's human-in-the-loop decisions (``langchain.agents.middleware.human_in_the_loop``)."""


def hitl_request(action: str, args: dict[str, Any], description: str, decisions: list[str]) -> dict[str, Any]:
    """LangChain v1's ``HITLRequest`` for one action (``action_requests`` and ``review_configs``), the
    interrupt shape chat UIs built for HumanInTheLoopMiddleware (agent-chat-ui) show with their buttons."""
    return {
        "action_requests": [{"name": action, "args": args, "description": description}],
        "review_configs": [{"action_name": action, "allowed_decisions": decisions}],
    }


def hitl_decision(answer: Any) -> dict[str, Any] | None:
    """The decision in a resume value shaped like LangChain v1's (``{"decisions": [{"type": ...}]}``, the first
    one, or a bare ``{"type": "approve"}``), else None. Each of replangraph's interrupts carries one action."""
    if not isinstance(answer, dict):
        return None
    decisions = answer.get("decisions")
    if isinstance(decisions, list) and decisions and isinstance(decisions[0], dict):
        answer = decisions[0]
    return answer if answer.get("type") in DECISION_TYPES else None


def edited_args(decision: dict[str, Any]) -> dict[str, Any]:
    """The ``args`` of an ``edit`` decision's ``edited_action`` ({} when it has none)."""
    action = decision.get("edited_action")
    args = action.get("args") if isinstance(action, dict) else None
    return args if isinstance(args, dict) else {}


def unwrapped(answer: Any) -> Any:
    """The answer inside ``{"answer": ...}`` (as UIs often send it), the text of content blocks
    (``[{"type": "text", "text": ...}]``), else the answer itself."""
    if isinstance(answer, dict) and "answer" in answer:
        answer = answer["answer"]
    if isinstance(answer, list) and answer and all(isinstance(b, dict) and b.get("type") == "text" for b in answer):
        return as_text(answer)
    return answer
