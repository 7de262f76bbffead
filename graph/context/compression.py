"""Window compression, free of LangGraph: where to cut, what to fold, how to shrink.

A subtask window is ``[system, subtask, (summary), ...body]``. Compression folds
the older part of the body (and any earlier summary) into one summary message
and keeps the last messages intact. A cut never separates an AI message with
tool calls from its tool results.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from replangraph.context.excerpts import recut
from replangraph.context.fitting import kept_id, mark_kept, message_key, output_id, unique_key
from replangraph.llm.reading import message_text

SUMMARY_HEADER = "[Context summary: earlier work on this subtask was compressed to fit the context window.]"

SUMMARY_TEMPLATE = SUMMARY_HEADER + "\n\nWhat was done so far:\n{summary}"

SUMMARY_HISTORY_ONE = 'The messages folded into this summary are kept in full: read_output(output_id="{first}").'

SUMMARY_HISTORY_MANY = (
    'The messages folded into summaries are kept in full: read_output(output_id="{first}") '
    'through read_output(output_id="{last}").'
)

SUMMARY_PLAN = "Current plan:\n{plan}"

SUMMARY_SUBTASK = "Your subtask, unchanged:\n{instructions}\nContinue from where the summary ends."


HEAD = 2  # the system prompt and the subtask message
SUMMARY_ID_PREFIX = "replangraph-summary-"

SummarizeSteps = Callable[[str | None, Sequence[AnyMessage]], Generator[Any, Any, str]]
"""``summarize(previous summary or None, messages)`` giving a summary's text, as steps
(`replangraph.llm.calls.run_steps`): its model calls made, or awaited, by a driver."""
Taken = Callable[[str], bool]
Fits = Callable[[Sequence[AnyMessage]], bool]


def is_summary(message: BaseMessage) -> bool:
    """Whether ``message`` is a compression summary (the boundary of the last compression)."""
    return isinstance(message, HumanMessage) and str(message.id or "").startswith(SUMMARY_ID_PREFIX)


def split_window(window: Sequence[AnyMessage]) -> tuple[list[AnyMessage], AnyMessage | None, list[AnyMessage]]:
    """``(head, summary or None, body)``."""
    head = list(window[:HEAD])
    rest = list(window[HEAD:])
    if rest and is_summary(rest[0]):
        return head, rest[0], rest[1:]
    return head, None, rest


def transcript_entries(messages: Sequence[AnyMessage]) -> list[str]:
    """Readable text of each message for the summarizer, in full (tool calls with their arguments)."""
    entries = []
    for message in messages:
        if isinstance(message, AIMessage):
            text = message_text(message)
            calls = "; ".join(f"{c['name']}({c['args']})" for c in message.tool_calls)
            body = "\n".join(part for part in (text, f"tool calls: {calls}" if calls else "") if part)
            entries.append(f"ASSISTANT: {body}")
        elif isinstance(message, ToolMessage):
            entries.append(f"TOOL {message.name or ''}: {message_text(message)}")
        else:
            entries.append(f"{message.type.upper()}: {message_text(message)}")
    return entries


def transcript(messages: Sequence[AnyMessage]) -> str:
    """The full text of ``messages``, one entry per message."""
    return "\n".join(transcript_entries(messages))


def history_note(task_id: str, count: int) -> str:
    """Where the messages folded into summaries 1..count are kept."""
    first, last = output_id(task_id, "history-1"), output_id(task_id, f"history-{count}")
    if count == 1:
        return SUMMARY_HISTORY_ONE.format(first=first)
    return SUMMARY_HISTORY_MANY.format(first=first, last=last)


def summary_message(summary: str, plan: str, instructions: str, count: int, task_id: str = "") -> HumanMessage:
    """The message standing for everything folded so far, with the plan and the subtask re-injected."""
    parts = [SUMMARY_TEMPLATE.format(summary=summary.strip())]
    if task_id:
        parts.append(history_note(task_id, count))
    if plan:
        parts.append(SUMMARY_PLAN.format(plan=plan))
    parts.append(SUMMARY_SUBTASK.format(instructions=instructions))
    text = "\n\n".join(parts)
    return HumanMessage(text, id=f"{SUMMARY_ID_PREFIX}{count}")


def summary_text(message: AnyMessage | None) -> str | None:
    """The summary part of an earlier summary message."""
    if message is None:
        return None
    text = message_text(message)
    start = text.find("What was done so far:\n")
    ends = [text.find(m) for m in ("\n\nThe messages folded", "\n\nCurrent plan:\n", "\n\nYour subtask, unchanged:\n")]
    end = min((e for e in ends if e > 0), default=-1)
    return text[start + len("What was done so far:\n") : end if end > 0 else None].strip() if start >= 0 else text


def without_usage(message: AnyMessage) -> AnyMessage:
    """``message`` without usage figures (they described a request that no longer exists)."""
    if isinstance(message, AIMessage) and message.usage_metadata:
        return message.model_copy(update={"usage_metadata": None})
    return message


@dataclass
class Compression:
    """What `compression_steps` did."""

    window: list[AnyMessage]
    folded: int
    """Messages folded into the summary."""
    saved: dict[str, str] = field(default_factory=dict)
    """Full texts to keep, by key: folded messages (``history-N``) and messages cut because they were too big."""
    fits: bool = True


def cut_points(body: Sequence[AnyMessage], keep_last: int) -> list[int]:
    """Where the body may be cut, earliest first: before a message that is not a tool result, keeping at
    most ``keep_last`` messages, but never less than the last AI/tool group."""
    starts = [i for i in range(len(body)) if not isinstance(body[i], ToolMessage)]
    return [i for i in starts if i >= len(body) - keep_last] or starts[-1:]


def first_fitting_cut(
    head: Sequence[AnyMessage], summary: AnyMessage | None, body: Sequence[AnyMessage], cuts: Sequence[int], fits: Fits
) -> int:
    """The earliest of ``cuts`` whose tail fits after ``head`` and ``summary`` (else the last cut)."""
    for cut in cuts:
        if fits([*head, *([summary] if summary else []), *body[cut:]]):
            return cut
    return cuts[-1]


def cut_message(message: AnyMessage, limit: int, ident: str) -> tuple[AnyMessage, str | None]:
    """``(message within about limit characters, full text to save under ident, or None)``.

    A message already kept in full is cut further without saving; a summary keeps
    its plan and instructions and cuts only its summary.
    """
    text = message_text(message)
    part = (summary_text(message) or "") if is_summary(message) else text
    room = limit - (len(text) - len(part))
    shown, must_save = recut(part, max(room, 200), ident, kept=kept_id(message))
    marked = mark_kept(message, text.replace(part, shown, 1), kept_id(message) or ident)
    return marked, part if must_save else None


def cut_largest(window: list[AnyMessage], saved: dict[str, str], task_id: str, taken: Taken, floor: int = 300) -> bool:
    """Halve the largest message after the head (its full text saved); False when none is over ``floor``."""
    sizes = [(len(message_text(m)), i) for i, m in enumerate(window) if i >= HEAD and isinstance(m.content, str)]
    sizes = [(size, i) for size, i in sizes if size > floor]
    if not sizes:
        return False
    size, index = max(sizes)
    message = window[index]
    base = f"summary-{str(message.id).removeprefix(SUMMARY_ID_PREFIX)}" if is_summary(message) else message_key(message)
    key = unique_key(base, lambda k: taken(k) or k in saved)
    window[index], full = cut_message(message, max(size // 2, floor), output_id(task_id, key))
    if full is not None:
        saved[key] = full
    return len(message_text(window[index])) < size


def compression_steps(
    window: Sequence[AnyMessage],
    *,
    keep_last: int,
    fits: Fits,
    summarize: SummarizeSteps,
    plan: str = "",
    instructions: str = "",
    task_id: str = "",
    taken: Taken = lambda key: False,
    tokens: Callable[[Sequence[AnyMessage]], int] = count_tokens_approximately,
) -> Generator[Any, Any, Compression]:
    """Fold the older body (and any earlier summary) into one summary until the window fits; steps
    (`replangraph.llm.calls.run_steps`), ``summarize`` giving the steps of one summary.

    ``keep_last`` is a ceiling: while the window does not fit, more whole AI/tool
    groups are folded, down to the last one. Only then is a single message that is
    too big on its own cut, its full text returned in ``saved``. The folded messages
    go to ``summarize`` in full and are returned in ``saved`` as ``history-N``.
    ``taken`` tells which keys already hold kept text; ``tokens`` is the token counter.
    """
    head, old_summary, body = split_window(window)
    body = [without_usage(m) for m in body]
    cuts = cut_points(body, keep_last) or [0]
    count = int(str(old_summary.id).removeprefix(SUMMARY_ID_PREFIX) or 0) + 1 if old_summary else 1
    saved: dict[str, str] = {}
    result = [*head, *([old_summary] if old_summary else []), *body]
    cut = first_fitting_cut(head, old_summary, body, cuts, fits) if cuts[-1] > 0 else 0
    folded = 0
    if cut > 0:
        summary = yield from summarize(summary_text(old_summary), body[:cut])
        done = cut
        while True:
            message = summary_message(summary, plan, instructions, count, task_id)
            candidate = [*head, message, *body[done:]]
            later = [c for c in cuts if c > done]
            if fits(candidate) or not later:
                break
            more = first_fitting_cut(head, message, body, later, fits)
            summary = yield from summarize(summary, body[done:more])
            done = more
        if tokens(candidate) < tokens(result):
            result, folded = candidate, done
            saved[f"history-{count}"] = transcript(body[:done])
    while not fits(result) and cut_largest(result, saved, task_id, taken):
        pass
    return Compression(result, folded, saved, fits(result))
