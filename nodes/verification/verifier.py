"""verifier node: the completion check (``AgentConfig(verify_results=True)``).

A subtask that ends with a final answer (not a handoff) waits in its window
until this node judges the answer against the subtask's instructions with one
structured `Verdict` call. Incomplete: the answer is kept as the partial result
and the missing work is queued as dynamic tasks of that subtask, exactly like a
split. A check that fails or answers garbage never fails the subtask: its
result stands.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Generator, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import NodeError
from langgraph.types import Command
from pydantic import BaseModel, Field

from replangraph.config import AgentConfig, AgentProfile
from replangraph.context.carried import known_reads, made_calls, made_progress, own_part
from replangraph.context.fitting import Fitted, fit_request, result_id, schema_tools
from replangraph.context.outcomes import (
    announced,
    completed_with_window,
    merge_updates,
    result_with_reads,
    window_reads,
)
from replangraph.context.results import full_result
from replangraph.context.window_monitor import ContextMonitor
from replangraph.context.workspace import collect_writes
from replangraph.events import DYNAMIC_TASKS_ADDED, event
from replangraph.llm.aio import arun_steps, off_loop
from replangraph.llm.answers import bind_schema, read_arguments
from replangraph.llm.calls import run_steps
from replangraph.llm.lenient import truthy
from replangraph.llm.overflow import refit_steps
from replangraph.llm.reading import UnreadableInput, answer_text, answers_waiting, as_text, task_specs
from replangraph.llm.structured import structured_steps
from replangraph.node_calls import NodeCall, acall_results, call_results
from replangraph.nodes.verification.names import CHECK_STOOD_DOWN, STEP_VERIFIED, VERIFIER
from replangraph.nodes.verification.prompts import (
    SENT_BACK,
    VERIFIER_PROMPT,
    VERIFY_EXCERPT_NOTE,
    VERIFY_TEMPLATE,
)
from replangraph.nodes.verification.state import TaskVerdict, verdict_record
from replangraph.policy import DEFAULT_POLICY, TextPolicy
from replangraph.queue.coverage import follow_ups
from replangraph.queue.plans import LimitReached, limit_hit, split_task
from replangraph.queue.tasks import (
    QueueError,
    Task,
    apply_writes,
    is_follow_up,
    queued_by_check,
    spent_model_calls,
)
from replangraph.run_config import Configured
from replangraph.safety_net import describe
from replangraph.state import StateUpdate
from replangraph.tracing import call_label, task_label, traced

logger = logging.getLogger(__name__)

RESULT_PART = "result"


class Verdict(BaseModel):
    """Whether a subtask's result does everything its instructions ask for."""

    complete: bool = Field(description="True only if nothing the instructions ask for is missing.")
    remaining_tasks: list[str] = Field(
        default_factory=list, description="Instructions for exactly the missing work; empty when complete."
    )
    reason: str = Field(description="What is missing, or why the result is complete.")


NOTHING = {"", "none", "null", "n/a", "na", "nothing", "-", "[]", "no remaining tasks"}
VERIFY_RETRIES = 1
"""Asks again after an unreadable verdict (a parroted one included); then the result stands."""
PARROTED = (
    "the Verdict repeats the tool's field descriptions or these instructions instead of judging this result: "
    "say in your own words what is missing, or why it is complete"
)


def words(text: str) -> str:
    """``text`` as lower-case words, punctuation and markup dropped: what echo detection compares."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def echoes() -> tuple[str, ...]:
    """The texts a verdict must not merely repeat: the Verdict's field descriptions and the prompt's field bullets."""
    fields = [info.description or "" for info in Verdict.model_fields.values()]
    bullets = re.findall(r"^- `\w+`: (.*?)(?=^- |\Z)", VERIFIER_PROMPT, flags=re.M | re.S)
    return tuple(w for w in (words(text) for text in [*fields, *bullets]) if w)


ECHOES = echoes()


def parroted(text: str) -> bool:
    """Whether ``text`` is a field description or instruction echoed back (the whole of it, or one within it)."""
    said = words(text)
    return bool(said) and any(said == echo or (len(echo) >= 30 and echo in said) for echo in ECHOES)


def verdict_fields(answer: Any) -> Mapping[str, Any]:
    """The Verdict's arguments: the tool call's, else JSON in the reply's text (reasoning skipped), else
    ``parsed``; unwraps ``{"verdict": {...}}``."""
    value = read_arguments(answer, "Verdict")
    if isinstance(value, Mapping) and "complete" not in value and len(value) == 1:
        inner = next(iter(value.values()))
        value = inner if isinstance(inner, Mapping) else value
    if not isinstance(value, Mapping):
        raise UnreadableInput("the answer holds no Verdict")
    return value


def read_verdict(answer: Any, lines: bool = True) -> tuple[bool, str, list[str], str | None]:
    """``(complete, reason, remaining task instructions, note)`` from a structured answer, read leniently;
    remaining tasks given as prose are read one a line only with ``lines`` (the text policy's reading).

    An explicit "incomplete" stands even when its remaining tasks cannot be read (the note says so).
    """
    value = verdict_fields(answer)
    reason = as_text(value.get("reason")).strip()
    complete = truthy(value.get("complete", value.get("is_complete")))
    remaining = value.get("remaining_tasks", value.get("remaining"))
    contents, note = [], None
    if remaining is not None and as_text(remaining).strip().lower() not in NOTHING:
        try:
            contents = [s["content"] for s in task_specs(remaining, "remaining_tasks", lines=lines)]
        except UnreadableInput as exc:
            if complete is not False:
                raise
            note = f"its remaining tasks could not be read ({exc})"
    if parroted(reason) or any(parroted(content) for content in contents):
        raise UnreadableInput(PARROTED)
    if complete is None:
        if not contents:
            raise UnreadableInput("the Verdict says neither whether the result is complete nor what is missing")
        complete = False
    return complete, reason, [] if complete else contents, note


def log_verdict(task: Task, judged: TaskVerdict, replan_request: Mapping[str, Any] | None) -> None:
    """Log the completion check's verdict on ``task``: complete at DEBUG, anything else at INFO."""
    label = task_label(task)
    if judged.get("stood_down"):
        logger.info("completion check of %s stood down: %s", label, judged["stood_down"])
    elif judged["complete"]:
        logger.debug("completion check: %s complete%s", label, f" ({judged['error']})" if judged["error"] else "")
    elif judged["follow_up_ids"]:
        ids = ", ".join(judged["follow_up_ids"])
        logger.info("completion check: %s incomplete (%s); follow-ups queued: %s", label, judged["reason"], ids)
    else:
        reason = (replan_request or {}).get("reason") or judged["reason"]
        logger.info("completion check: %s incomplete, sent to the replanner: %s", label, reason)


class Verifier(Configured):
    """Judges every answer awaiting its check, then completes the subtask (and queues what is missing)."""

    def __init__(
        self,
        model: BaseChatModel,
        profiles: Mapping[str, AgentProfile],
        config: AgentConfig,
        monitor: ContextMonitor | None = None,
        policy: TextPolicy = DEFAULT_POLICY,
    ):
        self.monitor = (monitor or ContextMonitor(config)).for_model(model)
        self.policy = policy
        self.structured = bind_schema(model, Verdict)
        self.tools = schema_tools(Verdict)
        self.profiles = profiles
        self.base_config = config

    def request(self, goal: str, task: Task, result: str, budget: int | None = None) -> Fitted[list[BaseMessage]]:
        """The check's request: the subtask's instructions and its result, not the goal (a weak judge takes the
        goal for the subtask and asks for all of it again). A result too long for it is shown as an excerpt, and
        the prompt then says the omitted text is not missing; the instructions are never cut."""
        system = SystemMessage(VERIFIER_PROMPT.format(batch_size=self.config.batch_size))

        def build(shown: Mapping[str, str]) -> list[BaseMessage]:
            text = VERIFY_TEMPLATE.format(task_id=task["id"], content=task["content"], result=shown[RESULT_PART])
            if shown[RESULT_PART] != result:
                text += VERIFY_EXCERPT_NOTE
            return [system, HumanMessage(text)]

        parts = {RESULT_PART: result}
        outputs = {RESULT_PART: result_id(task["id"])}
        return fit_request(parts, build, outputs, self.monitor, tools=self.tools, budget=budget)

    def judge(self, goal: str, task: Task, result: str, retries: int = VERIFY_RETRIES) -> tuple[TaskVerdict, int]:
        """The verdict on ``result`` and the model calls it took; never raises for model trouble.

        A provider that refuses the request as too long gets it once more, fitted to a smaller budget.
        """
        trace = traced(VERIFIER, task)
        return run_steps(
            self.judge_steps(lambda budget: self.request(goal, task, result, budget), retries, trace=trace)
        )

    async def ajudge(self, goal: str, task: Task, result: str, retries: int) -> tuple[TaskVerdict, int]:
        """`judge` on the async path: the model awaited."""
        build = lambda budget: self.request(goal, task, result, budget)  # noqa: E731
        steps = self.judge_steps(build, retries, awaited=True, trace=traced(VERIFIER, task))
        return await arun_steps(steps, off_loop=False)  # no store

    def judge_steps(
        self,
        build: Callable[[int], Fitted[list[BaseMessage]]],
        retries: int,
        awaited: bool = False,
        trace: RunnableConfig | None = None,
    ) -> Generator[Any, Any, tuple[TaskVerdict, int]]:
        """A verdict on the request ``build(budget)`` makes (steps, `run_steps`), and the model calls it took;
        ``trace``: the calls' config (`replangraph.tracing.traced`)."""
        judged = yield from refit_steps(
            lambda share: self.within_steps(build(int(self.monitor.budget * share)), retries, awaited, trace),
            refused=lambda outcome: outcome[2] is not None,
            learn=self.monitor.learn_overflow,
            error=lambda outcome: outcome[2],
            label=call_label(trace),
        )
        return judged[-1][0], sum(calls for _, calls, _ in judged)

    def within_steps(
        self,
        fitted: Fitted[list[BaseMessage]],
        retries: int,
        awaited: bool = False,
        trace: RunnableConfig | None = None,
    ) -> Generator[Any, Any, tuple[TaskVerdict, int, BaseException | str | None]]:
        """One try of `judge_steps` with the request ``fitted`` to a budget: the verdict, its model calls, and
        the provider's error when it refused the request as too long."""
        if not fitted.fits:
            needed = self.monitor.tokens(fitted.request, self.tools)
            error = f"the check's request does not fit the context window ({needed} tokens); the result stands"
            return verdict_record(True, error=error), 0, None
        asked = yield from structured_steps(
            self.structured,
            fitted.request,
            lambda answer: read_verdict(answer, lines=self.policy.enabled),
            retries=retries,
            config=self.config,
            monitor=self.monitor,
            awaited=awaited,
            trace=trace,
        )
        if asked.failure is not None:  # a broken check must not fail a subtask that has a result
            exc = asked.failure
            error = f"the check failed ({type(exc).__name__}: {exc}); the result stands"
            return verdict_record(True, error=error), asked.calls, exc if asked.overflow else None
        if asked.value is None:
            error = f"the check's answer could not be read ({asked.error}); the result stands"
            return verdict_record(True, error=error), asked.calls, None
        complete, reason, remaining, note = asked.value
        return verdict_record(complete, reason, remaining, error=note), asked.calls, None

    def queue_follow_ups(
        self, tasks: Mapping[str, Task], task: Task, remaining: list[str], goal: str, progress: bool
    ) -> tuple[dict, dict]:
        """``(follow-up tasks, task fields)``: the missing work as continuations of ``task`` (the rest of its own
        work, at its depth); when none can be queued, the task's fields say why (`settle`).

        Every follow-up the check names is queued as written (`follow_ups`), but the goal itself and a repeat of
        the subtask's own instructions beyond one redo (none when it made no ``progress`` with tools of its own:
        the same instructions on the same inputs are the same work); the text policy may note overlaps. A check
        whose every follow-up is left out stands down, and the result stands."""
        fresh = follow_ups(remaining, goal=goal, own=task["content"], again=progress)
        notes = [*fresh.notes, *self.policy.notes(tasks, fresh.queued, within=task)]
        if not fresh.queued:
            why = "what it found missing is the goal itself or this subtask again: " + " ".join(fresh.notes)
            return {}, {"stood_down": why}
        specs = [{"content": c, "agent_type": None} for c in fresh.queued]
        try:
            created = split_task(
                tasks,
                task["id"],
                specs,
                agent_types=self.profiles,
                max_tasks=self.config.max_tasks,
                max_split_depth=self.config.max_split_depth,
                kind="continuation",
                by="check",
            )
        except LimitReached as exc:
            return {}, {
                "why": f"{exc.limit}={exc.value} left no room for them ({exc.needed} needed)",
                **limit_hit(task, exc),
            }
        except QueueError as exc:
            return {}, {"why": str(exc)}
        return created, {"notes": notes} if notes else {}

    def settle(
        self,
        tasks: Mapping[str, Task],
        task: Task,
        result: str,
        judged: TaskVerdict,
        calls: int,
        window: Any = (),
        goal: str = "",
    ) -> StateUpdate:
        """The state update for one judged subtask: completed, with follow-ups when something is missing;
        the tool outputs still in its ``window`` are kept.

        Missing work that could not be queued (none named, or a limit refused it) goes to the replanner, with
        the answer kept as the partial result. The check stands down (the result stands, with a
        ``check_stood_down`` event) when the subtask is a follow-up the check queued that found nothing its parent
        had not (`made_progress`), or when all it found missing repeats work queued, running or done."""
        task_id = task["id"]
        window = list(window or [])
        if not judged["complete"] and self.sends_back(task, window):
            return sent_back(task, window, judged, task.get("model_calls", 0) + calls)
        created: dict[str, Task] = {}
        extra: dict[str, Any] = {}
        notes: list[str] = []
        parent = tasks.get(task.get("parent_id") or "")
        before = full_result(parent) if parent is not None else None
        known = known_reads(tasks, task_id) if is_follow_up(task) else ()
        progress = made_progress(result, window_reads(task, window), parent, before, known)
        if not judged["complete"]:
            extra = {"why": "it named no remaining tasks"}
            if queued_by_check(task) and not progress:
                before_it = f"{parent['id']} had not" if parent is not None else "the run had not"
                extra = {"stood_down": f"its follow-up {task_id} found nothing {before_it}"}
            elif judged["remaining_tasks"]:
                # Going over its own instructions again helps only an agent that reads with tools of its own.
                again = progress and made_calls(own_part(task_id, window))
                created, extra = self.queue_follow_ups(tasks, task, judged["remaining_tasks"], goal, again)
            why = extra.pop("why", None)
            notes = extra.pop("notes", [])
            if extra.get("stood_down"):
                judged = {**judged, "stood_down": extra.pop("stood_down")}
            elif not created:
                judged = {**judged, "error": "; ".join(e for e in (judged["error"], f"not queued: {why}") if e)}
                reason = f"the completion check found the result incomplete ({judged['reason'] or 'no reason'}); {why}"
                extra["replan_request"] = {"trigger": "check", "reason": reason}
            if notes:
                judged = {**judged, "notes": notes}
        judged = {**judged, "follow_up_ids": list(created)}
        log_verdict(task, judged, extra.get("replan_request"))
        events = [event(STEP_VERIFIED, task_id=task_id, **judged)]
        if judged.get("stood_down"):
            events.append(event(CHECK_STOOD_DOWN, task_id=task_id, reason=judged["stood_down"]))
        if created:
            added = event(
                DYNAMIC_TASKS_ADDED, parent_id=task_id, task_ids=list(created), source="verifier", notes=notes
            )
            events.append(added)
        spent = task.get("model_calls", 0) + calls
        handed = {"handed_off": list(created)} if created else {}
        update = announced(events, completed_with_window(task, window, result, spent, **handed))
        update["tasks"][task_id].update(verdict=judged, **extra)
        if parent is not None:
            update["tasks"][task_id]["progress"] = progress
        update["tasks"].update(created)
        return update

    effects_in_tasks = True
    """Its model calls are tasks of their own (`replangraph.node_calls`): each takes one subtask and its answer,
    and the node's own code only computes over the state (`replangraph.hosting.effects_in_tasks`)."""

    def judge_calls(
        self, goal: str, tasks: Mapping[str, Task], results: Mapping[str, str], asked: list[str], retries: int
    ) -> list[NodeCall]:
        """One `judge` call per answer ``asked`` about, each holding that subtask and its answer only."""
        return [NodeCall(VERIFIER, "judge", (goal, tasks[t], results[t], retries), target=self) for t in asked]

    @collect_writes
    def __call__(self, state: Mapping[str, Any]) -> StateUpdate:
        goal, waiting, results, retries = self.checks(state)
        tasks = state.get("tasks") or {}
        foregone = self.foregone(state, waiting, results)
        asked = [t for t in waiting if t not in foregone]
        verdicts = call_results(self.judge_calls(goal, tasks, results, asked, retries))
        judged = dict(zip(asked, verdicts, strict=True))
        return self.settled(state, waiting, results, [judged.get(t) or foregone[t] for t in waiting])

    @collect_writes
    async def acall(self, state: Mapping[str, Any]) -> StateUpdate:
        """`__call__` on the async path: the checks awaited together."""
        goal, waiting, results, retries = await off_loop(lambda: self.checks(state))  # results read the store
        tasks = state.get("tasks") or {}
        foregone = await off_loop(lambda: self.foregone(state, waiting, results))
        asked = [t for t in waiting if t not in foregone]
        verdicts = await acall_results(self.judge_calls(goal, tasks, results, asked, retries))
        judged = dict(zip(asked, verdicts, strict=True))
        verdicts = [judged.get(t) or foregone[t] for t in waiting]
        return await off_loop(lambda: self.settled(state, waiting, results, verdicts))  # keeping reads the store

    def foregone(
        self, state: Mapping[str, Any], waiting: list[str], results: Mapping[str, str]
    ) -> dict[str, tuple[TaskVerdict, int]]:
        """The waiting answers no model need judge, each with its verdict (no call made): follow-ups a check
        queued that made calls and read nothing any subtask had not (`made_progress`). Whatever a check said of
        one, its result would stand and nothing would be queued (`settle`), so the check stands down unasked."""
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        windows = state.get("windows") or {}
        found = {}
        for task_id in waiting:
            task, window = tasks[task_id], windows.get(task_id) or []
            if not queued_by_check(task) or not made_calls(own_part(task_id, window)):
                continue
            parent = tasks.get(task.get("parent_id") or "")
            before = full_result(parent) if parent is not None else None
            known = known_reads(tasks, task_id)
            if made_progress(results[task_id], window_reads(task, window), parent, before, known):
                continue
            why = f"{task_id}, queued by a check, read nothing no other subtask had: not asked again"
            found[task_id] = ({**verdict_record(True, reason=why), "stood_down": why}, 0)
        return found

    def checks(self, state: Mapping[str, Any]) -> tuple[str, list[str], dict[str, str], int]:
        """``(goal, ids of the answers waiting, their texts, retries per check)``."""
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        windows = state.get("windows") or {}
        # No more checks than max_steps has calls left for: the others wait (a stop's report keeps their answers).
        left = self.config.max_steps - spent_model_calls(state)
        waiting = answers_waiting(tasks, windows)[: max(left, 1)]
        # What each agent read and its answer does not show is part of its result, checked with it.
        results = {tid: result_with_reads(tasks[tid], windows[tid], answer_text(windows[tid][-1])) for tid in waiting}
        # A retry of an unreadable verdict only while max_steps leaves room for one per waiting answer.
        retries = VERIFY_RETRIES if left >= 2 * len(waiting) else 0
        return state.get("goal", ""), waiting, results, retries

    def sends_back(self, task: Task, window: list) -> bool:
        """Whether an incomplete verdict goes back into the subtask's own conversation, once, instead of queueing
        follow-ups: its agent has tools of its own and made no call in it yet (whatever its words said: "Next up:
        items 11 onwards" is an answer no reader takes for an announcement), and no verdict went back before."""
        profile = self.profiles.get(task["agent_type"])
        return bool(
            profile is not None
            and profile.tools
            and not made_calls(own_part(task["id"], window))
            and not was_sent_back(task["id"], window)
        )

    def settled(
        self, state: Mapping[str, Any], waiting: list[str], results: dict[str, str], judged: list
    ) -> StateUpdate:
        """The update settling every judged answer; {} when none waited."""
        if not waiting:
            return {}
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        windows = state.get("windows") or {}
        # Follow-ups are queued one subtask at a time, so parallel checks never overshoot max_tasks.
        view = apply_writes(tasks, [])  # keeps the queue's index
        updates = []
        for task_id, (judgement, calls) in zip(waiting, judged, strict=True):
            update = self.settle(
                view, tasks[task_id], results[task_id], judgement, calls, windows[task_id], state.get("goal", "")
            )
            view = apply_writes(view, [update["tasks"]])
            updates.append(update)
        return merge_updates(updates)


def sent_back_id(task_id: str) -> str:
    """The id of the message that takes a verdict back into ``task_id``'s conversation."""
    return f"replangraph-sent-back-{task_id}"


def was_sent_back(task_id: str, window: list) -> bool:
    """Whether a verdict went back into ``task_id``'s conversation before (it goes back once)."""
    mark = sent_back_id(task_id)
    return any(m.id == mark for m in window)


def sent_back(task: Task, window: list, judged: TaskVerdict, spent: int) -> StateUpdate:
    """The update that puts an incomplete verdict into the subtask's conversation (`SENT_BACK`): the subtask goes
    on with its agent's next turn, its answer kept in the window."""
    missing = "; ".join(judged["remaining_tasks"]) or "not named"
    text = SENT_BACK.format(reason=judged["reason"] or "no reason given", missing=missing)
    verdict = {**judged, "sent_back": True}
    change = {"status": "in_progress", "model_calls": spent, "verdict": verdict}
    back = HumanMessage(text, id=sent_back_id(task["id"]))
    update = {"tasks": {task["id"]: change}, "windows": {task["id"]: [*window, back]}}
    return announced([event(STEP_VERIFIED, task_id=task["id"], **verdict)], update)


def let_results_stand(goto: str) -> Callable[..., Command]:
    """Handler for the verifier: a broken check never fails a subtask, so every waiting answer stands."""

    @collect_writes
    def handle(state: Mapping[str, Any], error: NodeError) -> Command:
        tasks, windows = state.get("tasks") or {}, state.get("windows") or {}
        updates = []
        for tid in answers_waiting(tasks, windows):
            update = completed_with_window(tasks[tid], windows[tid], answer_text(windows[tid][-1]))
            note = f"the check failed ({describe(error)}); the result stands"
            update["tasks"][tid]["verdict"] = verdict_record(True, error=note)
            updates.append(update)
        return Command(update=merge_updates(updates), goto=goto)

    return handle
