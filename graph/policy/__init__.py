"""The text policy: every heuristic that reads meaning out of instruction texts, behind one object.

`build_graph(..., policy=TextPolicy())` is the default; `TextPolicy(enabled=False)` turns every heuristic off.
What the engine guarantees does not rest on them: a follow-up a model wrote is queued whether the policy is on
or off (`replangraph.queue.coverage.follow_ups`), and a plan's tasks are the planner's. The policy may only add
work, group it for cost, or annotate it:

- `grouped_plan`: a plan's long run of one-item tasks ("Extract the product ranked 7 ...", one per item) runs as
  groups that keep every member's instructions word for word, never fewer groups than ``max_concurrency``.
- `added_work`: the parts of a handing-off subtask's numbered range its follow-ups skip, queued too.
- `notes`: notes on follow-ups whose numbered range meets work queued, running or done (shown to the agent and
  in the ``dynamic_tasks_added`` event); the follow-ups are queued as written.
- `announces`: whether an answer only announces a call ("I'll now call read_ranking ..."): the agent is asked
  once to make it, in the same conversation.
- prose task lists: a hand-off's ``tasks`` given as plain text is read one task a line (off: refused with an error
  that shows the JSON list expected, and the agent sends it again; nothing is queued from a guess); so are a
  completion check's ``remaining_tasks`` (off: the result stands, noted).
- the goal's verbs: a planner that never answers with a usable plan falls back to a plan read from the goal's
  verbs (`replangraph.nodes.planning.rule_plan`; off: the whole goal is the one subtask).

Pure: no LangGraph. The range reader is `replangraph.policy.scopes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from replangraph.llm.reading import announces_call
from replangraph.policy.scopes import claimed_work, gaps, grouped_plan, overlap_notes

ITEM_RUN = 10
"""Tasks of one instruction that differ only in an item number, in a row, that make a plan of one task per item;
a run of at most this many (or of at most ``max_concurrency``) runs as planned."""


@dataclass(frozen=True)
class TextPolicy:
    """The replaceable text heuristics (see the module). ``enabled=False``: none of them runs; plans and
    follow-ups go to the queue exactly as the models wrote them."""

    enabled: bool = True
    item_run: int = ITEM_RUN
    """Runs of one-item tasks longer than this (and than ``max_concurrency``) are grouped."""

    def grouped_plan(
        self, specs: Sequence[Mapping[str, Any]], *, batch_size: int, max_concurrency: int
    ) -> tuple[list[dict], list[str]]:
        """``(specs, notes)``: the plan with each long run of one-item tasks grouped (`grouped_plan`) into groups
        of at most ``batch_size`` members and at least ``max_concurrency`` groups."""
        if not self.enabled:
            return [dict(spec) for spec in specs], []
        return grouped_plan(
            specs, batch_size, min_groups=max_concurrency, min_run=max(self.item_run, max_concurrency) + 1
        )

    def added_work(self, within: str, contents: Sequence[str]) -> list[str]:
        """Instructions for the parts of ``within``'s numbered range that its hand-off's follow-ups skip (`gaps`)."""
        return gaps(within, contents) if self.enabled else []

    def announces(self, text: str, tool_names: Sequence[str] = ()) -> bool:
        """Whether an answer only says what the agent will do next ("I'll now call read_ranking ..."):
        `announces_call`. Off: never (the reply is an answer, and the completion check judges it)."""
        return self.enabled and announces_call(text, tool_names)

    def notes(
        self,
        tasks: Mapping[str, Mapping[str, Any]],
        contents: Sequence[str],
        within: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Notes on follow-ups whose numbered range meets work the queue accounts for (`claimed_work`), or lies
        outside ``within``'s range; annotations only."""
        if not self.enabled or not contents:
            return []
        taken = claimed_work(tasks, [within["id"]] if within is not None else [])
        return overlap_notes(contents, within=within["content"] if within is not None else None, taken=taken)


DEFAULT_POLICY = TextPolicy()
OFF = TextPolicy(enabled=False)
