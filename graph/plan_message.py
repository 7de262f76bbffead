"""The plan message: the queue as Markdown in ``messages``, one message updated in place while the run works
(`with_plan_message`), so chat clients show the plan and its progress."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage

from replangraph.llm.reading import as_text, waiting_questions
from replangraph.queue.tasks import apply_writes, plan_markdown
from replangraph.state import replace_by_key

PLAN_MESSAGE_ID = "replangraph-plan-"
"""How the ids of plan messages start (one per goal: the rest of the id is new with each plan)."""


def plan_message(state: Mapping[str, Any], update: Any, new_plan: bool = False) -> AIMessage | None:
    """The plan message after ``update`` (a node's update of ``state``): the queue as `plan_markdown`, with
    the question each subtask waits on. It keeps the id of the thread's latest plan message, so LangGraph's
    ``add_messages`` replaces that message where it stands; ``new_plan``: a new message for a new plan.
    None when the update changes neither tasks nor windows, there is no plan message to update, or its
    text would not change."""
    if not isinstance(update, Mapping) or not {"tasks", "windows"} & update.keys():
        return None
    messages = state.get("messages") or []
    current = next((m for m in reversed(messages) if str(m.id or "").startswith(PLAN_MESSAGE_ID)), None)
    if current is None and not new_plan:
        return None
    tasks = apply_writes(state.get("tasks") or {}, [update.get("tasks")])
    windows = replace_by_key(state.get("windows"), update.get("windows"))
    text = plan_markdown(tasks, WaitingQuestions(windows))
    if current is not None and not new_plan and current.content == text:
        return None
    message_id = PLAN_MESSAGE_ID + uuid.uuid4().hex if new_plan or current is None else current.id
    return AIMessage(text, id=message_id, name="replangraph")


class WaitingQuestions(Mapping[str, str]):
    """The question each subtask waits on (its window's unanswered ``ask_user`` call), by task id, read from a
    window only when asked for: the plan message looks up the few tasks it lists, not every window."""

    def __init__(self, windows: Mapping[str, Sequence[AnyMessage]]):
        self.windows = windows

    def __getitem__(self, task_id: str) -> str:
        calls = waiting_questions(self.windows[task_id])
        if not calls:
            raise KeyError(task_id)
        args = calls[0].get("args")
        return as_text(args.get("question") if isinstance(args, Mapping) else args)

    def __iter__(self) -> Iterator[str]:
        return (task_id for task_id in self.windows if waiting_questions(self.windows[task_id]))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def with_plan_message(node: Any, new_plan: bool = False) -> Any:
    """``node`` (one that reads the whole state) whose update also writes the plan message (`plan_message`),
    after the messages it writes itself: chat clients show the plan and its progress while the run works."""

    @functools.wraps(node)
    def run(state: Mapping[str, Any], *args: Any, **kwargs: Any) -> Any:
        update = node(state, *args, **kwargs)
        message = plan_message(state, update, new_plan)
        if message is None:
            return update
        return {**update, "messages": [*(update.get("messages") or []), message]}

    return run
