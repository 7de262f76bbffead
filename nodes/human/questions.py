"""ask_user's questions: read leniently, screened, answered, carried over. No LangGraph here.

The tools node answers the calls it can without the user (unreadable, answered before anywhere in
the run, over ``max_clarifications``) and leaves the others pending; the ask node then pauses
the run with ``interrupt()`` and answers the call with what the user said. A starting subtask is
told the run's answers so far (`answers_so_far`), so it need not ask them again.
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
    ANSWERED_IN_RUN,
    ANSWERS_GIVEN,
    ASKED_BEFORE,
    MORE_ANSWERS,
    NO_ANSWER,
    NO_MORE_QUESTIONS,
    NO_QUESTIONS,
    QUESTION_DESCRIPTION,
)
from replangraph.nodes.human.state import Clarification
from replangraph.queue.tasks import Task, ancestors, ordered, preview

QUESTION_NAMES = ("question", "questions", "q", "query", "text", "message", "prompt")
OPTION_NAMES = ("options", "choices")
"""Lists some models add to a question: shown to the user with it."""
ANSWERS_SHOWN = 6
"""Most answers a starting subtask is told (`answers_so_far`); the others are still answered from the record."""
QUESTION_PREVIEW_CHARS = 200
ANSWER_PREVIEW_CHARS = 300


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


def question_key(text: str) -> str:
    """What `same_question` compares: the text without case, repeated spacing and closing punctuation."""
    return re.sub(r"\s+", " ", text).strip(" ?!.:").casefold()


def same_question(a: str, b: str) -> bool:
    """Whether two questions are the same, ignoring case, spacing and closing punctuation."""
    return question_key(a) == question_key(b)


Answered = tuple[Task, Clarification]
"""One answer of the run: the subtask that asked, and its question with the user's answer."""


def run_answers(tasks: Mapping[str, Task]) -> list[Answered]:
    """Every answer the user gave in this run (the queue's), in queue order; the same question with the same
    answer once."""
    found: dict[tuple[str, str], Answered] = {}
    for task in ordered(tasks):
        for asked in task.get("clarifications") or []:
            found.setdefault((question_key(asked["question"]), asked["answer"].strip().casefold()), (task, asked))
    return list(found.values())


def earlier_answer(question: str, task: Task, tasks: Mapping[str, Task]) -> Answered | None:
    """The answer another subtask of the run got to ``question``: that of a subtask ``task`` was handed off
    from (the nearest), else the last in queue order; None if no other subtask asked it."""
    key = question_key(question)
    answered = {
        t["id"]: (t, c)
        for t in ordered(tasks)
        if t["id"] != task["id"]
        for c in t.get("clarifications") or []
        if question_key(c["question"]) == key
    }
    if not answered:
        return None
    nearest = next((answered[i] for i in ancestors(tasks, task["id"]) if i in answered), None)
    return nearest or list(answered.values())[-1]


def answers_so_far(tasks: Mapping[str, Task], task: Task) -> str:
    """What a starting subtask is told of the user's answers in this run (the queue ``tasks``): those of the
    subtasks it was handed off from (and its own, when it runs again) and the latest others, at most
    `ANSWERS_SHOWN` in queue order, each cut to a preview; "" when there are none."""
    found = run_answers(tasks)
    if not found:
        return ""
    lineage = {task["id"], *ancestors(tasks, task["id"])}
    own = [n for n, (t, _) in enumerate(found) if t["id"] in lineage][-ANSWERS_SHOWN:]
    others = [n for n, (t, _) in enumerate(found) if t["id"] not in lineage]
    room = ANSWERS_SHOWN - len(own)
    shown = sorted([*own, *(others[-room:] if room else [])])
    lines = [
        f"- {preview(c['question'], QUESTION_PREVIEW_CHARS)} -> {preview(c['answer'], ANSWER_PREVIEW_CHARS)}"
        f" (asked by subtask {t['id']})"
        for t, c in (found[n] for n in shown)
    ]
    more = [MORE_ANSWERS.format(count=len(found) - len(shown))] if len(found) > len(shown) else []
    return "\n".join([ANSWERS_GIVEN, *lines, *more])


def screen_question(
    call: Mapping[str, Any], task: Task, config: AgentConfig, tasks: Mapping[str, Task] | None = None
) -> ToolMessage | None:
    """The answer to a question the user need not see (empty, answered before by this subtask or another of
    the run's ``tasks``, over the limit), else None."""
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
    elsewhere = earlier_answer(question, task, tasks or {})
    if elsewhere is not None:
        asker, answer = elsewhere
        text = ANSWERED_IN_RUN.format(task_id=asker["id"], task=preview(asker["content"], 120), answer=answer["answer"])
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


def answers_note(task: Mapping[str, Any]) -> str:
    """The user's answers to the subtask's questions, for a summary that folds them away ("" if none)."""
    asked = task.get("clarifications") or []
    lines = "".join(f"\n- {c['question']} -> {c['answer']}" for c in asked)
    return f"\nThe user's answers to your questions:{lines}" if asked else ""
