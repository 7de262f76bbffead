"""Fitting text into a request without losing it. No LangGraph here.

Whatever is cut from a request is kept elsewhere under an *output id*, and the cut
text says so in a note that names the omitted range. Agents read the range back
with the ``read_output`` tool; one-shot requests (planner, replanner, verifier)
only say where the full text is kept.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from langchain_core.messages import AnyMessage, ToolMessage

from replangraph.llm.messages import message_text

R = TypeVar("R")
T = TypeVar("T")

GOAL_ID = "goal"
PLAN_ID = "plan"
RESULT_KEY = "result"

NOTE = (
    '[… output "{id}": characters {start}-{end} of {total} are not shown here; '
    'read them with read_output(output_id="{id}", offset={start}) …]'
)
KEPT_NOTE = '[… output "{id}": characters {start}-{end} of {total} are not shown here; the full text is kept …]'
PAGE = 'output "{id}", characters {start}-{end} of {total}:\n'
PAGE_RE = re.compile(r'^output "(.+?)", characters (\d+)-(\d+) of (\d+):')
NOTE_RE = re.compile(r'\[… output "(.+?)": characters (\d+)-(\d+) of (\d+) are not shown here;.*?…\]')
KEPT = "replangraph_kept"
"""``response_metadata`` key marking a message whose full text is kept under the output id it holds.

Notes are found by this marker, not by their text, so a tool output that merely
quotes a note is still saved like any other."""


def result_id(task_id: str) -> str:
    """Output id of a subtask's result (read from the queue itself)."""
    return f"{task_id}/{RESULT_KEY}"


def output_id(task_id: str, key: str) -> str:
    """Output id of text saved for a subtask under ``key`` (a tool call id, ``history-2``, ...)."""
    return f"{task_id}/{key}"


def note(output: str, start: int, end: int, total: int, readable: bool = True) -> str:
    """The marker standing for characters ``start``..``end`` of a kept text."""
    return (NOTE if readable else KEPT_NOTE).format(id=output, start=start, end=end, total=total)


def excerpt(text: str, limit: int, output: str, readable: bool = True) -> str:
    """``text`` within about ``limit`` characters: its head, a note naming the omitted range, its tail.

    ``text`` itself must be kept under ``output``; with ``readable`` the note tells
    the agent how to read the range with ``read_output``.
    """
    if len(text) <= limit:
        return text
    marker = note(output, len(text), len(text), len(text), readable)
    keep = max(limit - len(marker), 0)
    head, tail = keep - keep // 3, keep // 3
    end = len(text) - tail
    return text[:head] + "\n" + note(output, head, end, len(text), readable) + "\n" + text[end:]


def recut(text: str, limit: int, fallback_id: str, kept: str | None = None, readable: bool = True) -> tuple[str, bool]:
    """``(text within limit, whether it must be saved under fallback_id)``.

    Text whose full version is kept under ``kept`` (an excerpt or a ``read_output``
    page) is cut further, head only with its note widened to the end, without
    saving anything new. Any other text is cut to an excerpt that must be saved.
    """
    if len(text) <= limit:
        return text, False
    found = [m for m in NOTE_RE.finditer(text) if m.group(1) == kept] if kept else []
    if not found:
        return excerpt(text, limit, fallback_id, readable), True
    match = found[-1]
    output, start, total = match.group(1), int(match.group(2)), int(match.group(4))
    page = PAGE_RE.match(text)
    header, first = (page.end() + 1, int(page.group(2))) if page and page.group(1) == output else (0, 0)
    marker = note(output, total, total, total, readable)
    keep = max(min(limit - len(marker) - header - 1, start - first), 0)
    return text[: header + keep] + "\n" + note(output, first + keep, total, total, readable), False


@dataclass
class Fitted(Generic[R]):
    """A request built from parts, some of them shown as excerpts."""

    request: R
    cut: list[str] = field(default_factory=list)
    """Names of the parts shown as excerpts."""
    fits: bool = True


def fit_parts(
    parts: Mapping[str, str],
    build: Callable[[Mapping[str, str]], R],
    fits: Callable[[R], bool],
    outputs: Mapping[str, str],
    *,
    readable: bool = True,
    floor: int = 300,
) -> Fitted[R]:
    """``build(parts)``, with the largest part halved (as an excerpt kept under ``outputs[name]``)
    until the request fits. Parts missing from ``outputs`` are never cut."""
    shown = dict(parts)
    cut: list[str] = []
    spent: set[str] = set()  # parts that cannot get any shorter
    request = build(shown)
    while not fits(request):
        candidates = [(len(shown[n]), n) for n in outputs if n in shown and n not in spent and len(shown[n]) > floor]
        if not candidates:
            return Fitted(request, cut, fits=False)
        size, name = max(candidates)
        shorter = excerpt(parts[name], max(size // 2, floor), outputs[name], readable)
        if len(shorter) >= size:
            spent.add(name)
            continue
        shown[name] = shorter
        if name not in cut:
            cut.append(name)
        request = build(shown)
    return Fitted(request, cut)


def split_text(text: str, max_chars: int) -> list[str]:
    """``text`` in consecutive pieces of at most ``max_chars``, cut at line ends or spaces where possible.

    Joining the pieces gives ``text`` back exactly.
    """
    max_chars = max(max_chars, 1)
    pieces, start = [], 0
    while len(text) - start > max_chars:
        window = (start + max_chars // 2, start + max_chars)
        end = max(text.rfind("\n", *window), -1)
        if end < 0:
            end = text.rfind(" ", *window)  # else between words, so no token is split
        end = end + 1 if end > start else start + max_chars
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces


def pack(items: Sequence[T], fits: Callable[[Sequence[T]], bool]) -> list[list[T]]:
    """Consecutive groups of ``items``, each as large as ``fits`` allows (an item that does not fit alone
    gets a group of its own)."""
    groups: list[list[T]] = []
    for item in items:
        if groups and fits([*groups[-1], item]):
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def unique_key(base: str, taken: Callable[[str], bool]) -> str:
    """``base``, or ``base~2``, ``base~3`` ... the first key not ``taken`` (kept text is written once)."""
    key, n = base, 1
    while taken(key):
        n += 1
        key = f"{base}~{n}"
    return key


def message_key(message: AnyMessage) -> str:
    """Base key for a message's full text: its tool call id, else a digest of its text."""
    if isinstance(message, ToolMessage) and message.tool_call_id:
        return message.tool_call_id
    return "message-" + hashlib.sha1(message_text(message).encode()).hexdigest()[:12]


def kept_id(message: AnyMessage) -> str | None:
    """The output id a message's full text is kept under, if it was cut or dropped by replangraph."""
    return (message.response_metadata or {}).get(KEPT)


def mark_kept(message: AnyMessage, content: str, ident: str) -> AnyMessage:
    """``message`` showing ``content``, marked as kept in full under ``ident``."""
    metadata = {**(message.response_metadata or {}), KEPT: ident}
    return message.model_copy(update={"content": content, "response_metadata": metadata})
