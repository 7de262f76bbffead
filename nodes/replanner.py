"""replanner node: replaces the pending subtasks with a new plan when a step fails or asks for one.

Completed subtasks and their results stay; a failed subtask stays failed for
the record, with any partial result it kept. An empty or unusable plan means
"cannot continue", and past ``max_replans`` (or the step budget) nothing is
replanned: either way only the flagged subtasks' dependents are skipped and
independent work goes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from replangraph.config import AgentConfig, AgentProfile
from replangraph.events import REPLANNING, emit
from replangraph.messages import truncate_middle
from replangraph.planning import request_plan, structured_planner
from replangraph.plans import coerce_agent_types, next_top_position, normalize_plan, tasks_from_plan, validate_plan
from replangraph.prompts import REPLAN_TEMPLATE, REPLANNER_PROMPT, agent_types_text
from replangraph.queue import DEFAULT_AGENT, QueueError, Task, ordered, plan_summary, preview, skip_dependents
from replangraph.routing import spent_model_calls
from replangraph.state import ReplanRecord

PARTIAL_RESULT_CHARS = 2_000
"""How much of a flagged subtask's partial result the replanner sees: enough to tell what is done."""


def rename_colliding(specs: list[dict], taken: set[str], suffix: str) -> list[dict]:
    """Specs whose ids clash with ``taken`` get ``suffix``; dependencies follow the renames."""
    renames = {s["id"]: f"{s['id']}{suffix}" for s in specs if s["id"] in taken}
    return [
        {**s, "id": renames.get(s["id"], s["id"]), "depends_on": [renames.get(d, d) for d in s.get("depends_on") or []]}
        for s in specs
    ]


def replan_prompt(goal: str, tasks: Mapping[str, Task], flagged: Sequence[Task], preview_chars: int) -> str:
    """The human message: goal, plan, completed results, the flagged subtasks and why."""
    done = [t for t in ordered(tasks) if t["status"] == "completed"]
    results = "\n".join(f"- {t['id']}: {preview(t['result'], preview_chars)}" for t in done) or "(none)"
    reasons = "\n".join(
        f"- {t['id']} ({t['replan_request']['trigger']}): {t['content']}\n  Reason: {t['replan_request']['reason']}"
        + (
            f"\n  Partial result (kept): {truncate_middle(t['result'], PARTIAL_RESULT_CHARS)}"
            if t.get("result")
            else ""
        )
        for t in flagged
    )
    return REPLAN_TEMPLATE.format(goal=goal, plan=plan_summary(tasks), results=results, flagged=reasons)


class Replanner:
    """One model call (plus retries) per round, through the planner's structured `Plan`."""

    def __init__(self, model: BaseChatModel, profiles: Mapping[str, AgentProfile], config: AgentConfig):
        self.structured = structured_planner(model, list(profiles))
        self.profiles = profiles
        self.config = config

    def __call__(self, state: Mapping[str, Any]) -> dict:
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        records: list[ReplanRecord] = list(state.get("replans") or [])
        flagged = [t for t in ordered(tasks) if t.get("replan_request")]
        if not flagged:
            return {}
        rounds = sum(r["outcome"] != "limit" for r in records)
        if rounds >= self.config.max_replans or spent_model_calls(state) >= self.config.max_steps:
            updates = self.settle(tasks, flagged, "no replans left (max_replans or max_steps)")
            record = self.record(flagged, "limit", skipped=[k for k, u in updates.items() if u["status"] == "skipped"])
        else:
            updates, record = self.replan(state, tasks, flagged, suffix=f"_r{rounds + 1}")
        for task in flagged:
            updates.setdefault(task["id"], {})["replan_request"] = None
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
        for task in flagged:
            view = {k: {**v, **updates.get(k, {})} for k, v in tasks.items()}
            updates.update(skip_dependents(view, task["id"]))
        return updates

    def replan(
        self, state: Mapping[str, Any], tasks: Mapping[str, Task], flagged: Sequence[Task], suffix: str
    ) -> tuple[dict, ReplanRecord]:
        """Ask the model for the remaining subtasks; an empty or unusable answer gives up on the
        flagged subtasks (their dependents are skipped, independent work goes on)."""
        descriptions = {name: p.description for name, p in self.profiles.items()}
        goal = state.get("goal", "")
        messages = [
            SystemMessage(REPLANNER_PROMPT.format(agent_types=agent_types_text(descriptions))),
            HumanMessage(replan_prompt(goal, tasks, flagged, self.config.result_preview_chars)),
        ]
        pending = [t["id"] for t in ordered(tasks) if t["status"] == "pending"]
        kept = {k: t for k, t in tasks.items() if k not in pending}
        can_wait_on = {k: t for k, t in kept.items() if t["status"] in ("completed", "in_progress")}

        def check(specs: list[dict]) -> tuple[list[dict], list[str]]:
            if not specs:
                return [], []  # an empty plan is a valid answer: "cannot continue"
            specs, notes = normalize_plan(specs, existing=can_wait_on)
            renamed = rename_colliding(specs, set(tasks), suffix)
            renamed, agent_notes = coerce_agent_types(renamed, list(self.profiles), DEFAULT_AGENT)
            validate_plan(renamed, agent_types=self.profiles, existing=can_wait_on, max_tasks=None)
            if len(kept) + len(renamed) > self.config.max_tasks:
                raise QueueError(
                    f"the queue would hold {len(kept) + len(renamed)} tasks; the limit is {self.config.max_tasks}"
                )
            return renamed, notes + agent_notes

        answer = request_plan(
            self.structured, messages, retries=self.config.replanner_retries, config=self.config, check=check
        )
        if not answer.specs:
            reason = preview(answer.error or "the replanner returned no remaining subtasks", 300)
            updates = self.settle(tasks, flagged, f"the replanner gave up ({reason})")
            skipped = [k for k, u in updates.items() if u["status"] == "skipped"]
            for task_id in skipped:
                updates[task_id]["error"] = f"not run: the replanner gave up ({reason})"
            return updates, self.record(flagged, "gave_up", skipped=skipped, calls=answer.calls)
        created = tasks_from_plan(answer.specs, first_position=next_top_position(tasks), origin="replanner")
        updates: dict[str, Any] = {tid: None for tid in pending}
        updates.update(created)
        record = self.record(flagged, "replanned", new=list(created), replaced=pending, calls=answer.calls)
        record["notes"] = answer.notes
        return updates, record

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
