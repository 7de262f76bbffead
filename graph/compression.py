"""Window compression, free of LangGraph: where to cut, what to fold, how to shrink.

A subtask window is ``[system, subtask, (summary), ...body]``. Compression folds
the older part of the body (and any earlier summary) into one summary message
and keeps the last messages intact. A cut never separates an AI message with
tool calls from its tool results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from .messages import all_tool_calls, message_text, truncate_middle

HEAD = 2  # the system prompt and the subtask message
SUMMARY_ID_PREFIX = "replangraph-summary-"
SUMMARY_HEADER = "[Context summary: earlier work on this subtask was compressed to fit the context window.]"

Summarize = Callable[[str | None, Sequence[AnyMessage]], str]
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


def safe_cut(body: Sequence[AnyMessage], keep_last: int) -> int:
    """Start of the kept tail: the last ``keep_last`` messages, moved back so no tool result loses its call."""
    cut = max(len(body) - keep_last, 0)
    while 0 < cut < len(body) and isinstance(body[cut], ToolMessage):
        cut -= 1
    return cut


def tool_pairs_ok(messages: Sequence[AnyMessage]) -> bool:
    """The provider rule: each tool result answers an open call; calls are answered before anything else."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
            continue
        if open_calls:
            return False
        if isinstance(message, AIMessage):
            open_calls = {c["id"] for c in all_tool_calls(message)}
    return True


def transcript(messages: Sequence[AnyMessage], per_message_chars: int = 4_000) -> str:
    """Readable text of messages for the summarizer, each cut to ``per_message_chars``."""
    lines = []
    for message in messages:
        if isinstance(message, AIMessage):
            text = message_text(message)
            calls = "; ".join(f"{c['name']}({c['args']})" for c in message.tool_calls)
            body = "\n".join(part for part in (text, f"tool calls: {calls}" if calls else "") if part)
            lines.append(f"ASSISTANT: {truncate_middle(body, per_message_chars)}")
        elif isinstance(message, ToolMessage):
            lines.append(f"TOOL {message.name or ''}: {truncate_middle(message_text(message), per_message_chars)}")
        else:
            lines.append(f"{message.type.upper()}: {truncate_middle(message_text(message), per_message_chars)}")
    return "\n".join(lines)


def summary_message(summary: str, plan: str, instructions: str, count: int) -> HumanMessage:
    """The message standing for everything folded so far, with the plan and the subtask re-injected."""
    text = f"{SUMMARY_HEADER}\n\nWhat was done so far:\n{summary.strip()}"
    if plan:
        text += f"\n\nCurrent plan:\n{plan}"
    text += f"\n\nYour subtask, unchanged:\n{instructions}\nContinue from where the summary ends."
    return HumanMessage(text, id=f"{SUMMARY_ID_PREFIX}{count}")


def summary_text(message: AnyMessage | None) -> str | None:
    """The summary part of an earlier summary message."""
    if message is None:
        return None
    text = message_text(message)
    start = text.find("What was done so far:\n")
    end = text.find("\n\nCurrent plan:\n")
    if end < 0:
        end = text.find("\n\nYour subtask, unchanged:\n")
    return text[start + len("What was done so far:\n") : end if end > 0 else None].strip() if start >= 0 else text


def without_usage(message: AnyMessage) -> AnyMessage:
    """``message`` without usage figures (they described a request that no longer exists)."""
    if isinstance(message, AIMessage) and message.usage_metadata:
        return message.model_copy(update={"usage_metadata": None})
    return message


def shrink_largest(window: list[AnyMessage], protect: int = 1, floor: int = 200) -> bool:
    """Halve the largest text after the system prompt (tool outputs first); False when nothing can shrink."""
    candidates = []
    for index, message in enumerate(window):
        if index < protect or not isinstance(message.content, str) or is_summary(message):
            continue
        rank = 1 if isinstance(message, ToolMessage) else 0  # tool outputs go first at equal size
        candidates.append((len(message.content) > floor, rank, len(message.content), index))
    candidates = [c for c in candidates if c[0]]
    if not candidates:
        return False
    _, _, size, index = max(candidates)
    window[index] = window[index].model_copy(update={"content": truncate_middle(window[index].content, size // 2)})
    return True


def compress_window(
    window: Sequence[AnyMessage],
    *,
    keep_last: int,
    fits: Fits,
    summarize: Summarize,
    plan: str = "",
    instructions: str = "",
) -> tuple[list[AnyMessage], int]:
    """``(new window, messages folded)``. The result fits unless even shrinking could not make it.

    Folds the body before the safe cut (and any earlier summary) into one new summary;
    then, while the window is too big, halves the largest contents, tool outputs first.
    """
    head, old_summary, body = split_window(window)
    cut = safe_cut(body, keep_last)
    folded = body[:cut]
    result = [*head, *([old_summary] if old_summary else []), *body]
    if folded:
        count = int(str(old_summary.id).removeprefix(SUMMARY_ID_PREFIX) or 0) + 1 if old_summary else 1
        summary = summarize(summary_text(old_summary), folded)
        candidate = [*head, summary_message(summary, plan, instructions, count), *body[cut:]]
        if count_tokens_approximately(candidate) < count_tokens_approximately(result):
            result = candidate
        else:  # folding a few small messages would only add the summary's overhead
            folded = []
    result = [without_usage(m) for m in result]
    while not fits(result) and shrink_largest(result):
        pass
    return result, len(folded)
