"""Numbered item ranges in subtask instructions, and the range arithmetic the engine needs with nothing but the
instruction texts (no LangGraph, no model calls).

Models hand off or ask for work by ranges: "Extract products ranked 51-100 from the bestseller ranking: name,
units sold and rating.", "Look up the climate figures of survey cities 5-8." Here:

- `scope_of` reads the one range of an instruction as a `Scope`; `Scope.text` writes the same instruction for
  another range; `same_list` says whether two scopes count items of one list.
- `union` and `subtract`: arithmetic on inclusive ranges.
- `fresh_work`: the follow-ups worth queueing (no repeat of work queued, running or completed; a completion check's
  follow-ups kept inside the checked subtask's scope). `gaps`: what a hand-off's follow-ups leave out.
- `batched_plan`: a plan's runs of one-item tasks ("one task per product") as tasks of at most ``batch_size``
  items.

What is read as a range (kept simple on purpose): two whole numbers joined by "-", "–" or "—" (spaces allowed),
" to ", " through " or " thru ", the first not larger than the last; "1,001" thousands separators are read.
Not read: numbers touching a letter, one of ``. , : / $ € £`` or another dash (decimals "3.5-4.0", versions
"Python 3.10-3.12", dates "2024-01-15", "v1-2", "B12-14", times "10:30-11:00", prices "$5-10"), a range followed
by "%", "100-51", a range in a list of numbers ("cities 1, 2, 5-8", "5-8 and 10", "5-8, 10, 12"; "products 1-50,
5 per call" is read), ordinals ("51st to 100th"), "between 51 and 100", and any instruction with two ranges or
more. Read although not an item range: counts and units ("a 500-1000 word essay", "5 to 10 minutes"),
"555-1234", "from 3 to 5 replicas". Such a scope only meets scopes of the same list, which share its words
(`same_list`).

Choices, and why:

- `Scope` keeps the text ``before`` and ``after`` the range (``template`` is a property): no placeholder that an
  instruction might itself hold. It keeps how the range was written (separator, thousands commas) so `Scope.text`
  writes a new range the same way; a one-item range is written "51-51", not "51", so that `scope_of` (and any
  reader of "a-b") reads it back.
- `same_list` also counts the templates' other numbers as words ("chapter 3" and "chapter 4" are two lists: a
  false "same list" drops work, a false "different list" only misses a repeat), and folds plurals ("product" is
  "products").
- `fresh_work` ignores a taken scope on the subtask's list whose range holds the subtask's whole range: that is
  the subtask itself, or the subtask whose work it continues (its hand-off parent), not work its follow-ups repeat.
- `batched_plan` merges tasks that share the same dependencies (none inside the run), not only tasks without
  any: "open the site, then extract product 1, ..., product 100" batches too.
- `batched_plan` reads a one-item task beside its neighbour: alone, "Extract the product ranked 7 from the top 100"
  does not say which of its numbers is the item; the number in which two such tasks differ does.
- `FreshWork.dropped_or_trimmed` is ``len(notes)``: every follow-up dropped or trimmed gets exactly one note.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

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


@dataclass(frozen=True)
class FreshWork:
    """What `fresh_work` decided: the instructions to queue, in order, and one note per follow-up dropped or
    trimmed."""

    queued: list[str]
    notes: list[str]

    @property
    def dropped_or_trimmed(self) -> int:
        """How many follow-ups were dropped or trimmed."""
        return len(self.notes)


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


def fresh_work(
    contents: Sequence[str], *, within: str | None = None, taken: Sequence[tuple[str, str]] = ()
) -> FreshWork:
    """The follow-ups worth queueing.

    ``contents``: the follow-ups' instructions, in order. ``within``: the instructions of the subtask whose work
    they are (the one handing off, or the one the completion check judged), or None. ``taken``: ``(task id,
    instructions)`` of work queued, running or completed that they must not repeat. Each follow-up, in order:

    - an exact repeat (case, whitespace and closing punctuation ignored) of ``within``, of a taken instruction or
      of an earlier follow-up is dropped;
    - one with a scope on ``within``'s list is clipped to ``within``'s range;
    - the ranges of taken scopes on its list, and of the earlier follow-ups' queued pieces, are taken out (a taken
      scope on ``within``'s list that holds ``within``'s whole range is ``within`` itself or the subtask it
      continues: not taken out); each piece left is queued, written with `Scope.text`;
    - one without a scope is queued unchanged.

    Each text is parsed once; the cost grows with ``len(contents) + len(taken)`` (times the few distinct lists).
    """
    own = scope_of(within) if within else None
    repeats = {_plain(within): "the subtask itself"} if within else {}
    covered = _Lists()
    for task_id, text in taken:
        repeats.setdefault(_plain(text), f"task {task_id}")
        scope = scope_of(text)
        if scope is not None and not (own is not None and _holds(scope, own) and same_list(scope, own)):
            covered.add(scope.words, scope.span, f"task {task_id}")
    queued: list[str] = []
    notes: list[str] = []
    for n, text in enumerate(contents, 1):
        plain = _plain(text)
        if plain in repeats:
            notes.append(f'Follow-up "{preview(text, 60)}" dropped: it repeats {repeats[plain]}.')
            continue
        repeats[plain] = f"follow-up {n}"
        scope = scope_of(text)
        if scope is None:
            queued.append(text)
            continue
        pieces, reasons = _fresh_pieces(scope, own, within, covered)
        for piece in pieces:
            covered.add(scope.words, piece, f"follow-up {n}")
        queued.extend([text] if pieces == [scope.span] else [scope.text(*piece) for piece in pieces])
        if reasons:
            done = f"trimmed to {_written(scope, pieces)}" if pieces else "dropped"
            notes.append(f'Follow-up "{preview(text, 60)}" {done}: {"; ".join(reasons)}.')
    return FreshWork(queued, notes)


def gaps(within: str, follow_ups: Sequence[str]) -> list[str]:
    """The parts of ``within``'s range, from where its follow-ups on the same list start to its last item, that no
    such follow-up covers, as ``within``'s instructions for them. [] when ``within`` has no scope or no follow-up
    is on its list. (The items before the first follow-up are the handing-off agent's own work.)"""
    own = scope_of(within)
    if own is None:
        return []
    spans = [scope.span for scope in map(scope_of, follow_ups) if scope is not None and same_list(scope, own)]
    start = max(own.first, min((first for first, _ in spans), default=own.last + 1))
    if start > own.last:
        return []
    return [own.text(first, last) for first, last in subtract([(start, own.last)], spans)]


def batched_plan(specs: Sequence[Mapping[str, Any]], batch_size: int, min_run: int = 2) -> tuple[list[dict], list[str]]:
    """The plan with each run of item tasks merged into tasks of at most ``batch_size`` items, and one note per run.

    A run: ``min_run`` or more consecutive tasks whose instructions differ only in one item number, with the same
    ``agent_type``, ``required_tools`` and ``depends_on`` (none of them inside the run). Its items, sorted, are
    cut into batches written as one range ("ranked 1-50") or a list ("ranked 3, 7-9, 12"); a batch takes the id
    of its first task in the plan, and what depended on a merged task depends on its batch. Every other task is
    copied unchanged, in order.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    numbered = [_numbered(str(spec.get("content", ""))) for spec in specs]
    runs = [run for run in _item_runs(specs, numbered) if run[1] - run[0] >= min_run] if batch_size > 1 else []
    planned: list[dict] = []
    notes: list[str] = []
    holder: dict[str, str] = {}
    done = 0
    for start, end, k in runs:
        planned.extend(dict(spec) for spec in specs[done:start])
        batches = _batches(specs, numbered, range(start, end), k, batch_size)
        for task, members in batches:
            holder.update((str(member), str(task["id"])) for member in members)
            planned.append(task)
        first_id, last_id = specs[start]["id"], specs[end - 1]["id"]
        notes.append(
            f"tasks {first_id} to {last_id} ({end - start}, one item each) were batched into {len(batches)} tasks"
            f" of at most {batch_size} items"
        )
        done = end
    planned.extend(dict(spec) for spec in specs[done:])
    for task in planned:
        if holder and task.get("depends_on"):
            task["depends_on"] = list(dict.fromkeys(holder.get(str(dep), dep) for dep in task["depends_on"]))
    return planned, notes


def merged_ranges(
    specs: Sequence[Mapping[str, Any]], batch_size: int, min_tasks: int = 1
) -> tuple[list[dict], list[str]]:
    """The plan with each run of consecutive tasks about adjacent ranges, worded alike but for the range (same
    agent type, tools and dependencies, none depending on another), merged while a merged task holds at most
    ``batch_size`` items, and one note per merge: "products 51-55", "56-60" ... become "products 51-100". The
    plan keeps at least
    ``min_tasks`` tasks (room for parallel subtasks); a merged task takes its first task's id, and what depended
    on a merged task depends on it. Every other task is copied unchanged, in order."""
    scopes = [scope_of(str(spec.get("content", ""))) for spec in specs]
    planned: list[dict] = []
    holder: dict[str, str] = {}
    notes: list[str] = []
    merges_left = max(len(specs) - max(min_tasks, 1), 0)
    i = 0
    while i < len(specs):
        head, end = scopes[i], i + 1
        while (
            head is not None
            and merges_left > end - i - 1
            and end < len(specs)
            and (nxt := scopes[end]) is not None
            and _plain(nxt.template) == _plain(head.template)  # the same words around the range, not only one list
            and _alike(specs[i], specs[end])
            and nxt.first == scopes[end - 1].last + 1
            and nxt.last - head.first + 1 <= batch_size
        ):
            end += 1
        task = dict(specs[i])
        if end - i > 1:
            task["content"] = head.text(head.first, scopes[end - 1].last)
            holder.update((str(specs[j]["id"]), str(task["id"])) for j in range(i + 1, end))
            ids = f"{specs[i]['id']} to {specs[end - 1]['id']}"
            notes.append(f"tasks {ids} ({end - i} adjacent ranges) were merged into one of at most {batch_size} items")
            merges_left -= end - i - 1
        planned.append(task)
        i = end
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


def _fresh_pieces(scope: Scope, own: Scope | None, within: str | None, covered: _Lists) -> tuple[list[Range], list]:
    """The pieces of a follow-up's range worth queueing, and why the rest is not."""
    ranges, reasons = [scope.span], []
    if own is not None and same_list(scope, own):
        ranges = [(max(scope.first, own.first), min(scope.last, own.last))] if _meets(scope, own) else []
        if ranges != [scope.span]:
            reasons.append(f'outside the scope of "{preview(within, 60)}" ({_written(own, [own.span])})')
    lists = covered.on_list(scope.words)
    left = subtract(ranges, [part for span in ranges for c in lists for part in c.part(span)])
    if left != ranges:
        names = list(dict.fromkeys(name for span in ranges for c in lists for name in c.names(span)))
        more = " and others" if len(names) > _NAMED else ""
        reasons.append(f"already covered by {', '.join(names[:_NAMED])}{more}")
    return left, reasons


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


def _batches(
    specs: Sequence[Mapping[str, Any]], numbered: list, run: range, k: int, batch_size: int
) -> list[tuple[dict, list[str]]]:
    """The run's tasks as batches of at most ``batch_size`` items: each batch's task and the ids it holds."""
    items = sorted((_int(numbered[j][1][k]), j) for j in run)
    commas = any("," in numbered[j][1][k] for j in run)
    batches = []
    for at in range(0, len(items), batch_size):
        batch = items[at : at + batch_size]
        first = min(j for _, j in batch)
        parts, numbers = numbered[first]
        task = dict(specs[first])
        style = Scope("", 0, 0, "", commas=commas)
        written = _written(style, union((n, n) for n, _ in batch))
        task["content"] = _joined(parts[: k + 1], numbers[:k]) + written + _joined(parts[k + 1 :], numbers[k + 1 :])
        batches.append((task, [str(specs[j]["id"]) for j in sorted(j for _, j in batch)]))
    return batches


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


def _joined(parts: Sequence[str], numbers: Sequence[str]) -> str:
    """Parts with the numbers between them (one part more than numbers)."""
    return "".join(part + number for part, number in zip(parts, [*numbers, ""], strict=True))


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


def _meets(scope: Scope, other: Scope) -> bool:
    """Whether two scopes' ranges share an item."""
    return scope.first <= other.last and other.first <= scope.last


def _plain(text: str) -> str:
    """``text`` for comparing: lower-case, whitespace collapsed, closing punctuation left out."""
    return " ".join(text.lower().split()).rstrip(" .!?;:,…")


def _int(number: str) -> int:
    """A number as written ("1,001") as an int."""
    return int(number.replace(",", ""))
