"""team_merge node: keeps one result for each team subtask whose members have all ended.

``best``: the judge picks a candidate; ``vote``: each member's model scores the others' results
and the highest total wins (ties in member order); ``fusion``: the judge combines them. With no
judge (``judge_model=False``), a judge that fails after retries or an answer that cannot be read,
the first successful result wins and the record says why. Every member failing fails the subtask.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables.config import ContextThreadPoolExecutor
from pydantic import BaseModel

from replangraph.config import AgentConfig
from replangraph.context.fitting import GOAL_ID, fit_parts, result_id, schema_tools
from replangraph.context.outcomes import announced, completed, failed, merge_updates
from replangraph.context.results import full_result
from replangraph.context.window_monitor import ContextMonitor
from replangraph.context.workspace import entries_of, entry_update, output_slot
from replangraph.events import DYNAMIC_TASKS_ADDED, event
from replangraph.llm.aio import arun_steps
from replangraph.llm.answers import StructuredAnswer, bind_schema
from replangraph.llm.calls import run_steps
from replangraph.llm.overflow import refit_steps
from replangraph.llm.structured import quoted, structured_steps
from replangraph.nodes.teams.judging import Ballot, Fusion, Pick, read_ballot, read_fused, read_pick
from replangraph.nodes.teams.names import TEAM_MERGE, TEAM_MERGED
from replangraph.nodes.teams.prompts import (
    TEAM_BEST_PROMPT,
    TEAM_CANDIDATE,
    TEAM_CANDIDATE_PARTIAL,
    TEAM_FUSION_PROMPT,
    TEAM_RETRY,
    TEAM_TEMPLATE,
    TEAM_VOTE_PROMPT,
)
from replangraph.nodes.teams.teams import (
    Candidate,
    Team,
    adopted,
    candidate_key,
    candidates,
    mergeable,
    removals,
    vote_winner,
)
from replangraph.queue.tasks import Task, active_tasks, preview, spent_model_calls
from replangraph.state import StateUpdate
from replangraph.steps_node import StepsNode
from replangraph.tracing import task_label, traced

T = TypeVar("T")
Steps = Generator[Any, Any, T]
"""Work written once for both paths (`replangraph.llm.calls.run_steps`): the judges' and voters' calls are
made by the sync driver, or awaited by the async one."""
JUDGE_RETRY_ERROR_CHARS = 300
"""Longest reason quoted when a judge is asked again."""


def together(work: Sequence[Steps[T]], workers: int, awaited: bool) -> Steps[list[T]]:
    """What each of ``work`` returns, in order, the steps run at the same time (steps themselves): awaited
    together (``asyncio.gather``) when ``awaited``, else in a pool of at most ``workers`` threads. One is
    run in place; the first exception is raised, as a single call's would be."""
    if len(work) <= 1:
        return [(yield from work[0])] if work else []
    if awaited:
        return list((yield asyncio.gather(*(arun_steps(steps) for steps in work))))
    with ContextThreadPoolExecutor(max_workers=max(min(len(work), workers), 1)) as pool:
        futures: list[Future] = [pool.submit(run_steps, steps) for steps in work]
        return [f.result() for f in futures]


class MergeFailed(Exception):
    """The merge could not decide (the judge failed, its answer was unreadable); ``calls`` were spent."""

    def __init__(self, reason: str, calls: int = 0):
        super().__init__(reason)
        self.reason, self.calls = reason, calls


@dataclass
class Decision:
    """What the merge kept: the winner's id (None when fused or none succeeded) and the result."""

    winner_id: str | None
    result: str | None
    reason: str
    scores: dict[str, float] = field(default_factory=dict)
    calls: int = 0


def partial_note(candidate: Candidate) -> str:
    """What a judge is told of a candidate that handed off part of its work ("" for none)."""
    if not candidate.handoff:
        return ""
    return TEAM_CANDIDATE_PARTIAL.format(work="; ".join(preview(w, 120) for w in candidate.handoff))


class TeamMerge(StepsNode):
    """Merges every team subtask whose members have ended: records the candidates and the decision
    on it (``team``), completes it with the kept result (or fails it when every member failed),
    queues the winner's handed-off work as its dynamic tasks, and removes the member tasks (each
    member's result, or partial result, is saved on the team subtask: ``read_output("1/candidate-m2")``)."""

    def __init__(
        self,
        teams: Mapping[str, Team],
        judges: Mapping[str, Any],
        voters: Mapping[str, Any],
        config: AgentConfig,
        monitor: ContextMonitor,
    ):
        self.teams = teams
        self.judges = judges
        """Judge model by team name (False: none)."""
        self.voters = voters
        """Model by agent type (the members' models, for ``vote``)."""
        self.base_config = config
        self.monitor = monitor
        self.structured: dict[tuple[int, type], tuple[Any, Any]] = {}
        """Each model bound to each schema it was asked for, by (model id, schema)."""

    def steps(self, state: Mapping[str, Any], awaited: bool = False) -> Steps[StateUpdate]:
        """The merges' update, the judges' and voters' calls made (or awaited) as steps."""
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        steps_left = self.config.max_steps - spent_model_calls(state)
        due = [t for t in active_tasks(tasks) if t["agent_type"] in self.teams and mergeable(tasks, t, steps_left <= 0)]
        if not due:
            return {}
        found = {t["id"]: candidates(tasks, t, self.teams[t["agent_type"]], full_result) for t in due}
        goal = state.get("goal", "")
        work = [self.decide(goal, t, found[t["id"]], steps_left, awaited) for t in due]
        decisions = yield from together(work, self.config.max_concurrency, awaited)
        return merge_updates([self.settle(tasks, t, found[t["id"]], d) for t, d in zip(due, decisions, strict=True)])

    # ------------------------------------------------------------------ deciding

    def decide(
        self, goal: str, task: Task, found: Sequence[Candidate], steps_left: int, awaited: bool = False
    ) -> Steps[Decision]:
        """The merge decision for one team subtask (steps)."""
        team = self.teams[task["agent_type"]]
        ok = [c for c in found if c.ok]
        if not ok:
            return Decision(None, None, "every member failed")
        first = ok[0]
        why = ""
        if len(ok) == 1:
            return Decision(first.id, first.text, "the only successful result")
        if self.judges.get(task["agent_type"]) is False:
            why = "no judge (judge_model=False)"
        elif steps_left <= 0:
            why = f"the step budget max_steps={self.config.max_steps} is used up"
        else:
            try:
                if team.merge == "vote":
                    return (yield from self.vote(goal, task, found, ok, awaited))
                if team.merge == "fusion":
                    return (yield from self.fuse(goal, task, ok, awaited))
                return (yield from self.pick(goal, task, ok, awaited))
            except MergeFailed as exc:
                return Decision(
                    first.id, first.text, f"{exc.reason}; the first successful result wins", calls=exc.calls
                )
        return Decision(first.id, first.text, f"{why}: the first successful result wins")

    def pick(self, goal: str, task: Task, ok: Sequence[Candidate], awaited: bool = False) -> Steps[Decision]:
        """``best``: the judge's pick (steps); an unreadable one is asked about once more, with what was wrong."""
        read = read_pick([c.agent_type for c in ok])
        judge = self.judges[task["agent_type"]]
        asked = yield from self.ask(judge, Pick, read, TEAM_BEST_PROMPT, goal, task, ok, "the judge", 1, awaited)
        if asked.value is None:
            why = f"the judge's answer could not be read, twice ({asked.error}): {preview(quoted(asked.answer), 120)!r}"
            raise MergeFailed(why, asked.calls)
        index, reason = asked.value
        return Decision(ok[index].id, ok[index].text, reason or "the judge's pick", calls=asked.calls)

    def fuse(self, goal: str, task: Task, ok: Sequence[Candidate], awaited: bool = False) -> Steps[Decision]:
        """``fusion``: the judge's combination (steps)."""
        judge = self.judges[task["agent_type"]]
        asked = yield from self.ask(
            judge, Fusion, read_fused, TEAM_FUSION_PROMPT, goal, task, ok, "the judge", 0, awaited
        )
        if asked.value is None:
            raise MergeFailed(f"the judge's answer could not be used ({asked.error})", asked.calls)
        names = ", ".join(c.agent_type for c in ok)
        return Decision(None, asked.value, f"the judge combined the results of {names}", calls=asked.calls)

    def vote(
        self, goal: str, task: Task, found: Sequence[Candidate], ok: Sequence[Candidate], awaited: bool = False
    ) -> Steps[Decision]:
        """``vote``: each member's model scores the other members' successful results (steps; the votes are
        cast at the same time)."""
        ballots = [(voter, [c for c in ok if c.id != voter.id]) for voter in found]
        ballots = [(voter, others) for voter, others in ballots if others]

        def cast(voter: Candidate, others: Sequence[Candidate]) -> Steps[tuple[dict[str, float] | str, int]]:
            model, who = self.voters[voter.agent_type], f"{voter.agent_type}'s vote"
            read = read_ballot([c.agent_type for c in others])
            try:
                asked = yield from self.ask(model, Ballot, read, TEAM_VOTE_PROMPT, goal, task, others, who, 0, awaited)
            except MergeFailed as exc:
                return exc.reason, exc.calls
            if asked.value is None:
                return f"{who} could not be read ({asked.error})", asked.calls
            return {others[i].id: score for i, score in asked.value.items()}, asked.calls

        votes = yield from together([cast(v, o) for v, o in ballots], self.config.max_concurrency, awaited)
        calls = sum(spent for _, spent in votes)
        readable = [v for v, _ in votes if isinstance(v, dict)]
        trouble = [v for v, _ in votes if isinstance(v, str)]
        if not readable:
            raise MergeFailed("no vote could be used (" + "; ".join(trouble) + ")", calls)
        totals = {c.id: sum(v.get(c.id, 0.0) for v in readable) for c in ok}
        winner = vote_winner(totals, [c.id for c in ok])
        reason = f"the highest total score ({totals[winner]:g} from {len(readable)} vote(s))"
        if trouble:
            reason += "; " + "; ".join(trouble)
        text = next(c.text for c in ok if c.id == winner)
        return Decision(winner, text, reason, totals, calls)

    def bound(self, model: Any, schema: type[BaseModel]) -> Any:
        """``model`` bound to ``schema`` (`bind_schema`), bound once and reused; the model itself when it
        cannot bind tools (its text answers are read all the same)."""
        key = (id(model), schema)
        if key not in self.structured:
            try:
                self.structured[key] = (model, bind_schema(model, schema))  # the model kept: its id stays its own
            except NotImplementedError:
                self.structured[key] = (model, model)
        return self.structured[key][1]

    def ask(
        self,
        model: Any,
        schema: type[BaseModel],
        read: Callable[[Any], T],
        system: str,
        goal: str,
        task: Task,
        shown: Sequence[Candidate],
        who: str,
        retries: int = 0,
        awaited: bool = False,
    ) -> Steps[StructuredAnswer[T]]:
        """One judging request over ``shown`` (numbered from 1) for ``schema`` (steps), fitted to the model's
        window (long results as excerpts) and asked once more at a smaller budget when the provider refuses it
        as too long; `MergeFailed` when it does not fit or the call fails."""

        def within(share: float) -> Steps[StructuredAnswer[T] | None]:
            return self.ask_within(model, schema, read, system, goal, task, shown, retries, share, awaited)

        answers = yield from refit_steps(
            within,
            refused=lambda asked: asked is not None and asked.overflow,
            learn=self.monitor.for_model(model).learn_overflow,
            label=f"{TEAM_MERGE} call for {task_label(task)}",
        )
        calls = sum(asked.calls for asked in answers if asked is not None)
        asked = answers[-1]
        if asked is None:
            raise MergeFailed(f"the candidates do not fit {who}'s context window", calls)
        asked.calls = calls
        if asked.failure is not None and asked.value is None:  # a judge that is down: the first successful result wins
            exc = asked.failure
            raise MergeFailed(f"{who} failed: {type(exc).__name__}: {preview(str(exc), 200)}", asked.calls)
        return asked

    def ask_within(
        self,
        model: Any,
        schema: type[BaseModel],
        read: Callable[[Any], T],
        system: str,
        goal: str,
        task: Task,
        shown: Sequence[Candidate],
        retries: int,
        share: float,
        awaited: bool = False,
    ) -> Steps[StructuredAnswer[T] | None]:
        """`ask` with the request fitted to ``share`` of the model's budget, through the structured-output loop
        (`structured_steps`; steps); None when it does not fit."""
        monitor = self.monitor.for_model(model)
        tools = schema_tools(schema)
        budget = int(monitor.budget * share)
        parts = {GOAL_ID: goal, **{str(n): c.text or "" for n, c in enumerate(shown, 1)}}
        outputs = {GOAL_ID: GOAL_ID, **{str(n): result_id(c.id) for n, c in enumerate(shown, 1)}}

        def build(texts: Mapping[str, str]) -> list[AnyMessage]:
            listed = "\n\n".join(
                TEAM_CANDIDATE.format(number=n, agent_type=c.agent_type, result=texts[str(n)]) + partial_note(c)
                for n, c in enumerate(shown, 1)
            )
            body = TEAM_TEMPLATE.format(
                goal=texts[GOAL_ID], task_id=task["id"], content=task["content"], candidates=listed
            )
            return [SystemMessage(system), HumanMessage(body)]

        fitted = fit_parts(parts, build, lambda req: monitor.fits(req, tools, budget), outputs, readable=False)
        if not fitted.fits:
            return None
        return (
            yield from structured_steps(
                self.bound(model, schema),
                fitted.request,
                read,
                retries=retries,
                config=self.config,
                retry_prompt=TEAM_RETRY.replace("{tool}", schema.__name__),
                error_chars=JUDGE_RETRY_ERROR_CHARS,
                monitor=monitor,
                awaited=awaited,
                trace=traced(TEAM_MERGE, task),
            )
        )

    # ------------------------------------------------------------------ the state update

    def settle(
        self, tasks: Mapping[str, Task], task: Task, found: Sequence[Candidate], decision: Decision
    ) -> StateUpdate:
        """The update for one merged team subtask (events included)."""
        winner = next((c for c in found if c.id == decision.winner_id), None)
        record = {
            **(task.get("team") or {}),
            "candidates": [c.record() for c in found],
            "winner": winner.agent_type if winner else None,
            "winner_id": decision.winner_id,
            "reason": decision.reason,
            "scores": decision.scores,
            "model_calls": decision.calls,
        }
        calls = task.get("model_calls", 0) + sum(c.model_calls for c in found) + decision.calls
        # The members leave the queue: their results stay readable on the team subtask.
        candidates = entries_of(
            entry_update(
                output_slot(task, candidate_key(task["id"], c.id)),
                c.kept,
                kind="candidate",
                task_id=task["id"],
                member=c.id,
            )
            for c in found
            if c.kept is not None
        )
        events = [
            event(
                TEAM_MERGED,
                task_id=task["id"],
                team=task["agent_type"],
                strategy=record.get("strategy"),
                winner=record["winner"],
                winner_id=decision.winner_id,
                reason=decision.reason,
                scores=decision.scores,
                candidates=[
                    {k: c.record()[k] for k in ("id", "agent_type", "result_preview", "error", "output_id")}
                    for c in found
                ],
            )
        ]
        if decision.result is None:
            errors = "; ".join(f"{c.agent_type}: {preview(c.error, 200)}" for c in found)
            partials = [c for c in found if c.kept]  # kept as the team subtask's partial result, for the replanner
            kept = "\n\n".join(f"Partial result of {c.agent_type} ({c.id}):\n{c.kept}" for c in partials)
            error = f"every member of team {task['agent_type']!r} failed ({errors})"
            update = failed(task, error, calls, team=record, **({"result": kept} if kept else {}))
        else:
            # A fusion combined every successful result: the work any of them left is still to do.
            sources = [decision.winner_id] if decision.winner_id else [c.id for c in found if c.ok]
            created = adopted(tasks, task, sources)
            if created:
                events.append(
                    event(DYNAMIC_TASKS_ADDED, parent_id=task["id"], task_ids=list(created), source="team", notes=[])
                )
            update = completed(task, decision.result, calls, **({"handed_off": list(created)} if created else {}))
            update["tasks"][task["id"]]["team"] = record
            verdict = (tasks.get(decision.winner_id or "") or {}).get("verdict")
            if verdict:  # the completion check judged the winner's result: it stands for the team's
                update["tasks"][task["id"]]["verdict"] = verdict
            requests = [(tasks.get(i) or {}).get("replan_request") for i in sources]
            request = next((r for r in requests if r), None)
            if request:  # remaining work the winner (or a fused member) could not queue: the replanner takes it
                update["tasks"][task["id"]]["replan_request"] = request
            update["tasks"].update(created)
        gone = removals(tasks, task)
        update["tasks"].update(gone)
        update.setdefault("windows", {}).update(dict.fromkeys(gone))  # a member the budget cut short had one
        return announced(events, merge_updates([candidates, update]))
