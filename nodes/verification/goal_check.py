"""goal_check node: before the final answer, the run's results are judged against the whole goal, once.

Each subtask's check judges it against its own instructions; nothing there sees what the plan left out (a
planner that covered half the goal) or what fell between two hand-offs (a range off by one). So when every
subtask has settled and at least one completed, one structured `Verdict` call judges all results against the
goal, and the work it finds missing is queued as new subtasks (origin ``check``). Once the work it queued has
settled, it runs again only when that work read something no subtask had read when it last judged (the run-wide
progress rule): a hand-off that copied a cursor wrong is caught by the next round, and a check that asks for work
already done ends with the first. Missing work that repeats the goal itself is not queued (`follow_ups`). A check
that fails, answers garbage or cannot see the results lets them stand, as the subtask check does.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.errors import NodeError
from langgraph.types import Command
from typing_extensions import NotRequired, TypedDict

from replangraph.context.carried import known_reads
from replangraph.context.fitting import Fitted
from replangraph.context.results import full_result
from replangraph.context.workspace import collect_writes
from replangraph.events import DYNAMIC_TASKS_ADDED, event
from replangraph.llm.aio import arun_steps, off_loop
from replangraph.llm.calls import run_steps
from replangraph.names import FINALIZE
from replangraph.nodes.verification.names import GOAL_CHECK, GOAL_CHECKED
from replangraph.nodes.verification.prompts import GOAL_CHECK_PROMPT, GOAL_CHECK_TEMPLATE, GOAL_INSTRUCTIONS_NOTE
from replangraph.nodes.verification.verifier import VERIFY_RETRIES, Verifier
from replangraph.queue.coverage import follow_ups
from replangraph.queue.plans import next_top_position
from replangraph.queue.tasks import (
    Task,
    first_plan,
    index_of,
    latest_plan,
    new_task,
    ordered,
    spent_model_calls,
    task_line,
)
from replangraph.routing import Decision, Route
from replangraph.run_config import Configured
from replangraph.state import StateUpdate
from replangraph.tracing import traced

logger = logging.getLogger(__name__)

GOAL_WORK_ID = "goal_check_{n}"
"""Ids of the subtasks the goal check queues."""


class GoalCheckRecord(TypedDict):
    """What the goal check said of a queue's results (the state's ``goal_check``)."""

    plan_id: str
    """The queue's first plan: a new goal on the thread starts a new queue, which is checked again."""
    complete: bool
    reason: str
    task_ids: list[str]
    """The missing work it queued."""
    notes: list[str]
    """Missing work it named that was not queued (a repeat), and why."""
    error: str | None
    """Why it could not judge (the results then stand)."""
    model_calls: int
    reads: NotRequired[int]
    """How many distinct reads (`known_reads`) the queue held when it judged: after the work it queued, the check
    runs again only if there are more."""


def log_goal_check(record: GoalCheckRecord) -> None:
    """Log the goal check's verdict (INFO; WARNING when it could not judge)."""
    if record["error"]:
        logger.warning("goal check of plan %s could not judge: %s", record["plan_id"], record["error"])
    elif record["complete"]:
        logger.info("goal check of plan %s: complete", record["plan_id"])
    else:
        queued = ", ".join(record["task_ids"]) or "none"
        logger.info("goal check of plan %s: incomplete (%s); queued: %s", record["plan_id"], record["reason"], queued)


def goal_unchecked(route: Route) -> Decision | None:
    """Every subtask has settled and one completed, and the queue's results were not checked against the goal:
    the goal check runs before the final answer (``verify_results``)."""
    if not route.settings.verify_results or route.active:  # a cancelled run was sent on at the stop stage
        return None
    counts = index_of(route.tasks).counts()
    if counts["pending"] or counts["in_progress"] or not counts["completed"]:
        return None
    record = route.state.get("goal_check")
    if record and record.get("plan_id") == first_plan(route.tasks) and not read_more_since(record, route.tasks):
        return None
    if spent_model_calls(route.state) >= route.settings.max_steps:
        return None
    return GOAL_CHECK


def read_more_since(record: Mapping[str, Any], tasks: Mapping[str, Task]) -> bool:
    """Whether the work a goal check queued has read something no subtask had read when it judged."""
    return bool(record.get("task_ids")) and len(known_reads(tasks, "")) > record.get("reads", math.inf)


def results_text(tasks: Mapping[str, Task]) -> str:
    """Every completed result and partial result, in queue order, under its subtask's instructions."""
    parts = []
    for task in ordered(tasks):
        text = full_result(task) if task["status"] == "completed" or task.get("result") else None
        if text:
            mark = "" if task["status"] == "completed" else " (partial result; the subtask stopped)"
            parts.append(f"[{task['id']}] {task['content']}{mark}\n{text}")
    return "\n\n".join(parts)


class GoalCheck(Configured):
    """Judges the results against the goal with the completion check's model and reading (`Verifier`)."""

    def __init__(self, verifier: Verifier):
        self.verifier = verifier
        self.base_config = verifier.base_config

    def request(self, goal: str, tasks: Mapping[str, Task], budget: int) -> Fitted[list[BaseMessage]]:
        """The check's request: the goal and every result; when they do not fit ``budget``, the goal and the
        subtasks' instructions and statuses only (the note says the results are not shown)."""
        system = SystemMessage(GOAL_CHECK_PROMPT.format(batch_size=self.config.batch_size))
        whole = [system, HumanMessage(GOAL_CHECK_TEMPLATE.format(goal=goal, results=results_text(tasks)))]
        if self.verifier.monitor.fits(whole, self.verifier.tools, budget):
            return Fitted(whole)
        lines = "\n".join(task_line(t, 0) for t in ordered(tasks))
        short = [system, HumanMessage(GOAL_CHECK_TEMPLATE.format(goal=goal, results=lines) + GOAL_INSTRUCTIONS_NOTE)]
        return Fitted(short, ["results"], self.verifier.monitor.fits(short, self.verifier.tools, budget))

    @collect_writes
    def __call__(self, state: Mapping[str, Any]) -> StateUpdate:
        goal, tasks = state.get("goal", ""), state.get("tasks") or {}
        build = lambda budget: self.request(goal, tasks, budget)  # noqa: E731
        steps = self.verifier.judge_steps(build, self.retries(state), trace=traced(GOAL_CHECK))
        return self.settled(state, *run_steps(steps))

    @collect_writes
    async def acall(self, state: Mapping[str, Any]) -> StateUpdate:
        """`__call__` on the async path: the model awaited; the request built off the event loop (it reads the
        whole results from the store)."""
        goal, tasks = state.get("goal", ""), state.get("tasks") or {}
        build = lambda budget: self.request(goal, tasks, budget)  # noqa: E731
        steps = self.verifier.judge_steps(build, self.retries(state), awaited=True, trace=traced(GOAL_CHECK))
        judged = await arun_steps(steps)
        return await off_loop(lambda: self.settled(state, *judged))

    def retries(self, state: Mapping[str, Any]) -> int:
        """One retry of an unreadable verdict while ``max_steps`` leaves room for it."""
        return VERIFY_RETRIES if self.config.max_steps - spent_model_calls(state) >= 2 else 0

    def settled(self, state: Mapping[str, Any], judged: Mapping[str, Any], calls: int) -> StateUpdate:
        """The record of the check, and the missing work queued as new subtasks after every other one."""
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        fresh, notes = [], []
        if not judged["complete"]:
            # It judged the results themselves: whatever it names is queued, but the goal itself.
            work = follow_ups(judged["remaining_tasks"], goal=state.get("goal", ""))
            fresh = work.queued
            notes = [*work.notes, *self.verifier.policy.notes(tasks, fresh)]
        room = max(self.config.max_tasks - len(tasks), 0)
        if len(fresh) > room:
            notes.append(f"{len(fresh) - room} missing tasks did not fit max_tasks={self.config.max_tasks}")
            fresh = fresh[:room]
        created = self.queued(tasks, fresh)
        record = GoalCheckRecord(
            plan_id=first_plan(tasks),
            complete=bool(judged["complete"]),
            reason=judged["reason"],
            task_ids=list(created),
            notes=notes,
            error=judged["error"],
            model_calls=calls,
            reads=len(known_reads(tasks, "")),
        )
        log_goal_check(record)
        events = [event(GOAL_CHECKED, **record)]
        if created:
            events.append(event(DYNAMIC_TASKS_ADDED, parent_id=None, task_ids=list(created), source=GOAL_CHECK))
        return {"goal_check": record, "node_calls": {GOAL_CHECK: calls}, "tasks": created, "events": events}

    @staticmethod
    def queued(tasks: Mapping[str, Task], contents: list[str]) -> dict[str, Task]:
        """New subtasks for ``contents``, after every other one, in the queue's latest plan."""
        plan = latest_plan(tasks)
        first, created, n = next_top_position(tasks), {}, 1
        for offset, content in enumerate(contents):
            while GOAL_WORK_ID.format(n=n) in tasks:
                n += 1
            task_id = GOAL_WORK_ID.format(n=n)
            created[task_id] = new_task(task_id, content, position=[first + offset], origin="check", plan_id=plan)
            n += 1
        return created


def goal_left_unchecked(state: Mapping[str, Any], error: NodeError) -> Command:
    """Handler for the goal check: a crash there lets the results stand (recorded), and the run goes on to its
    final answer."""
    why = (
        f"the goal check failed ({error.node} crashed: {type(error.error).__name__}: {error.error}); the results stand"
    )
    tasks = state.get("tasks") or {}
    record = GoalCheckRecord(
        plan_id=first_plan(tasks), complete=True, reason="", task_ids=[], notes=[], error=why, model_calls=0
    )
    log_goal_check(record)
    return Command(update={"goal_check": record}, goto=FINALIZE)
