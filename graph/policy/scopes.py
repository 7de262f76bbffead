"""Numbered item ranges in subtask instructions, read from the instruction texts alone (no LangGraph, no model
calls): part of the text policy (`replangraph.policy`), so nothing here ever removes, trims, merges or rewrites
work a model asked for. It may add work, group it, or annotate it.

Models hand off or ask for work by ranges: "Extract products ranked 51-100 from the bestseller ranking: name,
units sold and rating.", "Look up the climate figures of survey cities 5-8." Here:

- `scope_of` reads the one range of an instruction as a `Scope`; `Scope.text` writes the same instruction for
  another range; `same_list` says whether two scopes count items of one list.
- `union` and `subtract`: arithmetic on inclusive ranges.
- `overlap_notes`: notes on follow-ups whose range meets work queued, running or done (they are queued anyway).
  `gaps`: what a hand-off's follow-ups leave out of its range (queued as well).
- `grouped_plan`: a plan's long runs of one-item tasks ("one task per product") as groups that keep their
  members' instructions word for word, never fewer groups than may run at once.

What is read as a range (kept simple on purpose): two whole numbers joined by "-", "–" or "—" (spaces allowed),
" to ", " through " or " thru ", the first not larger than the last; "1,001" thousands separators are read.
Not read: numbers touching a letter, one of ``. , : / $ € £`` or another dash (decimals "3.5-4.0", versions
"Python 3.10-3.12", dates "2024-01-15", "v1-2", "B12-14", times "10:30-11:00", prices "$5-10"), a range followed
by "%", "100-51", a range in a list of numbers ("cities 1, 2, 5-8", "5-8 and 10", "5-8, 10, 12"; "products 1-50,
5 per call" is read), ordinals ("51st to 100th"), "between 51 and 100", and any instruction with two ranges or
more. Read although not an item range: prices, pages, years and units ("from 25 to 100 dollars", "pages 1-15",
"a 500-1000 word essay"): which is why a range only ever adds work (`gaps`) or a note, never takes work away.
Such a scope only meets scopes of the same list, which share its words (`same_list`).

Choices, and why:

- `Scope` keeps the text ``before`` and ``after`` the range (``template`` is a property): no placeholder that an
  instruction might itself hold. It keeps how the range was written (separator, thousands commas) so `Scope.text`
  writes a new range the same way; a one-item range is written "51-51", not "51", so that `scope_of` (and any
  reader of "a-b") reads it back.
- `same_list` also counts the templates' other numbers as words ("chapter 3" and "chapter 4" are two lists), and
  folds plurals ("product" is "products").
- `overlap_notes` ignores a taken scope on the subtask's list whose range holds the subtask's whole range: that is
  the subtask itself, or the subtask whose work it continues (its hand-off parent).
- `grouped_plan` groups tasks that share the same dependencies (none inside the run), not only tasks without
  any: "open the site, then extract product 1, ..., product 100" groups too. It reads a one-item task beside its
  neighbour: alone, "Extract the product ranked 7 from the top 100" does not say which of its numbers is the
  item; the number in which two such tasks differ does. Grouping rewrites nothing, so reading wrong costs only
  how the work is cut into subtasks.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from replangraph.queue.index import index_of
from replangraph.queue.tasks import preview

Range = tuple[int, int]
"""Inclusive ``(first, last)`` item numbers, first <= last."""

_NUMBER = r"\d{1,3}(?:,\d{3})+|\d+"
_LONE = r"(?<![\w.,:/$€£\-–—])"  # not glued to a word, a decimal, a time, a date, a price or a dash
_ENDS = r"(?![\w%]|[.,:/]\d)"
_RANGE = re.compile(
    rf"{_LONE}({_NUMBER})(\s*[-–—]\s*|\s+(?:to|through|thru)\s+)({_NUMBER}){_ENDS}(?!\s*[-–—]\s*\d)", re.IGNORECASE
)
_WHOLE_NUMBER = re.compile(rf"{_LONE}({_NUMBER}){_ENDS}")
_JOINER = r"\s*(?:,|&|\band\b|\bor\b)\s*"
_LISTED_BEFORE = re.compile(rf"\d{_JOINER}$", re.IGNORECASE)
_LISTED_AFTER = re.compile(  # ", 10", ", 10 and 12", not ", 5 per call"
    rf"{_JOINER}(?:{_NUMBER})(?!\w|\.\d)\s*(?:$|[^\w\s]|\d|(?:and|or)\b)", re.IGNORECASE
)
_ONLY_JOINER = re.compile(rf"{_JOINER}", re.IGNORECASE)
_STOP_WORDS = frozenset(
    {"a", "an", "the", "of", "to", "from", "in", "on", "at", "for", "by", "with", "and", "or", "as", "each", "all"}
    | {"its", "their", "this", "that", "these", "those", "is", "are", "be", "into", "per"}
)
_NAMED = 3  # task names a note shows


@dataclass(frozen=True)
class Scope:
    """An instruction about one numbered range of items: its text before and after the range, and the range."""

    before: str
    first: int
    last: int
    after: str
    separator: str = "-"
    commas: bool = False

    @property
    def template(self) -> str:
        """The instruction with its range written ``{range}``."""
        return f"{self.before}{{range}}{self.after}"

    @property
    def span(self) -> Range:
        """The range, ``(first, last)``."""
        return (self.first, self.last)

    def text(self, first: int, last: int) -> str:
        """The same instruction about items ``first`` to ``last``, its range written as this one writes it
        (a one-item range too: "51-51")."""
        return f"{self.before}{self.number(first)}{self.separator}{self.number(last)}{self.after}"

    def number(self, n: int) -> str:
        """``n`` written as this instruction writes numbers (with thousands commas or without)."""
        return f"{n:,}" if self.commas else str(n)

    @cached_property
    def words(self) -> frozenset[str]:
        """The template's content words (see `same_list`)."""
        return _content_words(f"{self.before} {self.after}")


def scope_of(text: str) -> Scope | None:
    """The one item range of an instruction, or None (no range, several, or not read as one: see the module)."""
    found = list(_RANGE.finditer(text))
    if len(found) != 1:
        return None
    match = found[0]
    first, last = _int(match[1]), _int(match[3])
    before, after = text[: match.start()], text[match.end() :]
    if first > last or _LISTED_BEFORE.search(before) or _LISTED_AFTER.match(after):
        return None
    return Scope(before, first, last, after, separator=match[2], commas="," in match[1] + match[3])


def same_list(a: Scope, b: Scope) -> bool:
    """Whether two scopes count items of the same list: their content words (lower-case, plurals folded, a few
    stop words left out, the templates' other numbers kept) are equal and not empty, or one set holds the other
    and the smaller has at least 2 words of letters."""
    return _same_words(a.words, b.words)


def union(ranges: Iterable[Range]) -> list[Range]:
    """The items of ``ranges`` as sorted, disjoint ranges; touching ranges merge: (1, 5), (6, 9) -> (1, 9)."""
    merged: list[list[int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return [(first, last) for first, last in merged]


def subtract(ranges: Iterable[Range], taken: Iterable[Range]) -> list[Range]:
    """The items of ``ranges`` that no range of ``taken`` covers, as sorted, disjoint ranges."""
    cuts, left, i = union(taken), [], 0
    for first, last in union(ranges):
        while i < len(cuts) and cuts[i][1] < first:
            i += 1
        j = i
        while first <= last:
            if j == len(cuts) or cuts[j][0] > last:
                left.append((first, last))
                break
            if cuts[j][0] > first:
                left.append((first, cuts[j][0] - 1))
            first, j = cuts[j][1] + 1, j + 1
    return left


def overlap_notes(
    contents: Sequence[str], *, within: str | None = None, taken: Sequence[tuple[str, str]] = ()
) -> list[str]:
    """Notes on follow-ups whose range meets work already taken, or reaches outside ``within``'s range:
    annotations only, nothing is dropped or trimmed (a number may be a price, a page or a year).

    ``contents``: the follow-ups' instructions. ``within``: the instructions of the subtask whose work they are,
    or None. ``taken``: ``(task id, instructions)`` of work queued, running or completed (a taken scope on
    ``within``'s list that holds ``within``'s whole range is ``within`` itself or the subtask it continues: not
    counted). Each text is parsed once."""
    own = scope_of(within) if within else None
    covered = _Lists()
    for task_id, text in taken:
        scope = scope_of(text)
        if scope is not None and not (own is not None and _holds(scope, own) and same_list(scope, own)):
            covered.add(scope.words, scope.span, f"task {task_id}")
    notes: list[str] = []
    for text in contents:
        scope = scope_of(text)
        if scope is None:
            continue
        said = []
        if own is not None and same_list(scope, own) and not _holds(own, scope):
            said.append(f'it reaches outside "{preview(within, 60)}" ({_written(own, [own.span])})')
        lists = covered.on_list(scope.words)
        met = [part for c in lists for part in c.part(scope.span)]
        if met:
            names = list(dict.fromkeys(name for c in lists for name in c.names(scope.span)))
            more = " and others" if len(names) > _NAMED else ""
            shared = _written(scope, [(max(a, scope.first), min(b, scope.last)) for a, b in union(met)])
            said.append(f"{shared} also in {', '.join(names[:_NAMED])}{more}")
        if said:
            notes.append(f'Follow-up "{preview(text, 60)}" queued as written; {"; ".join(said)}.')
    return notes


OPEN = ("pending", "in_progress")


def claimed_work(tasks: Mapping[str, Mapping[str, Any]], leave_out: Sequence[str] = ()) -> list[tuple[str, str]]:
    """``(task id, instructions)`` of the work the queue accounts for: each pending or running subtask's
    instructions, and each completed one's less the ranges of its list that its follow-ups took over (a subtask
    that read items 1-50 of 1-100 and handed off 51-100 accounts for 1-50). Failed and skipped subtasks account
    for nothing. ``leave_out``: ids not counted."""
    index = index_of(tasks)
    skip = set(leave_out)
    found = []
    for task_id, task in tasks.items():
        if task_id in skip or task["status"] not in (*OPEN, "completed"):
            continue
        scope = scope_of(task["content"]) if task["status"] == "completed" else None
        children = [tasks[c] for c in index.children.get(task_id, ()) if c in tasks] if scope is not None else []
        if not children:
            found.append((task_id, task["content"]))
            continue
        theirs = [s.span for c in children if (s := scope_of(c["content"])) is not None and same_list(s, scope)]
        found += [(task_id, scope.text(*piece)) for piece in subtract([scope.span], theirs)]
    return found


def gaps(within: str, follow_ups: Sequence[str]) -> list[str]:
    """The parts of ``within``'s range, from where its follow-ups on the same list start to its last item, that no
    such follow-up covers, as ``within``'s instructions for them. [] when ``within`` has no scope or no follow-up
    is on its list. (The items before the first follow-up are the handing-off agent's own work.)

    Follow-ups whose ranges touch ("from 100 to 200 dollars", "from 200 to 300 dollars") show a scale whose
    numbers are bounds, not items (prices, dates): a gap then reaches from the bound before it to the bound after
    it, so that what lies between two whole numbers is not lost ("from 300 to 400", not "from 301 to 399")."""
    own = scope_of(within)
    if own is None:
        return []
    spans = [scope.span for scope in map(scope_of, follow_ups) if scope is not None and same_list(scope, own)]
    start = max(own.first, min((first for first, _ in spans), default=own.last + 1))
    if start > own.last:
        return []
    holes = subtract([(start, own.last)], spans)
    if touching(spans):
        holes = [(max(first - 1, start), min(last + 1, own.last)) for first, last in holes]
    return [own.text(first, last) for first, last in holes]


def touching(spans: Sequence[Range]) -> bool:
    """Whether two of ``spans`` share a bound: one ends where the next begins."""
    ordered = sorted(spans)
    return any(a[1] == b[0] and a != b for a, b in zip(ordered, ordered[1:], strict=False))


GROUP_OPENING = "Do each of these {count} tasks, as written, and give the result of every one:"
"""How a group's instructions begin; its members' own instructions follow, one a line."""


def group_text(contents: Sequence[str]) -> str:
    """The instructions of a group: `GROUP_OPENING`, then each member's own instructions, word for word."""
    return "\n".join([GROUP_OPENING.format(count=len(contents)), *(f"- {c}" for c in contents)])


def grouped_plan(
    specs: Sequence[Mapping[str, Any]], batch_size: int, min_groups: int = 1, min_run: int = 2
) -> tuple[list[dict], list[str]]:
    """The plan with each run of item tasks grouped, and one note per run: a group is one task whose
    instructions list its members' own, word for word (`group_text`); nothing is merged or rewritten.

    A run: ``min_run`` or more consecutive tasks whose instructions differ only in one number, with the same
    ``agent_type``, ``required_tools`` and ``depends_on`` (none of them inside the run). Its tasks, in plan
    order, are cut into groups of at most ``batch_size`` members, and never fewer groups than ``min_groups``
    (nor than the run has tasks): the groups still run at once. A group takes the id of its first member and
    lists the members' ids in ``metadata["members"]``; what depended on a member depends on its group. Every
    other task is copied unchanged, in order.
    """
    if batch_size < 1 or min_groups < 1:
        raise ValueError("batch_size and min_groups must be at least 1")
    numbered = [_numbered(str(spec.get("content", ""))) for spec in specs]
    runs = [run for run in _item_runs(specs, numbered) if run[1] - run[0] >= min_run]
    planned: list[dict] = []
    notes: list[str] = []
    holder: dict[str, str] = {}
    done = 0
    for start, end, _ in runs:
        planned.extend(dict(spec) for spec in specs[done:start])
        size = max(1, min(batch_size, (end - start) // min_groups))  # ceil(n / size) >= min_groups
        if size == 1:
            planned.extend(dict(spec) for spec in specs[start:end])
            done = end
            continue
        groups = 0
        for at in range(start, end, size):
            members = specs[at : min(at + size, end)]
            groups += 1
            if len(members) == 1:  # a run's last one alone: as planned
                planned.append(dict(members[0]))
                continue
            task = dict(members[0])
            ids = [str(m["id"]) for m in members]
            task["content"] = group_text([str(m.get("content", "")) for m in members])
            task["metadata"] = {**(members[0].get("metadata") or {}), "members": ids}
            holder.update((member, ids[0]) for member in ids)
            planned.append(task)
        first_id, last_id = specs[start]["id"], specs[end - 1]["id"]
        notes.append(
            f"tasks {first_id} to {last_id} ({end - start}, one item each) run as {groups} groups of at most "
            f"{size}, each keeping its members' instructions"
        )
        done = end
    planned.extend(dict(spec) for spec in specs[done:])
    for task in planned:
        if holder and task.get("depends_on"):
            task["depends_on"] = list(dict.fromkeys(holder.get(str(dep), dep) for dep in task["depends_on"]))
    return planned, notes


class _Covered:
    """The ranges one list's work covers: merged, and by which task (``entries``, sorted by first item)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.entries: list[tuple[int, int, str]] = []
        self.longest = 0

    def add(self, span: Range, name: str) -> None:
        """Record that ``name`` covers ``span``."""
        first, last = span
        i = bisect_right(self.entries, (first, last, name))
        self.entries.insert(i, (first, last, name))
        self.longest = max(self.longest, last - first)
        lo, hi = bisect_left(self.ends, first - 1), bisect_right(self.starts, last + 1)
        if lo < hi:
            first, last = min(first, self.starts[lo]), max(last, self.ends[hi - 1])
        self.starts[lo:hi], self.ends[lo:hi] = [first], [last]

    def part(self, span: Range) -> list[Range]:
        """The merged ranges that meet ``span``."""
        lo, hi = bisect_left(self.ends, span[0]), bisect_right(self.starts, span[1])
        return list(zip(self.starts[lo:hi], self.ends[lo:hi], strict=True))

    def names(self, span: Range) -> list[str]:
        """Up to a few names of what covers some of ``span``."""
        found: list[str] = []
        i = bisect_right(self.entries, (span[1], float("inf"), "")) - 1
        while i >= 0 and self.entries[i][0] >= span[0] - self.longest and len(found) <= _NAMED:
            if self.entries[i][1] >= span[0]:
                found.append(self.entries[i][2])
            i -= 1
        return found[::-1]


class _Lists:
    """Covered ranges by list (a template's content words), with the lists that count as the same, memoized."""

    def __init__(self) -> None:
        self.by_words: dict[frozenset[str], _Covered] = {}
        self.same: dict[frozenset[str], list[_Covered]] = {}

    def add(self, words: frozenset[str], span: Range, name: str) -> None:
        """Record that ``name`` covers ``span`` of the list ``words``."""
        if words not in self.by_words:
            self.by_words[words] = _Covered()
            for asked, found in self.same.items():
                if _same_words(asked, words):
                    found.append(self.by_words[words])
        self.by_words[words].add(span, name)

    def on_list(self, words: frozenset[str]) -> list[_Covered]:
        """What covers ranges of the lists that count as ``words``'s list."""
        if words not in self.same:
            self.same[words] = [covered for key, covered in self.by_words.items() if _same_words(key, words)]
        return self.same[words]


def _written(scope: Scope, spans: Sequence[Range]) -> str:
    """Ranges written as ``scope`` writes its range, one-item ranges as one number, joined by ", "."""
    return ", ".join(
        scope.number(a) if a == b else f"{scope.number(a)}{scope.separator}{scope.number(b)}" for a, b in spans
    )


def _item_runs(specs: Sequence[Mapping[str, Any]], numbered: list) -> list[tuple[int, int, int]]:
    """``(start, end, k)`` of each run of item tasks in ``specs``: tasks ``start`` to ``end - 1``, whose
    instructions differ in their ``k``-th number."""
    runs, i = [], 0
    while i + 1 < len(specs):
        k = _item_index(numbered[i], numbered[i + 1]) if _alike(specs[i], specs[i + 1]) else None
        if k is None:
            i += 1
            continue
        seen = {_int(numbered[i][1][k]), _int(numbered[i + 1][1][k])}
        end = i + 2
        while end < len(specs) and _alike(specs[i], specs[end]) and _item_index(numbered[i], numbered[end]) == k:
            number = _int(numbered[end][1][k])
            if number in seen:
                break
            seen.add(number)
            end += 1
        runs.append((i, end, k))
        i = end
    return runs


def _alike(first: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Whether ``other`` may join a run begun by ``first``: same agent type, tools and dependencies, and neither
    depends on the other."""
    deps = set(map(str, first.get("depends_on") or ()))
    return (
        (first.get("agent_type") or None) == (other.get("agent_type") or None)
        and list(first.get("required_tools") or ()) == list(other.get("required_tools") or ())
        and deps == set(map(str, other.get("depends_on") or ()))
        and str(other.get("id")) not in deps
        and str(first.get("id")) not in deps
    )


def _numbered(text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``text`` cut at its whole numbers: the parts around them and the numbers as written. None when it has a
    range, a list of numbers, or no number."""
    if _RANGE.search(text):
        return None
    found = list(_WHOLE_NUMBER.finditer(text))
    if not found:
        return None
    parts = [text[: found[0].start()]]
    parts += [text[a.end() : b.start()] for a, b in zip(found, found[1:], strict=False)] + [text[found[-1].end() :]]
    if any(_ONLY_JOINER.fullmatch(part) for part in parts[1:-1]):
        return None
    return tuple(parts), tuple(match[1] for match in found)


def _item_index(a: tuple | None, b: tuple | None) -> int | None:
    """The one place in which two cut instructions differ, a number; None when they differ otherwise."""
    if a is None or b is None or a[0] != b[0]:
        return None
    differ = [k for k, (x, y) in enumerate(zip(a[1], b[1], strict=True)) if _int(x) != _int(y)]
    return differ[0] if len(differ) == 1 else None


def _content_words(text: str) -> frozenset[str]:
    """Lower-case words (plurals folded, stop words left out) and numbers of ``text``."""
    words = set()
    for token in re.findall(r"[^\W_]+", text.lower()):
        if not token.isalpha():
            words.add(token)
        elif token not in _STOP_WORDS:
            words.add(_singular(token))
    return frozenset(words)


def _singular(word: str) -> str:
    """A plural folded to its singular, roughly: "cities" -> "city", "products" -> "product"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _same_words(x: frozenset[str], y: frozenset[str]) -> bool:
    """`same_list` on content words."""
    if x == y:
        return bool(x)
    small, large = (x, y) if len(x) < len(y) else (y, x)
    return small < large and sum(word.isalpha() for word in small) >= 2


def _holds(scope: Scope, other: Scope) -> bool:
    """Whether ``scope``'s range holds all of ``other``'s."""
    return scope.first <= other.first and other.last <= scope.last


def _int(number: str) -> int:
    """A number as written ("1,001") as an int."""
    return int(number.replace(",", ""))
