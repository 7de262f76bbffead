"""Reading the judges' and voters' answers when they come as text (prose, JSON, tables). No LangGraph here.

A judge bound to a schema (`Pick`, `Ballot`, `Fusion`) usually calls its tool; these readers are
the fallback for a model that answers in text instead, and read a tool call's arguments loosely
too (`choice_in`, `scores_in`, `fusion_in`). Reasoning (``<think>…</think>``) is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from replangraph.llm.formats import load_json
from replangraph.llm.reading import UnreadableInput, as_text, without_thinking
from replangraph.nodes.teams.prose import by_name, candidate_number, from_prose
from replangraph.queue.tasks import preview

MAX_SCORE = 10.0
CHOICE_KEYS = (
    "winner", "choice", "chosen", "best", "pick", "picked", "selected", "selection", "select", "preferred",
    "verdict", "decision", "candidate", "index", "number", "answer", "id",
)  # fmt: skip
RANKING_KEYS = ("ranking", "rankings", "ranked", "rank", "order")
REASON_KEYS = ("reason", "reasoning", "why", "explanation", "rationale", "justification", "comment")
WHO_KEYS = ("candidate", "id", "number", "index", "agent_type", "agent", "name")
SCORE_KEYS = ("score", "rating", "points", "grade", "mark", "value")
OUT_OF_KEYS = ("out_of", "max", "max_score", "scale")
BALLOT_KEYS = ("scores", "votes", "ratings", "points", "grades", "evaluations")
TEXT_KEYS = (
    "result", "combined", "fused", "fusion", "merged", "final", "answer", "response", "output", "text", "content",
)  # fmt: skip
"""A candidate named in prose: ``candidate 2``, ``result #3``, ``candidate_2``, ``the second one``."""
SCORE_LINE = re.compile(
    r"(?P<who>.*?[\w)*])\s*(?:[:=→]|[-–—]+(?=\s)|\s(?:scores?|gets?|rated|receives?)\b)[\s*_]*"
    r"(?P<score>-?\d+(?:\.\d+)?(?:[*_\s]*(?:/|out\s+of)\s*[*_]*\d+(?:\.\d+)?|\s*%)?)",
    re.I,
)


_EXACT_ONLY = frozenset({"id", "index", "number", "answer", "name", "value", "text", "content", "agent"})
_PLAIN_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\n(.*?)\n?[ \t]*```", re.S)
_LEAD_IN = re.compile(r"(?:here(?:'s| is| are)|below is)\b[^\n]*:[ \t]*\n+", re.I)


def _json(text: str) -> Any:
    """The JSON in ``text``, or None."""
    try:
        return load_json(text)
    except UnreadableInput:
        return None


def _words(key: Any) -> set[str]:
    """The lower-case words of a key: ``bestCandidate`` and ``best_candidate`` give {best, candidate}."""
    return set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", str(key)).lower()))


def _fields(value: Mapping, keys: Sequence[str], skip: Sequence[str] = ()) -> list[Any]:
    """Non-empty values under ``keys``, best first: the keys themselves, then keys with one of them as a
    word (``winner_id``, ``bestCandidate``); keys with a ``skip`` word are left out."""
    exact = [value[k] for k in keys if value.get(k) not in (None, "", [], {})]
    loose = [
        value[k]
        for key in keys
        if key not in _EXACT_ONLY
        for k in value
        if k not in keys and key in _words(k) and not _words(k) & set(skip) and value[k] not in (None, "", [], {})
    ]
    return exact + loose


def _first_readable(values: Sequence[Any], read: Callable[[Any], Any]) -> Any:
    """``read`` of the first value it can read; the first value's error when it can read none."""
    errors = []
    for value in values:
        try:
            return read(value)
        except UnreadableInput as exc:
            errors.append(exc)
    raise errors[0] if errors else UnreadableInput("it names no candidate")


def _pick(value: Any, names: Sequence[str]) -> int:
    """The 0-based index ``value`` names: a candidate number, an agent type that one candidate has, an
    object holding one (``{"candidate": 2}``), or prose naming one (see `read_choice`)."""
    if isinstance(value, Mapping):
        return _first_readable(_fields(value, (*WHO_KEYS, *CHOICE_KEYS), REASON_KEYS), lambda v: _pick(v, names))
    if isinstance(value, list | tuple):
        if len(value) != 1:
            raise UnreadableInput(f"it names {len(value)} candidates where one was expected; answer with one number")
        return _pick(value[0], names)
    number = candidate_number(value, len(names))
    if number is not None:
        return number
    text = as_text(value)
    found = by_name(text, names)
    return found if found is not None else from_prose(text, names)


def _top(value: Any) -> Any:
    """The first of a ranking: a list's first item, ``2`` of ``"2 > 1 > 3"``."""
    if isinstance(value, list | tuple):
        return value[0] if value else None
    return re.split(r"[>,;\n]", value)[0] if isinstance(value, str) else value


def choice_in(value: Mapping, names: Sequence[str]) -> tuple[int, str] | None:
    """``(0-based index, reason)`` from a JSON pick (a `Pick` call's arguments, or JSON a judge wrote),
    read under the usual keys loosely; None when it has no choosing key. UnreadableInput when the
    candidate it names cannot be read."""
    reason = next((as_text(v).strip() for v in _fields(value, REASON_KEYS) if as_text(v).strip()), "")
    picks = _fields(value, CHOICE_KEYS, REASON_KEYS) + [_top(v) for v in _fields(value, RANKING_KEYS)]
    return (_first_readable(picks, lambda v: _pick(v, names)), reason) if picks else None


def read_choice(answer: str, names: Sequence[str]) -> tuple[int, str]:
    """``(0-based index, reason)`` from a judge's pick among candidates named ``names`` (numbered
    from 1). Reasoning (``<think>…</think>``) is skipped. JSON (fenced or in prose) is read under the
    usual keys, loosely (``winner``, ``best_candidate``, ``winner_id``, ``{"winner": {"candidate": 2}}``,
    a ``ranking``'s first); prose as `from_prose` says. An agent type counts only when one candidate
    has it. UnreadableInput when it names none, several without a winner, or a number out of range."""
    text = without_thinking(answer)
    if not text:
        raise UnreadableInput("the answer is empty (or only reasoning)")
    value = _json(text)
    if isinstance(value, Mapping):
        found = choice_in(value, names)
        if found is not None:
            return found
    elif isinstance(value, int | float | str) or (isinstance(value, list) and text.startswith("[")):
        return _pick(value, names), ""
    return from_prose(text, names), preview(text, 300)


def _score(value: Any) -> tuple[float, float | None] | None:
    """``(points, out of)`` from ``8``, ``"8/10"``, ``"**8**/10"``, ``"85 out of 100"``, ``"85%"``,
    ``{"score": 8, "reason": ...}``; out of is None when not given. None when no score is there."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value), None
    if isinstance(value, Mapping):
        points = next((s for s in map(_score, _fields(value, SCORE_KEYS)) if s), None)
        out_of = next((_score(value[k]) for k in OUT_OF_KEYS if _score(value.get(k))), None)
        return (points[0], points[1] or (out_of and out_of[0])) if points else None
    found = re.fullmatch(
        r"[\s*_]*(-?\d+(?:\.\d+)?)[*_\s]*(?:(?:/|out\s+of)\s*[*_]*(\d+(?:\.\d+)?)[*_]*|(%))?\s*(?:points?|pts|\(.*\))?[\s.]*",
        as_text(value),
        re.I,
    )
    if not found:
        return None
    return float(found.group(1)), 100.0 if found.group(3) else float(found.group(2)) if found.group(2) else None


def _json_pairs(value: Any) -> list[tuple[Any, Any]]:
    """``(who, score)`` pairs from a JSON ballot: ``{"1": 7}``, ``{"scores": ...}``, ``[7, 4]``,
    ``[{"candidate": 1, "score": 7}]``, ``{"1": {"score": 7}}``."""
    if isinstance(value, Mapping):
        if _fields(value, WHO_KEYS) and _fields(value, SCORE_KEYS):
            value = [value]  # one entry
        else:
            value = next((v for v in _fields(value, BALLOT_KEYS) if isinstance(v, Mapping | list)), value)
    if isinstance(value, Mapping):
        return list(value.items())
    if not isinstance(value, list):
        return []
    pairs = []
    for position, item in enumerate(value, 1):
        who = _fields(item, WHO_KEYS) if isinstance(item, Mapping) else []
        pairs.append((who[0] if who else position, item))
    return pairs


def _text_pairs(text: str) -> list[tuple[Any, Any]]:
    """``(who, score)`` pairs from lines such as ``Candidate 1 (careful): 8/10``, ``1. careful — 8``,
    ``- **Candidate 2**: 6`` or markdown table rows ``| 1 | careful | 8 |``."""
    pairs = []
    for line in text.splitlines():
        if line.strip().startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            scored = [i for i, cell in enumerate(cells) if i and _score(cell)]
            if scored:
                pairs.append((cells[0], cells[scored[-1]]))
        elif found := SCORE_LINE.match(line):
            pairs.append((found.group("who"), found.group("score")))
    return pairs


def _scaled(read: Sequence[tuple[int, tuple[float, float | None]]]) -> dict[int, float]:
    """Scores out of MAX_SCORE. Without a denominator a ballot is out of 100 when its highest score is
    above 20 or all are above 10, out of 1 when all are at most 1 and one has a fraction, else out of
    MAX_SCORE (a stray 11-20 is clamped)."""
    bare = [points for _, (points, out_of) in read if not out_of]
    scale = MAX_SCORE
    if bare and (max(bare) > 2 * MAX_SCORE or min(bare) > MAX_SCORE):
        scale = 100.0
    elif bare and max(bare) <= 1 and any(not p.is_integer() for p in bare):
        scale = 1.0
    return {index: min(max(points * MAX_SCORE / (out_of or scale), 0.0), MAX_SCORE) for index, (points, out_of) in read}


def read_scores(answer: str, names: Sequence[str]) -> dict[int, float]:
    """Scores (0-10, by 0-based index) of candidates named ``names`` (numbered from 1), from JSON
    (``{"scores": {"1": 7}}``, ``{"2": {"score": 4}}``, ``[{"candidate": 1, "rating": 7}]``, ``[7, 4]``),
    from ``1: 7`` lines or from a markdown table, rescaled (see `_scaled`); reasoning is skipped.
    Unreadable entries are left out; UnreadableInput when none is readable."""
    text = without_thinking(answer)
    for pairs in (_json_pairs(_json(text)), _text_pairs(text)):
        read = _read_pairs(pairs, names)
        if read:
            return _scaled(list(read.items()))
    raise UnreadableInput("it gives no score to a candidate by number")


def scores_in(value: Any, names: Sequence[str]) -> dict[int, float]:
    """Scores (0-10, by 0-based index) from a JSON ballot (a `Ballot` call's arguments, or JSON a voter
    wrote), read as `read_scores` reads JSON; UnreadableInput when none is readable."""
    read = _read_pairs(_json_pairs(value), names)
    if not read:
        raise UnreadableInput("it gives no score to a candidate by number")
    return _scaled(list(read.items()))


def _read_pairs(pairs: Sequence[tuple[Any, Any]], names: Sequence[str]) -> dict[int, tuple[float, float | None]]:
    """``{0-based index: (points, out of)}`` of the pairs whose candidate and score can be read (the first of each)."""
    read: dict[int, tuple[float, float | None]] = {}
    for who, score in pairs:
        try:
            index = _pick(who, names)
        except UnreadableInput:
            continue
        points = _score(score)
        if points and (points[1] or points[0] <= 100):
            read.setdefault(index, points)
    return read


def read_fusion(answer: str) -> str:
    """The combined result a judge wrote: its text without reasoning, a lead-in line ("Here is the
    combined result:") or a plain-text fence (a code fence stays), or the text field of a JSON object
    (``result``, ``fused``, ``final_answer``, ``merged``...)."""
    text = _LEAD_IN.sub("", without_thinking(answer), count=1).strip()
    fence = _PLAIN_FENCE.fullmatch(text)
    body = fence.group(2).strip() if fence and "```" not in fence.group(2) else None
    if body is not None and fence.group(1).lower() in ("", "text", "txt", "plaintext", "markdown", "md", "json"):
        text = body
    if text[:1] == "{":
        value = _json(text)
        if isinstance(value, Mapping):
            text = fusion_in(value) or text
    if not text:
        raise UnreadableInput("the answer is empty (or only reasoning)")
    return text


def fusion_in(value: Mapping) -> str:
    """The combined result under a text key of a JSON object (a `Fusion` call's arguments, or JSON a
    judge wrote), reasoning skipped; "" when there is none."""
    return next((t for t in (without_thinking(v) for v in _fields(value, TEXT_KEYS)) if t), "")
