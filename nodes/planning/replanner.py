"""replanner node: replaces the pending subtasks with a new plan when a step fails or asks for one.

Completed subtasks and their results stay; a failed subtask stays failed for
the record, with any partial result it kept. An empty or unusable plan means
"cannot continue", and past ``max_replans`` (or the step budget) nothing is
replanned: either way only the flagged subtasks' dependents are skipped and
independent work goes on. Then, with ``single_agent_fallback``, one more subtask
is queued after that work: one agent that tries to finish the goal alone (see
``replangraph.nodes.fallback.fallback``), unless the replanner's own call found the model not answering (it
would fail the same way). Its own failure or replan request ends the run with the report.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from replangraph.config import AgentConfig, AgentProfile
from replangraph.context.fitting import GOAL_ID, PLAN_ID, Fitted, excerpt, fit_parts, result_id, schema_tools
from replangraph.context.results import full_result
from replangraph.context.window_monitor import ContextMonitor
from replangraph.events import REPLANNING, emit
from replangraph.features import AfterReplan
from replangraph.llm.overflow import refit_steps
from replangraph.names import REPLANNER
from replangraph.nodes.planning.planner import (
    PlanAnswer,
    check_required_tools,
    grouped_items,
    plan_schema,
    request_plan_steps,
    retry_quotes,
    retry_room,
    structured_planner,
    tools_prompt,
)
from replangraph.nodes.planning.prompts import REPLAN_TEMPLATE, REPLANNER_PROMPT
from replangraph.policy import DEFAULT_POLICY, TextPolicy
from replangraph.queue.plans import (
    coerce_agent_types,
    next_top_position,
    normalize_plan,
    offered_tool_names,
    tasks_from_plan,
    tool_names,
    validate_plan,
)
from replangraph.queue.tasks import (
    DEFAULT_AGENT,
    QueueError,
    Task,
    apply_writes,
    in_candidate_run,
    is_fallback,
    next_plan_id,
    ordered,
    preview,
    replan_requested,
    skip_dependents,
    spent_model_calls,
    task_line,
)
from replangraph.state import ReplanRecord, StateUpdate
from replangraph.steps_node import StepsNode
from replangraph.tracing import task_label, traced

logger = logging.getLogger(__name__)

PARTIAL_RESULT_CHARS = 2_000
"""How much of a flagged subtask's partial result the replanner sees: enough to tell what is done."""


def rename_colliding(specs: list[dict], taken: set[str], suffix: str) -> list[dict]:
    """Specs whose ids clash with ``taken`` get ``suffix``; dependencies follow the renames."""
    renames = {s["id"]: f"{s['id']}{suffix}" for s in specs if s["id"] in taken}
    return [
        {**s, "id": renames.get(s["id"], s["id"]), "depends_on": [renames.get(d, d) for d in s.get("depends_on") or []]}
        for s in specs
    ]


PLAN_PREVIEW_CHARS = 80
"""Result and error previews in the plan's lines (as in ``plan_summary``)."""


def plan_lines(tasks: Mapping[str, Task], preview_chars: int, collapse: bool = False) -> str:
    """The plan, one line per task in queue order; result previews of ``preview_chars`` (0: none).

    With ``collapse``, each run of completed lines becomes one line naming their ids;
    pending, in-progress, failed and skipped lines stay whole.
    """
    lines: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            lines.append(f"[X] (… {len(run)} completed subtasks: {', '.join(run)}; their results are kept)")
            run.clear()

    for task in ordered(tasks):
        if collapse and task["status"] == "completed":
            run.append(task["id"])
            continue
        flush()
        if task["status"] == "completed" and preview_chars <= 0:
            lines.append(task_line({**task, "result": None}))
        elif task["status"] == "completed":
            lines.append(task_line(task, min(preview_chars, PLAN_PREVIEW_CHARS)))
        else:
            lines.append(task_line(task, PLAN_PREVIEW_CHARS))
    flush()
    return "\n".join(lines)


def completed_results(tasks: Mapping[str, Task], preview_chars: int) -> str:
    """Previews of the completed results (0: only how many there are)."""
    done = [t for t in ordered(tasks) if t["status"] == "completed"]
    if not done:
        return "(none)"
    if preview_chars <= 0:
        return f"({len(done)} completed results are kept; their previews are left out to fit this request)"
    return "\n".join(f"- {t['id']}: {preview(t['result'], preview_chars)}" for t in done)


def flagged_text(flagged: Sequence[Task], partials: Mapping[str, str]) -> str:
    """Each flagged subtask with its trigger, reason and (an excerpt of) its partial result."""
    return "\n".join(
        f"- {t['id']} ({t['replan_request']['trigger']}): {t['content']}\n  Reason: {t['replan_request']['reason']}"
        + (f"\n  Partial result (kept): {partials[t['id']]}" if t["id"] in partials else "")
        for t in flagged
    )


def closed_fallback(task: Task) -> dict[str, Any]:
    """The single-agent fallback's replan request, closed: a result it said is unfinished (a hand-off
    refused again, say) stays as a partial result of a failed task, with the reason as its error."""
    if task["status"] != "completed":
        return {"replan_request": None}
    reason = task["replan_request"]["reason"]
    return {"replan_request": None, "status": "failed", "error": f"it did not finish the goal: {reason}"}


def preview_steps(preview_chars: int) -> list[int]:
    """Preview lengths to try, longest first: halves down to 20 characters, then none."""
    steps = [preview_chars]
    while steps[-1] // 2 >= 20:
        steps.append(steps[-1] // 2)
    return [*steps, 0]


def fit_replan_prompt(
    goal: str, tasks: Mapping[str, Task], flagged: Sequence[Task], preview_chars: int, fits: Callable[[str], bool]
) -> Fitted[str]:
    """The human message: goal, plan, completed results, the flagged subtasks and why; fitted when needed.

    To fit, the result previews are shortened (then left out), then the goal and the
    partial results are shown as excerpts, then the plan's completed lines are
    collapsed, and as a last resort the plan is an excerpt. The pending, in-progress
    and failed lines stay whole until then: the new plan replaces every pending subtask.
    """
    partials = {
        t["id"]: excerpt(full_result(t) or "", PARTIAL_RESULT_CHARS, result_id(t["id"]), readable=False)
        for t in flagged
        if t.get("result")
    }
    parts = {GOAL_ID: goal, **{f"partial:{k}": v for k, v in partials.items()}}
    outputs = {GOAL_ID: GOAL_ID, **{f"partial:{k}": result_id(k) for k in partials}}

    def build(shown: Mapping[str, str], chars: int, collapse: bool) -> str:
        shown_partials = {k: shown[f"partial:{k}"] for k in partials}
        plan = shown.get(PLAN_ID) or plan_lines(tasks, chars, collapse)
        return REPLAN_TEMPLATE.format(
            goal=shown[GOAL_ID],
            plan=plan,
            results=completed_results(tasks, chars),
            flagged=flagged_text(flagged, shown_partials),
        )

    for chars in preview_steps(preview_chars):
        text = build(parts, chars, False)
        if fits(text):
            return Fitted(text, ["previews"] if chars < preview_chars else [])
    cut = ["previews"]
    for collapse in (False, True):
        fitted = fit_parts(parts, lambda shown, c=collapse: build(shown, 0, c), fits, outputs, readable=False)
        if fitted.fits:
            return Fitted(fitted.request, cut + (["completed lines"] if collapse else []) + fitted.cut)
    whole = {**parts, PLAN_ID: plan_lines(tasks, 0, True)}
    fitted = fit_parts(whole, lambda shown: build(shown, 0, True), fits, {**outputs, PLAN_ID: PLAN_ID}, readable=False)
    return Fitted(fitted.request, [*cut, "completed lines", *fitted.cut], fitted.fits)


class Replanner(StepsNode):
    """One model call (plus retries) per round, through the planner's structured `Plan`."""

    def __init__(
        self,
        model: BaseChatModel,
        profiles: Mapping[str, AgentProfile],
        config: AgentConfig,
        monitor: ContextMonitor | None = None,
        feature_types: Collection[str] = (),
        after_round: Sequence[AfterReplan] = (),
        policy: TextPolicy = DEFAULT_POLICY,
    ):
        self.monitor = (monitor or ContextMonitor(config)).for_model(model)
        self.policy = policy
        self.after_round = tuple(after_round)
        """What features add after each round (see `replangraph.features.Feature.after_replan`)."""
        self.feature_types = tuple(feature_types)
        """Which of ``profiles`` features added (a team)."""
        self.tools_by_agent = tool_names(profiles)
        offered = offered_tool_names(self.tools_by_agent)
        self.structured = structured_planner(model, list(profiles), offered)
        self.tools = schema_tools(plan_schema(list(profiles), offered))
        self.profiles = profiles
        self.base_config = config

    def steps(self, state: Mapping[str, Any], awaited: bool = False) -> Generator[Any, Any, StateUpdate]:
        """The round's update, its model calls made (or awaited) as steps (`replangraph.llm.calls.run_steps`)."""
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        records: list[ReplanRecord] = list(state.get("replans") or [])
        requested = replan_requested(tasks)
        # The single-agent fallback was the last try: its failure or replan request goes to the report.
        closed = {t["id"]: closed_fallback(t) for t in requested if is_fallback(t)}
        flagged = [t for t in requested if not is_fallback(t)]
        if not flagged:
            return {"tasks": closed} if closed else {}
        rounds = sum(r["outcome"] != "limit" for r in records)
        if rounds >= self.config.max_replans or spent_model_calls(state) >= self.config.max_steps:
            updates = self.settle(tasks, flagged, "no replans left (max_replans or max_steps)")
            record = self.record(flagged, "limit", skipped=[k for k, u in updates.items() if u["status"] == "skipped"])
            unanswered = False
        else:
            updates, record, unanswered = yield from self.replan(state, tasks, flagged, f"_r{rounds + 1}", awaited)
        for task in flagged:
            updates.setdefault(task["id"], {})["replan_request"] = None
        updates.update(closed)
        fallback = None
        for hook in self.after_round:  # what features add after a round (the single-agent fallback's task)
            queued, notes = hook(state, tasks, updates, [*records, record], unanswered, self.config)
            if notes:
                record["notes"] = [*record.get("notes", []), *notes]
            if queued is not None:
                updates[queued["id"]] = queued
                fallback = fallback or queued
        emit(
            REPLANNING,
            task_id=flagged[0]["id"],
            task_ids=record["task_ids"],
            trigger=record["trigger"],
            reason=record["reason"],
            outcome=record["outcome"],
            new_task_ids=record["new_task_ids"],
            skipped=record["skipped_task_ids"],
            notes=record.get("notes", []),
            fallback_task_id=fallback["id"] if fallback is not None else None,
        )
        logger.log(
            logging.INFO if record["outcome"] == "replanned" else logging.WARNING,
            "replanning round %d for %s: %s (%s); new subtasks: %s; skipped: %s",
            len(records) + 1,
            ", ".join(task_label(t) for t in flagged),
            record["outcome"],
            record["reason"],
            ", ".join(record["new_task_ids"]) or "none",
            ", ".join(record["skipped_task_ids"]) or "none",
        )
        return {"tasks": updates, "replans": [*records, record]}

    def settle(self, tasks: Mapping[str, Task], flagged: Sequence[Task], why: str) -> dict[str, dict]:
        """Skip what waits on the flagged subtasks; independent work goes on.

        A flagged subtask that completed part of its work (its partial result kept) fails
        now: the rest of its work will not be done.
        """
        updates: dict[str, dict] = {
            t["id"]: {"status": "failed", "error": f"the rest of its work was not replanned: {why}"}
            for t in flagged
            if t["status"] == "completed"
        }
        view = apply_writes(tasks, [updates])  # patched write by write: no rebuild of the queue's index
        for task in flagged:
            skipped = skip_dependents(view, task["id"])
            updates.update(skipped)
            view = apply_writes(view, [skipped])
        # A pending single-agent fallback is written again (`fallback`), not skipped.
        return {k: u for k, u in updates.items() if not is_fallback(tasks.get(k))}

    def replan(
        self,
        state: Mapping[str, Any],
        tasks: Mapping[str, Task],
        flagged: Sequence[Task],
        suffix: str,
        awaited: bool = False,
    ) -> Generator[Any, Any, tuple[dict, ReplanRecord, bool]]:
        """Ask the model for the remaining subtasks (steps): ``(updates, record, whether the model did not
        answer)``. An empty or unusable answer gives up on the flagged subtasks (their dependents
        are skipped, independent work goes on)."""
        goal = state.get("goal", "")
        system = SystemMessage(tools_prompt(REPLANNER_PROMPT, self.profiles, self.tools_by_agent))
        # A pending single-agent fallback stays (it waits for the new plan too) and is not shown; so do a
        # running team's members and their held handoffs (the team subtask, in progress, stands for them).
        pending = [
            t["id"]
            for t in ordered(tasks)
            if t["status"] == "pending" and not is_fallback(t) and not in_candidate_run(tasks, t)
        ]
        kept = {k: t for k, t in tasks.items() if k not in pending}
        shown = {k: t for k, t in tasks.items() if not is_fallback(t) and not in_candidate_run(tasks, t)}
        can_wait_on = {k: t for k, t in kept.items() if t["status"] in ("completed", "in_progress")}

        def check(specs: list[dict]) -> tuple[list[dict], list[str]]:
            if not specs:
                return [], []  # an empty plan is a valid answer: "cannot continue"
            specs, notes = normalize_plan(specs, existing=can_wait_on)
            renamed = rename_colliding(specs, set(tasks), suffix)
            renamed, agent_notes = coerce_agent_types(renamed, list(self.profiles), DEFAULT_AGENT)
            renamed, batch_notes = grouped_items(renamed, self.config, self.policy)  # one task per item, grouped
            agent_notes += batch_notes

            def validate(fitted: list[dict]) -> None:
                validate_plan(fitted, agent_types=self.profiles, existing=can_wait_on, max_tasks=None)
                if len(kept) + len(fitted) > self.config.max_tasks:
                    raise QueueError(
                        f"the queue would hold {len(kept) + len(fitted)} tasks; the limit is {self.config.max_tasks}"
                    )

            return check_required_tools(renamed, notes + agent_notes, self.tools_by_agent, validate, self.feature_types)

        # A provider that refuses the request as too long: once more, smaller.
        answers = yield from refit_steps(
            lambda share: self.ask(goal, shown, flagged, system, check, share, awaited),
            learn=self.monitor.learn_overflow,
            label="replanner call",
        )
        answer = answers[-1]
        answer.calls = sum(a.calls for a in answers)
        if not answer.specs:
            reason = preview(answer.error or "the replanner returned no remaining subtasks", 300)
            updates = self.settle(tasks, flagged, f"the replanner gave up ({reason})")
            skipped = [k for k, u in updates.items() if u["status"] == "skipped"]
            for task_id in skipped:
                updates[task_id]["error"] = f"not run: the replanner gave up ({reason})"
            return updates, self.record(flagged, "gave_up", skipped=skipped, calls=answer.calls), answer.unanswered
        created = tasks_from_plan(
            answer.specs,
            first_position=next_top_position(tasks),
            origin="replanner",
            plan_id=next_plan_id(tasks),
        )
        found = [t["id"] for t in flagged if t.get("result")]  # what the flagged subtasks found goes along
        for task in created.values() if found else ():
            task["builds_on"] = list(found)
        updates: dict[str, Any] = {tid: None for tid in pending}
        updates.update(created)
        record = self.record(flagged, "replanned", new=list(created), replaced=pending, calls=answer.calls)
        record["notes"] = answer.notes
        return updates, record, False

    def ask(
        self,
        goal: str,
        tasks: Mapping[str, Task],
        flagged: Sequence[Task],
        system: SystemMessage,
        check: Callable[[list[dict]], tuple[list[dict], list[str]]],
        share: float,
        awaited: bool = False,
    ) -> Generator[Any, Any, PlanAnswer]:
        """The model's new plan, from a request fitted to ``share`` of the budget (steps)."""
        # A retry adds its message to this request.
        whole = int(self.monitor.budget * share)
        room = retry_room(self.monitor, self.config.replanner_retries, whole)
        budget = whole - room
        fitted = fit_replan_prompt(
            goal,
            tasks,
            flagged,
            self.config.result_preview_chars,
            lambda text: self.monitor.fits([system, HumanMessage(text)], self.tools, budget),
        )
        messages = [system, HumanMessage(fitted.request)]
        if not fitted.fits:
            needed = self.monitor.tokens(messages, self.tools)
            return PlanAnswer(
                None, 0, f"the request does not fit the context window ({needed} tokens, {budget} allowed)"
            )
        return (
            yield from request_plan_steps(
                self.structured,
                messages,
                retries=self.config.replanner_retries,
                config=self.config,
                check=check,
                observe=lambda sent, reply: self.monitor.observe(sent, self.tools, reply),
                quotes=retry_quotes(self.monitor, room),
                monitor=self.monitor,
                awaited=awaited,
                trace=traced(REPLANNER, flagged[0] if len(flagged) == 1 else None),
            )
        )

    @staticmethod
    def record(
        flagged: Sequence[Task],
        outcome: str,
        *,
        new: Sequence[str] = (),
        replaced: Sequence[str] = (),
        skipped: Sequence[str] = (),
        calls: int = 0,
    ) -> ReplanRecord:
        requests = [t["replan_request"] for t in flagged]
        return ReplanRecord(
            task_ids=[t["id"] for t in flagged],
            trigger=requests[0]["trigger"],
            reason="; ".join(r["reason"] for r in requests),
            outcome=outcome,
            new_task_ids=list(new),
            replaced_task_ids=list(replaced),
            skipped_task_ids=list(skipped),
            model_calls=calls,
        )
