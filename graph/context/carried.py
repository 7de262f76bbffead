"""What an agent read reaches its result. No LangGraph here.

An agent's answer or hand-off summary may paraphrase what it read ("Extracted products 1-50") or only point at
it, and the finalizer sees results, not windows. So a subtask's result carries, after the agent's own words, each
tool output it read whose data those words do not show (`with_reads`). Whether words show an output's data is
told by its **data words**: numbers and words of three letters or more, less the boilerplate that most lines of
the outputs share (a listing's field names, a page's footer) and a few common words. Words that hold half of an
output's telling data words (names, numbers of three characters or more), one of its names among them, carry it.

The same measure tells whether a result adds anything to an earlier one (`adds_data`); with what an agent's
calls returned (`read_digests`), it tells whether a follow-up that continues its parent's work has stopped
making progress (`made_progress`).

A continuation a limit queued goes on in its parent's window, after a note whose id names it (`continued_id`):
what its agent read and called itself is what follows that note (`own_part`); what came before is its parent's,
already in its parent's result.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from replangraph.context.fitting import excerpt, kept_id
from replangraph.llm.reading import message_text
from replangraph.names import BUILT_IN_TOOLS

CARRIED_SHARE = 1 / 2
"""Words that hold at least this share of an output's data words, and one of its names, carry that output's data."""
BOILERPLATE_SHARE = 0.5
"""A word found in more than this share of the lines of the outputs is boilerplate, not data (with enough lines)."""
BOILERPLATE_LINES = 4
"""Fewer lines than this tell nothing of boilerplate: every word counts."""
NEW_WORDS = 3
"""A result adds data to an earlier one when at least this many of its data words (and a tenth of them) are new."""
COMMON = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "not",
        "but",
        "all",
        "any",
        "its",
        "into",
        "per",
        "each",
        "than",
        "then",
        "there",
        "their",
        "them",
        "they",
        "you",
        "your",
        "our",
        "out",
        "off",
        "also",
        "more",
        "most",
        "some",
        "such",
        "only",
        "over",
        "under",
        "about",
        "after",
        "before",
        "what",
        "which",
        "when",
        "where",
        "who",
        "how",
        "will",
        "would",
        "can",
        "could",
        "should",
        "been",
        "being",
        "other",
        "these",
        "those",
        "here",
    ]
)
WORD = re.compile(r"\d(?:[\d,.]*\d)?|[A-Za-z0-9][A-Za-z0-9'._/-]*")
"""A word: a number (thousands separators and decimals kept: "19,218", "4.2"), or letters and digits."""
READS_HEAD = "Data its agent read that the text above does not show (tool outputs, as its window held them):"
"""Heads the outputs a result carries after the agent's own words."""


OUR_NOTES = re.compile(
    r'\[… output "[^"]*": characters \d+-\d+ of \d+ are not shown here;.*?…\]'
    r'|\[output "[^"]*" removed from context[^\]]*\]',
    re.DOTALL,
)
"""The notes replangraph puts in a text it cut or dropped: they say where the rest is, and hold no data."""


def data_words(text: str) -> set[str]:
    """The words of ``text`` that can carry data: numbers (any token with a digit) and words of three letters or
    more, lower-cased, trailing punctuation dropped, common words and replangraph's own notes left out."""
    found = set()
    for token in WORD.findall(OUR_NOTES.sub(" ", text)):
        word = token.rstrip("._/-'").lower()
        if any(c.isdigit() for c in word) or (len(word) >= 3 and word not in COMMON):
            found.add(word)
    return found


def boilerplate(texts: Iterable[str]) -> set[str]:
    """Data words found in more than `BOILERPLATE_SHARE` of the non-empty lines of ``texts`` (none when they
    have fewer than `BOILERPLATE_LINES` lines)."""
    lines = [line for text in texts for line in text.splitlines() if line.strip()]
    if len(lines) < BOILERPLATE_LINES:
        return set()
    counts = Counter(word for line in lines for word in data_words(line))
    return {word for word, n in counts.items() if n > BOILERPLATE_SHARE * len(lines)}


def telling(word: str) -> bool:
    """Whether a data word tells its item apart: a name or a number of three characters or more ("7" or "12" turn
    up in any text)."""
    return len(word) >= 3


def carried(words: str, texts: Sequence[str]) -> list[bool]:
    """For each of ``texts``, whether ``words`` show its data: at least `CARRIED_SHARE` of its telling data words
    (`telling`; of all its data words when none tells), one of its names among them when it has any, boilerplate
    shared by the texts left out. A text with no data words is carried."""
    shown = data_words(words)
    shared = boilerplate(texts)
    return [shows(shown, telling_words(data_words(text) - shared)) for text in texts]


def telling_words(words: set[str]) -> set[str]:
    """The `telling` ones of ``words``, or all of them when none tells."""
    return {w for w in words if telling(w)} or words


def shows(shown: set[str], own: set[str]) -> bool:
    """Whether the words ``shown`` show data whose words are ``own``: at least `CARRIED_SHARE` of them, and one of
    its names (words without digits) when it has any. Nothing to show is shown."""
    named = {w for w in own if not any(c.isdigit() for c in w)}
    enough = len(own & shown) >= CARRIED_SHARE * len(own)
    return not own or (enough and (not named or bool(named & shown)))


def adds_data(new: str, before: str | None) -> bool:
    """Whether ``new`` holds data ``before`` does not: at least `NEW_WORDS` new data words, and a tenth of its own."""
    own = data_words(new)
    fresh = own - data_words(before or "")
    return len(fresh) >= max(NEW_WORDS, len(own) / 10)


@dataclass(frozen=True)
class Read:
    """One tool output an agent read: the call that made it (``name {args}``) and its text as the window held it."""

    call: str
    text: str


ARGS_SHOWN = 200
"""Longest arguments a read's label shows."""
READ_BACK_CHARS = 10_000
"""Longest text of an output the window dropped that a result carries, as an excerpt (the whole stays readable
under its output id): the window held no more of an output than ``max_observation_chars``, 10,000 by default."""


def call_label(call: Mapping) -> str:
    """``name {json args}`` of a tool call, the arguments cut to `ARGS_SHOWN` characters."""
    args = json.dumps(call.get("args"), default=str, ensure_ascii=False, sort_keys=True)
    if len(args) > ARGS_SHOWN:
        args = args[: ARGS_SHOWN - 1] + "…"
    return f"{call.get('name') or 'tool'} {args}"


def reads_in(window: Sequence[AnyMessage], kept_text: Callable[[str], str | None] = lambda ident: None) -> list[Read]:
    """The outputs of the agent's own tools that ``window`` holds, in order: not the built-in tools' (toolkit,
    read_output, ask_user), not failed calls. An output the window dropped is read back whole with ``kept_text``
    (an output id -> its text, None when gone); a cut one is taken as the window shows it (its note names where
    the rest is)."""
    calls = {c.get("id"): c for m in window if isinstance(m, AIMessage) for c in m.tool_calls}
    reads = []
    for message in window:
        if not isinstance(message, ToolMessage) or message.status == "error" or message.name in BUILT_IN_TOOLS:
            continue
        text = message_text(message)
        ident = kept_id(message)
        if ident and text.startswith("[output ") and "removed from context" in text[:300]:
            whole = kept_text(ident)
            text = excerpt(whole, READ_BACK_CHARS, ident) if whole else text
        if text.strip():
            call = calls.get(message.tool_call_id) or {"name": message.name, "args": {}}  # a call the window lost
            reads.append(Read(call_label(call), text))
    return reads


def uncarried(words: str, reads: Sequence[Read]) -> list[Read]:
    """The reads whose data ``words`` do not show (`carried`)."""
    return [read for read, shown in zip(reads, carried(words, [r.text for r in reads]), strict=True) if not shown]


def with_reads(words: str, reads: Sequence[Read]) -> str:
    """``words``, followed by the reads whose data they do not show (under `READS_HEAD`); ``words`` as they are
    when they show them all. Empty words carry every read."""
    missing = uncarried(words, reads) if words.strip() else list(reads)
    if not missing:
        return words
    parts = [f"[{read.call}]\n{read.text}" for read in missing]
    head = f"{words.rstrip()}\n\n" if words.strip() else ""
    return head + "\n\n".join([READS_HEAD, *parts])


READS_KEPT = 200
"""Most read digests a task keeps (`read_digests`)."""


def read_digests(reads: Sequence[Read]) -> list[str]:
    """Short digests of an agent's reads (the call and what it returned), sorted, each once, at most
    `READS_KEPT`: what tells a follow-up that learned something new from one that repeats its parent."""
    return sorted(digests_of(reads))[:READS_KEPT]


def digests_of(reads: Sequence[Read]) -> set[str]:
    """The digest of every read (the call and what it returned), each once."""
    return {hashlib.sha1(f"{r.call}\n{r.text}".encode()).hexdigest()[:10] for r in reads}


def made_progress(
    new: str,
    reads: Sequence[Read],
    parent: Mapping | None,
    parent_result: str | None,
    known: Collection[str] = (),
) -> bool:
    """Whether a follow-up went beyond the work done before it. With reads of its own: one of its calls returned
    what none of its parent's did, nor (``known``: `known_reads`) any other subtask's of the run (a crafting
    agent's inventory count that grew, though its words read alike round after round). Without: its result
    (``new``) holds data the parent's does not (`adds_data`). A redo that reads pages read before, whatever its
    words ask, does neither: this is the progress rule that bounds the cost of work queued twice."""
    own = digests_of(reads)
    if own:
        return bool(own - set((parent or {}).get("read_digests") or ()) - set(known))
    return adds_data(new, parent_result)


def known_reads(tasks: Mapping[str, Mapping], leave_out: str) -> set[str]:
    """The read digests of every subtask of the run but ``leave_out`` (their `read_digests`, each at most
    `READS_KEPT`: a digest past that cap counts as new, so the rule errs towards more work, never less)."""
    return {d for task_id, task in tasks.items() if task_id != leave_out for d in task.get("read_digests") or ()}


CONTINUED_ID_PREFIX = "replangraph-continued-"
"""How the id of the note that opens a continuation's part of a carried window begins (the continuation's id
follows)."""


def continued_id(task_id: str) -> str:
    """The id of the note after which a window carried over from a stopped subtask is ``task_id``'s own."""
    return f"{CONTINUED_ID_PREFIX}{task_id}"


def own_start(task_id: str, window: Sequence[AnyMessage]) -> int:
    """Where ``task_id``'s own messages begin in ``window``: after the note that opened its part of a carried
    window, else at the start (a window of its own, or one whose note a compression folded with all before it)."""
    mark = continued_id(task_id)
    return next((i + 1 for i in range(len(window) - 1, -1, -1) if window[i].id == mark), 0)


def own_part(task_id: str, window: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages of ``window`` that are ``task_id``'s own (`own_start`)."""
    return list(window[own_start(task_id, window) :])


def call_labels(messages: Sequence[AnyMessage]) -> list[str]:
    """`call_label` of each call to an agent's own tools (not a built-in one) in ``messages``, in order."""
    return [
        call_label(c)
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c.get("name") not in BUILT_IN_TOOLS
    ]


def made_calls(window: Sequence[AnyMessage]) -> bool:
    """Whether the agent called a tool of its own (not a built-in one) in ``window``: it did some of its work."""
    return any(
        call.get("name") not in BUILT_IN_TOOLS for m in window if isinstance(m, AIMessage) for call in m.tool_calls
    )


ITEM_LINE = re.compile(r"^\s*(?:[-*•+]\s|\d{1,4}[.)]\s|#\d|\|)")
"""A line that is one item of a list: a bullet, a number, ``#rank``, a table row."""
ELIDED = re.compile(
    r"(?:\.\.\.|…)\s*(?:and|plus)\s+\d[\d,]*\s+(?:more|others)|\band\s+\d[\d,]*\s+(?:more|others)\b|"
    r"\(\s*\+?\d[\d,]*\s+more\b|\[(?:list\s+)?truncated\]|(?:remaining|other)\s+\d[\d,]*\s+"
    r"(?:items|entries|rows|products|results)\s+(?:are\s+)?(?:omitted|not shown|left out)",
    re.IGNORECASE,
)
"""How a shortened list says so: "... and 9 more", "(+9 more)", "[truncated]", "remaining 9 items omitted"."""


RECORD_CHARS = 200
"""Longest line that counts as a record of a list without a list mark."""
RECORD_RUN = 3
"""Consecutive short lines with a number that make a list of records ("item-7: code 55433", "City 5: 2,345 mm")."""


def item_lines(text: str) -> list[str]:
    """The lines of ``text`` that are items of a list: marked ones (`ITEM_LINE`), and records: short lines with a
    number, `RECORD_RUN` or more in a row (a sentence of prose on its own is no item)."""
    lines = [line.strip() for line in text.splitlines()]
    record = [bool(line) and len(line) <= RECORD_CHARS and any(c.isdigit() for c in line) for line in lines]
    found, run = [], []
    for line, is_record in [*zip(lines, record, strict=True), ("", False)]:
        if is_record and not ITEM_LINE.match(line):
            run.append(line)
            continue
        found += run if len(run) >= RECORD_RUN else []
        run = []
        if ITEM_LINE.match(line):
            found.append(line)
    return found


def item_groups(result: str) -> list[list[str]]:
    """The list items of a result (`item_lines`), by the part they come from: the agent's own words, then each
    output it carried (`READS_HEAD`)."""
    words, _, reads = result.partition(READS_HEAD)
    parts = [words, *re.split(r"\n\n(?=\[)", reads)] if reads else [words]
    return [group for group in map(item_lines, parts) if group]


COMMON_SHARE = 0.1
"""A word found in more items than this share of them (and in more than two) tells no item apart: a field name,
a footer, the noun forty products share."""


def left_out(answer: str, results: Sequence[str]) -> list[str]:
    """The list items of ``results`` that no line of ``answer`` shows, each once, in order.

    Each item is matched against one line at a time, by its words weighted by how rare they are among all the
    items (a word common to many items weighs nothing): a line shows the item when it holds `CARRIED_SHARE` of its
    weight and one of its names. So "#121 Amber Backpack" is not shown by "#1 Amber Lamp", and a product's data
    spread over other products' lines never shows it."""
    items = list(dict.fromkeys(item for result in results for group in item_groups(result) for item in group))
    words = [data_words(item) for item in items]
    counts = Counter(word for own in words for word in own)
    common = max(2, COMMON_SHARE * len(items))
    weight = {word: math.log(len(items) / n) for word, n in counts.items() if n <= common}
    lines = [data_words(line) for line in answer.splitlines()]
    by_word: dict[str, list[int]] = {}
    for number, line in enumerate(lines):
        for word in line:
            by_word.setdefault(word, []).append(number)
    missing = []
    for item, own in zip(items, words, strict=True):
        telling = {w: weight[w] for w in own if w in weight and weight[w] > 0}
        if telling and not shown_by_a_line(telling, by_word):
            missing.append(item)
    return missing


def shown_by_a_line(own: Mapping[str, float], by_word: Mapping[str, Sequence[int]]) -> bool:
    """Whether one line holds `CARRIED_SHARE` of an item's word weight (``own``) and one of its names; ``by_word``:
    the lines each word is on. Each line's share is summed over the item's words' lines, so the cost is the
    number of times those words occur, not the number of lines times the item's words."""
    named = {word for word in own if not any(c.isdigit() for c in word)}
    needed = CARRIED_SHARE * sum(own.values())
    held: dict[int, float] = {}
    with_name: set[int] = set()
    for word, weight in own.items():  # in the item's word order, as one line's sum would add them
        for line in by_word.get(word, ()):
            held[line] = held.get(line, 0.0) + weight
            if word in named:
                with_name.add(line)
    return any(share >= needed and (not named or line in with_name) for line, share in held.items())


def reported(results: Sequence[str]) -> list[str]:
    """What each result reports: its agent's own words; the outputs it carried (`READS_HEAD`) only when those words
    hold no list item (an agent that paraphrased what it read reports it through them). Outputs an agent read and
    left out of its list may be what its goal excludes (a search's other hits)."""
    found = []
    for result in results:
        words, _, reads = result.partition(READS_HEAD)
        found.append(words if item_lines(words) or not reads else reads)
    return found


def elides(answer: str) -> bool:
    """Whether ``answer`` shortens a list and says so ("... and 9 more")."""
    return bool(ELIDED.search(answer))
