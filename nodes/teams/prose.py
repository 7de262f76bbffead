"""Which candidate a judge's prose picks: numbers, ordinals, agent types and the choosing words around them.

No LangGraph here. Used by `reading` for answers that come as text rather than a `Pick` call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from replangraph.llm.reading import UnreadableInput, as_text, match_name

ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
CARDINALS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_NOUN = r"(?:\b(?:candidate|result|option|response|answer|submission|entry|proposal|solution)s?|\bno\.|\bnumber|#)"
_COUNT = r"\d+|" + "|".join(CARDINALS)
_ORDINAL = r"\d+(?:st|nd|rd|th)|last|" + "|".join(ORDINALS)
NUMBERED = re.compile(rf"{_NOUN}[\s_#-]*({_COUNT})\b|\b({_ORDINAL})\s+(?:{_NOUN}|one)\b", re.I)


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


def candidate_number(value: Any, count: int) -> int | None:
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


def by_name(text: str, names: Sequence[str]) -> int | None:
    """The 0-based index of the candidate whose agent type ``text`` is; None if none; UnreadableInput
    if several candidates have it."""
    numbers = _named(text, names)
    if len(numbers) > 1:
        raise _shared(_bare(text), numbers)
    return numbers[0] - 1 if numbers else None


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
        found = candidate_number(part, len(names))
        found = found if found is not None else by_name(part, names)
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


def from_prose(text: str, names: Sequence[str]) -> int:
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
