"""Reading the judges' and voters' answers when they come as text (prose, JSON, tables). No LangGraph here.

A judge bound to a schema (`Pick`, `Ballot`, `Fusion`) usually calls its tool; these readers are
the fallback for a model that answers in text instead, and read a tool call's arguments loosely
too (`choice_in`, `scores_in`, `fusion_in`). Reasoning (``<think>…</think>``) is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from replangraph.llm.lenient import UnreadableInput, as_text, load_json, match_name, without_thinking
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
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
CARDINALS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_NOUN = r"(?:\b(?:candidate|result|option|response|answer|submission|entry|proposal|solution)s?|\bno\.|\bnumber|#)"
_COUNT = r"\d+|" + "|".join(CARDINALS)
_ORDINAL = r"\d+(?:st|nd|rd|th)|last|" + "|".join(ORDINALS)
NUMBERED = re.compile(rf"{_NOUN}[\s_#-]*({_COUNT})\b|\b({_ORDINAL})\s+(?:{_NOUN}|one)\b", re.I)
"""A candidate named in prose: ``candidate 2``, ``result #3``, ``candidate_2``, ``the second one``."""
SCORE_LINE = re.compile(
    r"(?P<who>.*?[\w)*])\s*(?:[:=→]|[-–—]+(?=\s)|\s(?:scores?|gets?|rated|receives?)\b)[\s*_]*"
    r"(?P<score>-?\d+(?:\.\d+)?(?:[*_\s]*(?:/|out\s+of)\s*[*_]*\d+(?:\.\d+)?|\s*%)?)",
    re.I,
)


@dataclass(frozen=True, order=True)
class _Mention:
    """A candidate named in prose: where, the numbers it may mean (several: a shared agent type), as written."""

    start: int
    end: int
    numbers: tuple[int, ...]
    label: str


_ONE = re.compile(
    rf"(?:the\s+)?(?:{_NOUN})?[\s_#-]*({_ORDINAL}|{_COUNT})(?:\s+(?:{_NOUN}|one))?"
    r"(?:\s*\([^\d()]*\)|\s*[.):\-–—]\s+[^\d;!?,()]{0,60})?",
    re.I,
)
_BARE_NUMBER = re.compile(
    rf"(?<![\w.#/-])(\d+)(?![\w/%]|\.\d|\s*(?:/|out\s+of))|\b(?:the\s+)?({'|'.join(ORDINALS)}|last)\b", re.I
)
_DECIDE = (
    r"winner|winning|win|pick(?:s|ed)?|choose|chooses|chose|chosen|choice|select(?:s|ed|ion)?|go(?:ing)?\s+with"
    r"|goes\s+to|vote\s+for|verdict|decision|recommend(?:s|ed|ation)?|(?:final|my)\s+answer"
)
_PRAISE = r"best|better|prefer(?:s|red)?|strongest|superior"
_DECIDE_AFTER = r"winner|pick|choice|selection|verdict"
_PRAISE_AFTER = (
    r"best|better|stronger|strongest|superior|preferred|preferable"
    r"|(?:most|more)\s+(?:complete|correct|accurate|thorough|helpful|useful)"
)
_NEGATION = re.compile(r"\b(?:not|never|than|over|instead|rather|unlike|except|versus|vs|between)\b|n't", re.I)
_EXACT_ONLY = frozenset({"id", "index", "number", "answer", "name", "value", "text", "content", "agent"})
_PLAIN_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\n(.*?)\n?[ \t]*```", re.S)
_LEAD_IN = re.compile(r"(?:here(?:'s| is| are)|below is)\b[^\n]*:[ \t]*\n+", re.I)


def _cues(before: str, after: str) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """A tier of choosing words: before a named candidate (``winner: candidate 2``), before a bare
    number (``I pick 2``), after one (``candidate 2 is the best``, ``fast wins``)."""
    return (
        re.compile(rf"\b(?:{before})\b[^.;!?\n,]{{0,40}}$", re.I),
        re.compile(
            rf"\b(?:{before})\b[\s:*=#\"'-]*(?:(?:is|would\s+be|goes\s+to|be|was)\s+)?(?:the\s+)?[\s*#\"']*$", re.I
        ),
        re.compile(
            r"(?:\s*\([^)]*\))?[\s*_\"'`]*(?:(?:is|was|seems|looks|remains)\s+"
            rf"(?:(?:clearly|definitely|obviously|by\s+far|the|my|our|also|overall)\s+)*(?:{after})\b"
            r"(?![ \t]+(?:at|formatted|written|looking|presented)\b)"
            + (r"|(?:wins|won)\b)" if before == _DECIDE else ")"),
            re.I,
        ),
    )


_TIERS = (_cues(_DECIDE, _DECIDE_AFTER), _cues(_PRAISE, _PRAISE_AFTER))
"""Deciding words (winner, pick, choose, select, go with...) outrank praising ones (best, better, prefer)."""


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


def _bare(text: str) -> str:
    """``text`` without markdown emphasis, bullets, quotes and trailing punctuation."""
    return re.sub(r"^[\s*_`'\"•+>-]+|[\s*_`'\".!:,;]+$", "", text)


def _count(word: str, count: int) -> int:
    """The 1-based number a word means: ``2``, ``2nd``, ``two``, ``second``, ``last``."""
    word = word.lower()
    if word == "last":
        return count
    for words in (ORDINALS, CARDINALS):
        if word in words:
            return words.index(word) + 1
    return int(re.match(r"\d+", word).group())


def _checked(number: int, count: int) -> int:
    """The 0-based index of candidate ``number``; UnreadableInput if there is none."""
    if not 1 <= number <= count:
        raise UnreadableInput(f"candidate {number} does not exist (1-{count})")
    return number - 1


def _number(value: Any, count: int) -> int | None:
    """A 0-based candidate index from ``2``, ``"#2"``, ``"candidate_2"``, ``"Candidate 2 (fast)"``, ``"1. fast"``,
    ``"the second one"``; None if ``value`` is not just a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _checked(int(value), count) if float(value).is_integer() else None
    found = _ONE.fullmatch(_bare(as_text(value)))
    return _checked(_count(found.group(1), count), count) if found else None


def _shared(label: str, numbers: Sequence[int]) -> UnreadableInput:
    """The error for an agent type that several candidates have."""
    listed = ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"
    return UnreadableInput(f"{label!r} is the agent type of candidates {listed}; answer with the candidate number")


def _named(text: str, names: Sequence[str]) -> tuple[int, ...]:
    """The 1-based numbers of the candidates whose agent type ``text`` is (loosely)."""
    return tuple(n for n, name in enumerate(names, 1) if match_name(_bare(text), [name]))


def _by_name(text: str, names: Sequence[str]) -> int | None:
    """The 0-based index of the candidate whose agent type ``text`` is; None if none; UnreadableInput
    if several candidates have it."""
    numbers = _named(text, names)
    if len(numbers) > 1:
        raise _shared(_bare(text), numbers)
    return numbers[0] - 1 if numbers else None


def _pick(value: Any, names: Sequence[str]) -> int:
    """The 0-based index ``value`` names: a candidate number, an agent type that one candidate has, an
    object holding one (``{"candidate": 2}``), or prose naming one (see `read_choice`)."""
    if isinstance(value, Mapping):
        return _first_readable(_fields(value, (*WHO_KEYS, *CHOICE_KEYS), REASON_KEYS), lambda v: _pick(v, names))
    if isinstance(value, list | tuple):
        if len(value) != 1:
            raise UnreadableInput(f"it names {len(value)} candidates where one was expected; answer with one number")
        return _pick(value[0], names)
    number = _number(value, len(names))
    if number is not None:
        return number
    text = as_text(value)
    found = _by_name(text, names)
    return found if found is not None else _from_prose(text, names)


def _mentions(text: str, names: Sequence[str]) -> tuple[list[_Mention], list[_Mention]]:
    """The candidates ``text`` names (numbers, ordinals, agent types), and its bare numbers and
    ordinals (``2``, ``the second``), each in text order."""
    count = len(names)
    found = [
        _Mention(m.start(), m.end(), (_count(m.group(1) or m.group(2), count),), m.group())
        for m in NUMBERED.finditer(text)
    ]
    spelled = ["[\\s_-]*".join(map(re.escape, re.split(r"[\s_-]+", n.strip()))) for n in set(names) if n.strip()]
    if spelled:
        pattern = re.compile(rf"(?<![\w-])(?:{'|'.join(sorted(spelled, key=len, reverse=True))})(?![\w-])", re.I)
        found += [_Mention(m.start(), m.end(), _named(m.group(), names), m.group()) for m in pattern.finditer(text)]
    strong: list[_Mention] = []
    for mention in sorted(found):
        if not strong or mention.start >= strong[-1].end:
            strong.append(mention)
    weak = [
        _Mention(m.start(), m.end(), (_count(m.group(1) or m.group(2), count),), m.group())
        for m in _BARE_NUMBER.finditer(text)
        if not any(s.start <= m.start() < s.end for s in strong)
    ]
    return strong, weak


def _cued(gap: str, pattern: re.Pattern) -> bool:
    """Whether ``gap`` (the text before a mention) ends with an unnegated choosing word of ``pattern``."""
    found = pattern.search(gap[-200:])
    return bool(found) and not _NEGATION.search(gap[-200:][max(0, found.start() - 10) :])


def _hits(text: str, strong: Sequence[_Mention], weak: Sequence[_Mention], tier: tuple) -> list[_Mention]:
    """The mentions a choosing word of ``tier`` points at, in text order."""
    before, tight, after = tier
    hits = [
        m
        for i, m in enumerate(strong)
        if _cued(text[strong[i - 1].end if i else 0 : m.start], before)
        or after.match(text, m.end, strong[i + 1].start if i + 1 < len(strong) else len(text))
    ]
    hits += [m for m in weak if _cued(text[: m.start], tight)]
    return sorted(hits)


def _resolve(mention: _Mention, count: int) -> int:
    """The 0-based index a mention names; UnreadableInput for a shared agent type or a missing number."""
    if len(mention.numbers) > 1:
        raise _shared(mention.label, mention.numbers)
    return _checked(mention.numbers[0], count)


def _lead(text: str, names: Sequence[str]) -> int | None:
    """The candidate a first line (or its first sentence) is nothing but: ``Fast. Careful forgot the
    units.``, ``2 - it has the date``; None otherwise (a bare number is no lead in a numbered list)."""
    first = text.strip().splitlines()[0]
    listed = len(re.findall(r"^\s*\d+[.):]\s", text, re.M)) > 1
    for part in dict.fromkeys((first, re.split(r"(?<=[.!?])\s+", first)[0])):
        if listed and _bare(part)[:1].isdigit():
            continue
        found = _number(part, len(names))
        found = found if found is not None else _by_name(part, names)
        if found is not None:
            return found
    return None


def _only(strong: Sequence[_Mention], count: int) -> int:
    """The one candidate the text names; UnreadableInput when it names none, or several."""
    numbers = sorted({m.numbers[0] for m in strong if len(m.numbers) == 1 and 1 <= m.numbers[0] <= count})
    if len(numbers) == 1:
        return numbers[0] - 1
    if numbers:
        listed = ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"
        raise UnreadableInput(
            f"it names candidates {listed} without saying which wins; answer with the winner's number: "
            '{"winner": <number>, "reason": "..."}'
        )
    for mention in strong:
        _resolve(mention, count)  # a shared agent type, or a number out of range
    raise UnreadableInput("it names no candidate by number or agent type")


def _from_prose(text: str, names: Sequence[str]) -> int:
    """The 0-based index prose picks: the last candidate a deciding word points at (``Winner:
    candidate 2``, ``I pick fast``, ``fast wins``), else the last a praising word points at (``The best
    is result 3``, ``fast is better``), else a first line that is only a candidate, else the only
    candidate named. UnreadableInput when it names several and none of these says which."""
    strong, weak = _mentions(text, names)
    for tier in _TIERS:
        hits = _hits(text, strong, weak, tier)
        if hits:
            return _resolve(hits[-1], len(names))
    lead = _lead(text, names)
    return lead if lead is not None else _only(strong, len(names))


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
    a ``ranking``'s first); prose as `_from_prose` says. An agent type counts only when one candidate
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
    return _from_prose(text, names), preview(text, 300)


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
