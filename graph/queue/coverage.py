"""Which follow-ups a hand-off or a check queues: structure, not wording. No LangGraph here.

Every follow-up a model wrote is queued, in order, identical ones too (several identical follow-ups are several
units of work: "the next 5 products", three times). Left out only is what the engine knows is the same work:

- the goal itself, word for word: the whole run's work, which the plan already queued;
- for a completion check, a repeat of the checked subtask's own instructions beyond one (one redo, and only for an
  agent that works with tools of its own: without tools, the same instructions on the same inputs are the same
  work).

A follow-up is never dropped or trimmed because its words read like other work: a number may be a price, a page
or a year. What text heuristics may add or note is the text policy's (`replangraph.policy`); the cost of work
queued twice is bounded by the budgets and the progress rule (a chain of continuations that reads nothing new
stops), never by dropping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from replangraph.queue.tasks import preview


@dataclass(frozen=True)
class FollowUps:
    """What `follow_ups` decided: the instructions to queue, in order, and one note per follow-up left out."""

    queued: list[str]
    notes: list[str]


def follow_ups(contents: Sequence[str], *, goal: str = "", own: str | None = None, again: bool = True) -> FollowUps:
    """The follow-ups of ``contents`` to queue: all of them, in order, but those that are the goal itself and,
    with ``own`` (the instructions of the subtask a check judged), every repeat of ``own`` after the first (or
    every one, without ``again``: an agent without tools of its own)."""
    queued: list[str] = []
    notes: list[str] = []
    redone = False
    for text in contents:
        if goal and same_text(text, goal):
            notes.append(f'Follow-up "{preview(text, 60)}" left out: it is the goal itself, which the plan queued.')
        elif own is not None and same_text(text, own) and (redone or not again):
            why = "asks for the checked subtask again" if redone else "repeats a subtask that used no tools of its own"
            notes.append(f'Follow-up "{preview(text, 60)}" left out: it {why}.')
        else:
            redone = redone or (own is not None and same_text(text, own))
            queued.append(text)
    return FollowUps(queued, notes)


def normalized(text: str) -> str:
    """An instruction as `same_text` compares it."""
    return " ".join(text.split()).strip(" .!?:;").casefold()


def same_text(a: str, b: str) -> bool:
    """Whether two instructions are the same, ignoring case, spacing and closing punctuation."""
    return normalized(a) == normalized(b)
