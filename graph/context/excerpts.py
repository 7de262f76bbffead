"""Excerpts of kept text: a text's head and tail with a note naming the omitted range and where the whole is
kept (`excerpt`, `note`), texts sharing a room (`fair_shares`) and a kept text cut further (`recut`); a tool
call's arguments are cut with them (`replangraph.context.fitting.cut_args`). No LangGraph here.

Only what is too long runs here: a request that fits, an output within ``max_observation_chars`` and arguments
within it never do. `replangraph.context.fitting` decides when to cut and keeps these names importable."""

from __future__ import annotations

import re
from collections.abc import Sequence

NOTE = (
    '[… output "{id}": characters {start}-{end} of {total} are not shown here; '
    'read them with read_output(output_id="{id}", offset={start}) …]'
)


KEPT_NOTE = '[… output "{id}": characters {start}-{end} of {total} are not shown here; the full text is kept …]'


PAGE = 'output "{id}", characters {start}-{end} of {total}:\n'


PAGE_RE = re.compile(r'^output "(.+?)", characters (\d+)-(\d+) of (\d+):')


NOTE_RE = re.compile(r'\[… output "(.+?)": characters (\d+)-(\d+) of (\d+) are not shown here;.*?…\]')


def note(output: str, start: int, end: int, total: int, readable: bool = True) -> str:
    """The marker standing for characters ``start``..``end`` of a kept text."""
    return (NOTE if readable else KEPT_NOTE).format(id=output, start=start, end=end, total=total)


def excerpt(text: str, limit: int, output: str, readable: bool = True, *, at: int = 0, total: int | None = None) -> str:
    """``text`` within about ``limit`` characters: its head, a note naming the omitted range, its tail.

    ``text`` itself must be kept under ``output`` (or be the part of the ``total`` characters kept there
    that starts at character ``at``: the note names the range in the kept text); with ``readable`` the
    note tells the agent how to read the range with ``read_output``.
    """
    if len(text) <= limit:
        return text
    total = len(text) if total is None else total
    marker = note(output, total, total, total, readable)
    keep = max(limit - len(marker), 0)
    head, tail = keep - keep // 3, keep // 3
    end = len(text) - tail
    return text[:head] + "\n" + note(output, at + head, at + end, total, readable) + "\n" + text[end:]


def fair_shares(sizes: Sequence[int], room: int, floor: int = 300) -> list[int]:
    """The most characters each of several texts of ``sizes`` may show so that together they take about
    ``room``: a text within its fair share of what is left stays whole (its limit is its size), the
    longer ones share the rest equally, none below ``floor``."""
    limits = list(sizes)
    for left, index in zip(range(len(sizes), 0, -1), sorted(range(len(sizes)), key=lambda i: sizes[i]), strict=True):
        share = max(room // left, floor)
        limits[index] = min(sizes[index], share)
        room -= limits[index]
    return limits


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
