"""Summarizing text that may not fit the summary model's window: map, then reduce. No LangGraph here.

Nothing is truncated on the way in. Entries (one per message) are packed into
chunks that fit; an entry too big for any chunk is split into pieces. Each chunk
is summarized on its own (map), then the summaries are merged in groups that fit
until one is left (reduce). When merging stops making the text smaller (a
summarizer that keeps every fact cannot shrink it), the summaries are joined.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

Steps = Generator[Any, Any, T]
"""Work written once for both paths (`replangraph.llm.calls.run_steps`): a summary call's steps are made by
the sync driver or awaited by the async one."""
FoldSteps = Callable[[str | None, str], Steps[str]]
"""``fold(previous summary or None, text)`` giving a summary: one summary model call, as steps."""
MergeSteps = Callable[[Sequence[str]], Steps[str]]
"""``merge(summaries)`` giving one summary: one summary model call, as steps."""
FitsFold = Callable[[str | None, str], bool]
FitsMerge = Callable[[Sequence[str]], bool]

MAX_REDUCE_ROUNDS = 8


def pieces_that_fit(entries: Sequence[str], fits: Callable[[str], bool]) -> list[str]:
    """``entries``, each one that does not fit alone split into consecutive pieces that do."""
    pieces: list[str] = []
    for entry in entries:
        if fits(entry):
            pieces.append(entry)
            continue
        size = max(len(entry) // 2, 1)
        while size > 200 and not all(fits(p) for p in split_text(entry, size)):
            size //= 2
        pieces.extend(split_text(entry, size))
    return pieces


def reduce_summaries(summaries: Sequence[str], merge: MergeSteps, fits: FitsMerge) -> Steps[str]:
    """One summary from several, merging groups that fit until one is left (steps)."""
    texts = [s for s in summaries if s.strip()]
    for _ in range(MAX_REDUCE_ROUNDS):
        if len(texts) <= 1:
            break
        if fits(texts):
            return (yield from merge(texts))
        groups = pack(texts, fits)
        if len(groups) == len(texts):
            break  # no two summaries fit one request
        merged = []
        for group in groups:  # a loop: a comprehension cannot hold the steps' ``yield``
            merged.append((yield from merge(group)) if len(group) > 1 else group[0])
        if sum(map(len, merged)) >= 0.95 * sum(map(len, texts)):
            texts = merged
            break  # merging no longer shrinks the text: keep it all
        texts = merged
    return "\n\n".join(texts)


def summary_steps(
    previous: str | None,
    entries: Sequence[str],
    fold: FoldSteps,
    merge: MergeSteps,
    fits_fold: FitsFold,
    fits_merge: FitsMerge,
) -> Steps[tuple[str, int]]:
    """``(summary of previous + entries, model calls)``, every character of the input seen by some call; steps
    (`replangraph.llm.calls.run_steps`), ``fold`` and ``merge`` giving the steps of one summary call each."""
    calls = 0

    def counted_fold(prior: str | None, text: str) -> Steps[str]:
        nonlocal calls
        calls += 1
        return (yield from fold(prior, text))

    def counted_merge(texts: Sequence[str]) -> Steps[str]:
        nonlocal calls
        calls += 1
        return (yield from merge(texts))

    text = "\n".join(entries)
    if fits_fold(previous, text):
        return (yield from counted_fold(previous, text)), calls
    pieces = pieces_that_fit(entries, lambda t: fits_fold(None, t))
    chunks = pack(pieces, lambda group: fits_fold(None, "\n".join(group)))
    partial = []
    for chunk in chunks:
        partial.append((yield from counted_fold(None, "\n".join(chunk))))
    summaries = [previous, *partial] if previous else partial
    summary = yield from reduce_summaries(summaries, counted_merge, fits_merge)
    return summary, calls


# --------------------------------------------------------------------------- pieces of a long text


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
