"""Teams: agent types whose subtasks several agent types run, one result kept. No LangGraph here.

A team subtask starts by queueing one member task per member (``{id}.m1``, ``{id}.m2``...,
placed right after it); they run like any subtask. Once every member has ended, the merge
keeps one result: a judge's pick (``best``), the highest total of the members' scores of each
other (``vote``), or a judge's combination (``fusion``). This module holds the settings and the
pure parts: member tasks, reading the judges' answers leniently, the merge's queue changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from replangraph.llm.lenient import UnreadableInput, as_text, load_json, match_name
from replangraph.queue.index import index_of
from replangraph.queue.plans import LimitReached
from replangraph.queue.tasks import TEAM_MEMBER, Task, TeamRecord, is_member, new_task, preview, sort_key

MERGES = ("best", "vote", "fusion")
UNFINISHED = {
    "pending": "it never ran: the step budget was used up first",
    "in_progress": "it did not finish: the step budget was used up first",
}
"""Why a member that has not ended is a failed candidate (a merge only comes early when the budget is spent)."""
ENDED = ("completed", "failed", "skipped")
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


@dataclass(frozen=True)
class Team:
    """An agent type whose subtasks each member agent type runs; ``merge`` keeps one result.

    ``merge``: ``best`` (the judge picks one, with a reason), ``vote`` (each member's model
    scores the others' results; the highest total wins, ties in member order) or ``fusion``
    (the judge writes one result combining them). ``judge_model`` (``best``, ``fusion``): None
    for the planner's model; False for no merge call at all (``vote`` included): the first
    successful result wins. ``description`` tells the planner what the team is for. A member
    may appear more than once (best-of-n: ``["default"] * 3``).
    """

    members: Sequence[str]
    merge: str = "best"
    judge_model: Any = field(default=None, compare=False)
    description: str = ""


def check_teams(teams: Mapping[str, Team] | None, agent_types: Sequence[str]) -> dict[str, Team]:
    """The teams, checked: TypeError or ValueError for a name an agent type has, an unknown
    merge, or members that are no agent types (teams included)."""
    checked: dict[str, Team] = {}
    for name, team in (teams or {}).items():
        if not isinstance(team, Team):
            raise TypeError(f"teams[{name!r}] must be a Team, got {type(team).__name__}")
        if name in agent_types:
            raise ValueError(f"team {name!r} has the name of an agent type; give one of them another name")
        if team.merge not in MERGES:
            raise ValueError(f"team {name!r} has merge={team.merge!r}; use one of {', '.join(MERGES)}")
        if team.merge == "vote" and team.judge_model not in (None, False):
            raise ValueError(
                f"team {name!r} has merge='vote' and a judge_model: the members' own models vote, so no judge "
                "is asked; leave judge_model out (False: no vote, the first successful result wins)"
            )
        members = [team.members] if isinstance(team.members, str) else list(team.members)
        if not members:
            raise ValueError(f"team {name!r} has no members")
        for member in members:
            if member in (teams or {}):
                raise ValueError(f"team {name!r} has team {member!r} as a member; members must be agent types")
            if member not in agent_types:
                known = ", ".join(agent_types)
                raise ValueError(f"team {name!r} has unknown member {member!r} (agent types: {known})")
        checked[name] = Team(tuple(members), team.merge, team.judge_model, team.description)
    return checked


def team_description(team: Team) -> str:
    """What the planner is told a team is: its own description, then what it does."""
    how = {
        "best": "a judge keeps the best result",
        "vote": "the members score each other's results and the best scored is kept",
        "fusion": "a judge combines their results into one",
    }[team.merge]
    what = f"team of {', '.join(team.members)}: each runs the subtask, then {how}"
    return f"{team.description.rstrip('. ')}. ({what}.)" if team.description else what[0].upper() + what[1:] + "."


# --------------------------------------------------------------------------- start


def member_id(task_id: str, number: int) -> str:
    """The task id of a team subtask's ``number``-th member (from 1)."""
    return f"{task_id}.m{number}"


def start_changes(task: Task, name: str, team: Team, queue_size: int, max_tasks: int) -> dict[str, Any]:
    """The queue changes that start a team subtask: its member tasks, and the subtask in progress
    with its record. `LimitReached` when the members would pass ``max_tasks``."""
    if queue_size + len(team.members) > max_tasks:
        raise LimitReached(
            f"team {name!r} needs room for {len(team.members)} member tasks; the queue holds {queue_size} "
            f"of at most max_tasks={max_tasks}",
            limit="max_tasks",
            value=max_tasks,
            needed=queue_size + len(team.members),
        )
    members: dict[str, Any] = {}
    for number, agent_type in enumerate(team.members, 1):
        member = new_task(
            member_id(task["id"], number),
            task["content"],
            position=[*task["position"], number - 1],
            agent_type=agent_type,
            depends_on=task["depends_on"],  # completed: a member is ready at once, with the same inputs
            parent_id=task["id"],
            metadata=task.get("metadata"),
            depth=task.get("depth", 0),
            origin=TEAM_MEMBER,
            plan_id=task.get("plan_id") or "1",
        )
        if "required_tools" in task:  # what the planner said the subtask needs
            member["required_tools"] = task["required_tools"]
        members[member["id"]] = member
    record = TeamRecord(
        name=name,
        strategy=team.merge,
        members=list(members),
        candidates=[],
        winner=None,
        winner_id=None,
        reason="",
        scores={},
        model_calls=0,
    )
    return {task["id"]: {"status": "in_progress", "team": record}, **members}


def settled(tasks: Mapping[str, Task], task: Task) -> bool:
    """Whether every member of a running team subtask has ended (or left the queue)."""
    members = (task.get("team") or {}).get("members") or []
    return all(m not in tasks or tasks[m]["status"] in ENDED for m in members)


def mergeable(tasks: Mapping[str, Task], task: Task, budget_spent: bool) -> bool:
    """Whether a running team subtask can merge: every member has ended, or the step budget is spent
    and some member completed (the others will not run: they are failed candidates)."""
    if settled(tasks, task):
        return True
    members = (task.get("team") or {}).get("members") or []
    return budget_spent and any(tasks.get(m, {}).get("status") == "completed" for m in members)


# --------------------------------------------------------------------------- candidates


@dataclass
class Candidate:
    """One member's run as the merge sees it: ``text`` is its whole result when it completed."""

    id: str
    agent_type: str
    text: str | None
    error: str | None
    result_key: str | None = None
    handoff: list[str] = field(default_factory=list)
    model_calls: int = 0
    kept: str | None = None
    """Its whole result, or the partial result a failed member kept: saved on the team subtask."""
    output_id: str | None = None
    """Where ``kept`` can be read with ``read_output`` after the merge (``{team task}/candidate-m2``)."""

    @property
    def ok(self) -> bool:
        return self.text is not None

    def record(self) -> dict[str, Any]:
        """Its `TeamCandidate` entry."""
        return {
            "id": self.id,
            "agent_type": self.agent_type,
            "result_preview": preview(self.text, 200) if self.text is not None else None,
            "error": self.error,
            "result_key": self.result_key,
            "output_id": self.output_id,
            "handoff": list(self.handoff),
        }


def candidates(
    tasks: Mapping[str, Task], task: Task, team: Team, full_result: Callable[[Task], str | None]
) -> list[Candidate]:
    """The members' runs in member order; a member that left the queue (a replan) is a failed candidate."""
    found: list[Candidate] = []
    index = index_of(tasks)
    member_ids = (task.get("team") or {}).get("members") or []
    for member_task_id, agent_type in zip(member_ids, team.members, strict=False):
        member = tasks.get(member_task_id)
        if member is None:
            found.append(Candidate(member_task_id, agent_type, None, "it left the queue before it ran (a replan)"))
            continue
        held = sorted((tasks[c] for c in index.children.get(member_task_id, ()) if c in tasks), key=sort_key)
        done = member["status"] == "completed"
        kept = full_result(member) if done or member.get("result") else None
        found.append(
            Candidate(
                member_task_id,
                member["agent_type"],
                (kept or "") if done else None,
                None if done else member.get("error") or UNFINISHED.get(member["status"], member["status"]),
                (member.get("result_ref") or {}).get("key"),
                [t["content"] for t in held],
                member.get("model_calls", 0),
                kept,
                f"{task['id']}/{candidate_key(task['id'], member_task_id)}" if kept is not None else None,
            )
        )
    return found


def candidate_key(task_id: str, member_task_id: str) -> str:
    """The key a member's result is saved under on its team subtask: ``candidate-m2``."""
    return "candidate-" + member_task_id.removeprefix(f"{task_id}.")


# --------------------------------------------------------------------------- reading the judges


@dataclass(frozen=True, order=True)
class _Mention:
    """A candidate named in prose: where, the numbers it may mean (several: a shared agent type), as written."""

    start: int
    end: int
    numbers: tuple[int, ...]
    label: str


_THINKING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.I | re.S)
_THINKING_END = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_THINKING_START = re.compile(r"\s*<(?:think|thinking|reasoning)>", re.I)
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


def _without_thinking(answer: Any) -> str:
    """The answer without a reasoning model's ``<think>…</think>`` blocks: a block missing its opening
    tag ends at ``</think>``; one never closed runs to the end."""
    text = _THINKING.sub("", as_text(answer))
    ends = list(_THINKING_END.finditer(text))
    text = text[ends[-1].end() :] if ends else text
    return "" if _THINKING_START.match(text) else text.strip()


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


def read_choice(answer: str, names: Sequence[str]) -> tuple[int, str]:
    """``(0-based index, reason)`` from a judge's pick among candidates named ``names`` (numbered
    from 1). Reasoning (``<think>…</think>``) is skipped. JSON (fenced or in prose) is read under the
    usual keys, loosely (``winner``, ``best_candidate``, ``winner_id``, ``{"winner": {"candidate": 2}}``,
    a ``ranking``'s first); prose as `_from_prose` says. An agent type counts only when one candidate
    has it. UnreadableInput when it names none, several without a winner, or a number out of range."""
    text = _without_thinking(answer)
    if not text:
        raise UnreadableInput("the answer is empty (or only reasoning)")
    value = _json(text)
    if isinstance(value, Mapping):
        reason = next((as_text(v).strip() for v in _fields(value, REASON_KEYS) if as_text(v).strip()), "")
        picks = _fields(value, CHOICE_KEYS, REASON_KEYS) + [_top(v) for v in _fields(value, RANKING_KEYS)]
        if picks:
            return _first_readable(picks, lambda v: _pick(v, names)), reason
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
    text = _without_thinking(answer)
    read: dict[int, tuple[float, float | None]] = {}
    for pairs in (_json_pairs(_json(text)), _text_pairs(text)):
        for who, score in pairs:
            try:
                index = _pick(who, names)
            except UnreadableInput:
                continue
            points = _score(score)
            if points and (points[1] or points[0] <= 100):
                read.setdefault(index, points)
        if read:
            return _scaled(list(read.items()))
    raise UnreadableInput("it gives no score to a candidate by number")


def read_fusion(answer: str) -> str:
    """The combined result a judge wrote: its text without reasoning, a lead-in line ("Here is the
    combined result:") or a plain-text fence (a code fence stays), or the text field of a JSON object
    (``result``, ``fused``, ``final_answer``, ``merged``...)."""
    text = _LEAD_IN.sub("", _without_thinking(answer), count=1).strip()
    fence = _PLAIN_FENCE.fullmatch(text)
    body = fence.group(2).strip() if fence and "```" not in fence.group(2) else None
    if body is not None and fence.group(1).lower() in ("", "text", "txt", "plaintext", "markdown", "md", "json"):
        text = body
    if text[:1] == "{":
        value = _json(text)
        if isinstance(value, Mapping):
            text = next((as_text(v).strip() for v in _fields(value, TEXT_KEYS) if as_text(v).strip()), text)
    if not text:
        raise UnreadableInput("the answer is empty (or only reasoning)")
    return text


def vote_winner(totals: Mapping[str, float], order: Sequence[str]) -> str:
    """The id with the highest total; ties go to the earliest in ``order``."""
    return max(order, key=lambda i: (totals.get(i, 0.0), -order.index(i)))


# --------------------------------------------------------------------------- the merge's queue changes


def adopted(tasks: Mapping[str, Task], task: Task, sources: Sequence[str]) -> dict[str, Task]:
    """The held follow-ups (handed off, or found missing by the completion check) of the members in
    ``sources`` (the winner; for a fusion, every member it combined), each content once, as dynamic
    tasks of the team subtask: ``{id}_dyn_0``..., depending on it, placed right after it."""
    index = index_of(tasks)
    held: list[Task] = []
    for source in sources:
        held += sorted((tasks[c] for c in index.children.get(source, ()) if c in tasks), key=sort_key)
    unique = {" ".join(t["content"].split()).lower(): t for t in reversed(held)}  # the first of each content
    held = [t for t in held if unique[" ".join(t["content"].split()).lower()] is t]
    created: dict[str, Task] = {}
    number = 0
    for follow_up in held:
        while f"{task['id']}_dyn_{number}" in tasks:
            number += 1
        task_id = f"{task['id']}_dyn_{number}"
        created[task_id] = new_task(
            task_id,
            follow_up["content"],
            position=[*task["position"], number],
            agent_type=follow_up["agent_type"],
            depends_on=[task["id"]],
            parent_id=task["id"],
            metadata=task.get("metadata"),
            depth=task.get("depth", 0) + 1,
            origin="dynamic",
            plan_id=task.get("plan_id") or "1",
        )
        number += 1
    return created


def removals(tasks: Mapping[str, Task], task: Task) -> dict[str, None]:
    """Removal of a team subtask's member tasks and the work they held."""
    index = index_of(tasks)
    gone: dict[str, None] = {}
    for member in (task.get("team") or {}).get("members") or []:
        if is_member(tasks.get(member)):
            gone[member] = None
            gone.update((t, None) for t in index.subtree(member))
    return gone
