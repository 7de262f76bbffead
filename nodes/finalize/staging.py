"""Writing the final answer in stages when the results do not fit one request. No LangGraph here.

Nothing is cut from the results. They are packed, in queue order, into groups
whose request fits; a result too big for any group is split into consecutive
pieces. The model writes the part of the final answer for each group; the parts
are merged by one more call when they fit a request and the model's output
room, and are otherwise joined in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage

from replangraph.context.fitting import GOAL_ID, fit_parts, pack, split_text
from replangraph.context.kept import full_result
from replangraph.nodes.finalize.prompts import (
    FINAL_MERGE_TEMPLATE,
    FINAL_PART_TEMPLATE,
    FINAL_TEMPLATE,
    FINALIZER_PROMPT,
)
from replangraph.queue.tasks import Task, ordered

Ask = Callable[[list[AnyMessage]], str]
"""One model call: the reply's text, stripped."""
Tokens = Callable[[list[AnyMessage]], int]

MIN_PIECE_CHARS = 200


class ResultsTooBig(ValueError):
    """Even the smallest pieces of the results do not fit a request."""


@dataclass(frozen=True)
class Entry:
    """One result for the final answer: a header naming its subtask, and the result itself."""

    header: str
    body: str

    @property
    def text(self) -> str:
        return f"{self.header}\n{self.body}"


@dataclass(frozen=True)
class Synthesis:
    """The final answer and how it was written."""

    text: str
    calls: int
    parts: int = 0
    """Partial answers written (0: one request held every result)."""
    merged: bool = False
    """Whether the partial answers were merged by the model (else joined in order)."""


def result_entries(tasks: Mapping[str, Task]) -> list[Entry]:
    """Completed results and the partial results of subtasks that stopped, in queue order."""
    entries = []
    for task in ordered(tasks):
        if task["status"] == "completed":
            entries.append(Entry(f"[{task['id']}] {task['content']}", full_result(task) or ""))
        elif task.get("result"):
            entries.append(
                Entry(f"[{task['id']}] {task['content']} (partial result; the subtask stopped)", full_result(task))
            )
    return entries


def joined(entries: Sequence[Entry]) -> str:
    return "\n\n".join(e.text for e in entries)


def final_request(goal: str, results: str) -> list[AnyMessage]:
    """The single synthesis request over every result."""
    return [SystemMessage(FINALIZER_PROMPT), HumanMessage(FINAL_TEMPLATE.format(goal=goal, results=results))]


def part_request(goal: str, texts: Sequence[str]) -> list[AnyMessage]:
    """The request for the part of the final answer that covers ``texts``."""
    return [
        SystemMessage(FINALIZER_PROMPT),
        HumanMessage(FINAL_PART_TEMPLATE.format(goal=goal, results="\n\n".join(texts))),
    ]


def merge_request(goal: str, parts: Sequence[str]) -> list[AnyMessage]:
    """The request that merges the partial answers, in order."""
    text = "\n\n".join(f"Part {n}:\n{part}" for n, part in enumerate(parts, 1))
    return [SystemMessage(FINALIZER_PROMPT), HumanMessage(FINAL_MERGE_TEMPLATE.format(goal=goal, parts=text))]


def pieces(entry: Entry, fits: Callable[[str], bool]) -> list[str]:
    """``entry`` as one text, or split into consecutive labelled pieces that each fit."""
    if fits(entry.text):
        return [entry.text]
    size = max(len(entry.body) // 2, 1)
    while True:
        bodies = split_text(entry.body, size)
        labelled = [f"{entry.header} (part {n} of {len(bodies)})\n{b}" for n, b in enumerate(bodies, 1)]
        if size <= MIN_PIECE_CHARS or all(fits(p) for p in labelled):
            return labelled
        size //= 2


def shown_goal(goal: str, tokens: Tokens, budget: int) -> str:
    """The goal, as an excerpt when it would take more than half of a part's request."""
    fitted = fit_parts(
        {GOAL_ID: goal},
        lambda shown: shown[GOAL_ID],
        lambda text: tokens(part_request(text, [])) <= budget // 2,
        {GOAL_ID: GOAL_ID},
        readable=False,
    )
    return fitted.request


def synthesize(goal: str, entries: Sequence[Entry], *, ask: Ask, tokens: Tokens, budget: int, room: int) -> Synthesis:
    """The final answer from every entry, no request over ``budget`` tokens.

    One request when everything fits the request and the model's output room
    (``room`` tokens); else one partial answer per group of results that does,
    merged by one more call when the parts fit a request and their size
    is within ``room`` (the model's output tokens), else joined in order. An empty
    partial answer gives an empty text (the caller falls back to its report).
    """

    def fits(request: list[AnyMessage]) -> bool:
        return tokens(request) <= budget

    def answerable(texts: Sequence[str]) -> bool:
        # An answer that keeps every item is about as long as its results: they must fit the output room too.
        return tokens([HumanMessage("\n\n".join(texts))]) <= room

    everything = joined(entries)
    whole = final_request(goal, everything)
    if fits(whole) and answerable([everything]):
        return Synthesis(ask(whole), 1)
    goal_text = shown_goal(goal, tokens, budget)
    if goal_text != goal:
        whole = final_request(goal_text, everything)
        if fits(whole) and answerable([everything]):
            return Synthesis(ask(whole), 1)
    texts = [
        p for e in entries for p in pieces(e, lambda text: fits(part_request(goal_text, [text])) and answerable([text]))
    ]
    groups = pack(texts, lambda group: fits(part_request(goal_text, group)) and answerable(group))
    requests = [part_request(goal_text, group) for group in groups]
    if not all(fits(r) for r in requests):
        largest = max(tokens(r) for r in requests)
        raise ResultsTooBig(f"a piece of the results needs {largest} tokens, the budget is {budget}")
    partials: list[str] = []
    for request in requests:
        text = ask(request)
        if not text:
            return Synthesis("", len(partials) + 1, len(partials) + 1)
        partials.append(text)
    calls = len(partials)
    merge = merge_request(goal_text, partials)
    if len(partials) > 1 and fits(merge) and tokens([HumanMessage("\n\n".join(partials))]) <= room:
        merged = ask(merge)
        if merged:
            return Synthesis(merged, calls + 1, len(partials), merged=True)
        calls += 1  # an empty merge loses nothing: the parts are joined instead
    return Synthesis("\n\n".join(partials), calls, len(partials))
