"""finalize node: writes the final answer from the results (partial ones included), in queue order.

When the results do not fit one request, the answer is written in stages, and nothing is cut from the
results: they are packed, in queue order, into groups whose request fits; a result too big for any group is
split into consecutive pieces. The model writes the part of the final answer for each group; the parts are
merged by one more call when they fit a request and the model's output room, and are otherwise joined in
order. When the run ends unfinished, or no model answer can be had, the fallback report (`report.py`)
is the answer."""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage

from replangraph.clock import run_time
from replangraph.config import AgentConfig
from replangraph.context.carried import elides, left_out, reported
from replangraph.context.fitting import GOAL_ID, RESULTS_ID, fit_parts
from replangraph.context.outcomes import announced, merge_updates
from replangraph.context.results import full_result, keep_outputs, report_task
from replangraph.context.summarizing import pack, split_text
from replangraph.context.window_monitor import ContextMonitor
from replangraph.context.workspace import reading_pending, thread_id
from replangraph.events import ANSWER_COMPLETED, ANSWER_CUT, PLAN_COMPLETED, emit, event
from replangraph.features import AnswerAddition, Answering
from replangraph.llm.aio import acall_model
from replangraph.llm.answers import was_cut
from replangraph.llm.bounds import cut_note, output_limit
from replangraph.llm.calls import call_model, guarded_steps
from replangraph.llm.overflow import refit_steps
from replangraph.llm.reading import answer_text, is_cut_json
from replangraph.llm.replies import with_metered_writes
from replangraph.names import FINALIZE
from replangraph.nodes.finalize.chat_markdown import chat_markdown
from replangraph.nodes.finalize.notes import replanned_ids, run_notes
from replangraph.nodes.finalize.prompts import (
    ADDED_ITEMS,
    DATA_OUTPUT,
    FINAL_MERGE_TEMPLATE,
    FINAL_PART_TEMPLATE,
    FINAL_TEMPLATE,
    FINALIZER_PROMPT,
    LEFT_OUT,
    UNSEEN_RESULTS,
)
from replangraph.nodes.finalize.report import (
    ResultsTooBig,
    failed_answer,
    report_with_lists,
    stop_reason,
    stop_unfinished,
)
from replangraph.queue.tasks import (
    RESET,
    Task,
    latest_plan,
    ordered,
    preview,
    spent_model_calls,
    status_counts,
)
from replangraph.state import ANSWER_SHORT, StateUpdate
from replangraph.steps_node import StepsNode
from replangraph.tracing import traced

logger = logging.getLogger(__name__)


Steps = Generator[Any, Any, Any]
"""Work written once for both paths (`replangraph.llm.calls.run_steps`): the model's calls are made by the
sync driver, or awaited by the async one."""


Ask = Callable[[list[AnyMessage]], Steps]
"""One model call as steps: the reply's text, stripped."""


Tokens = Callable[[list[AnyMessage]], int]


MIN_PIECE_CHARS = 200


CUT_JSON = "the model's final answer was JSON that ends before its brackets close (cut off, unreadable)"


LEFT_OUT_NAMED = 10
"""Items left out of a final answer that the request for a whole one names."""


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
    unseen: tuple[str, ...] = ()
    """Results no request showed: the calls they needed were more than ``max_steps`` had left."""


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


def synthesize(
    goal: str,
    entries: Sequence[Entry],
    *,
    ask: Ask,
    tokens: Tokens,
    budget: int,
    room: int | None,
    most: int | None = None,
) -> Steps:
    """The final answer from every entry (steps ending in a `Synthesis`), no request over ``budget`` tokens.

    One request when everything fits the request and the model's output room
    (``room`` tokens; None: the answer is short by design, any room will do); else one partial answer per group
    of results that does, merged by one more call when the parts fit a request and their size
    is within ``room`` (the model's output tokens), else joined in order. An empty
    partial answer gives an empty text (the caller falls back to its report). At most ``most`` calls (None: no
    bound): the groups past them are sent to no one, and the `Synthesis` keeps them as ``unseen``.
    """

    def fits(request: list[AnyMessage]) -> bool:
        return tokens(request) <= budget

    def answerable(texts: Sequence[str]) -> bool:
        # An answer that keeps every item is about as long as its results: they must fit the output room too.
        return room is None or tokens([HumanMessage("\n\n".join(texts))]) <= room

    everything = joined(entries)
    whole = final_request(goal, everything)
    if fits(whole) and answerable([everything]):
        return Synthesis((yield from ask(whole)), 1)
    goal_text = shown_goal(goal, tokens, budget)
    if goal_text != goal:
        whole = final_request(goal_text, everything)
        if fits(whole) and answerable([everything]):
            return Synthesis((yield from ask(whole)), 1)
    texts = [
        p for e in entries for p in pieces(e, lambda text: fits(part_request(goal_text, [text])) and answerable([text]))
    ]
    groups = pack(texts, lambda group: fits(part_request(goal_text, group)) and answerable(group))
    requests = [part_request(goal_text, group) for group in groups]
    if not all(fits(r) for r in requests):
        largest = max(tokens(r) for r in requests)
        raise ResultsTooBig(f"a piece of the results needs {largest} tokens, the budget is {budget}")
    allowed = len(requests) if most is None else max(most, 1)
    unseen = tuple(text for group in groups[allowed:] for text in group)
    partials: list[str] = []
    for request in requests[:allowed]:
        text = yield from ask(request)
        if not text:
            return Synthesis("", len(partials) + 1, len(partials) + 1)
        partials.append(text)
    calls = len(partials)
    merge = merge_request(goal_text, partials)
    if len(partials) > 1 and (most is None or calls < most) and fits(merge) and answerable(partials):
        merged = yield from ask(merge)
        if merged:
            return Synthesis(merged, calls + 1, len(partials), merged=True, unseen=unseen)
        calls += 1  # an empty merge loses nothing: the parts are joined instead
    return Synthesis("\n\n".join(partials), calls, len(partials), unseen=unseen)


def unresolved(tasks: Mapping[str, Task], replans: Sequence[Mapping]) -> list[Task]:
    """Subtasks that leave the goal unfinished: not run, stopped, or failed without a replacement plan."""
    covered = replanned_ids(replans)
    return [
        t
        for t in ordered(tasks)
        if t["status"] in ("pending", "in_progress", "skipped") or (t["status"] == "failed" and t["id"] not in covered)
    ]


class Finalizer(StepsNode):
    """The model's synthesis of the results: one call when they fit, else in stages; the fallback
    report when that is not possible. No request passes the monitor's budget."""

    def __init__(
        self,
        model: BaseChatModel,
        config: AgentConfig,
        monitor: ContextMonitor | None = None,
        stops: Sequence[Callable[[Mapping[str, Any], AgentConfig], Any]] = (),
        before_answer: Sequence[Callable[[Answering], AnswerAddition | None]] = (),
    ):
        """``stops``: the features' stop hooks (`replangraph.features.Feature.stop`); the first `Stop` one
        returns is the run's stop reason. ``before_answer``: the features' hooks that run before the answer is
        written, in order (`replangraph.features.Feature.before_answer`): their sections follow it."""
        self.monitor = (monitor or ContextMonitor(config)).for_model(model)
        self.model = model
        self.base_config = config
        self.stops = list(stops)
        self.before_answer = list(before_answer)

    def steps(self, state: Mapping, awaited: bool = False) -> Steps:
        """The node's update, its model calls made (or awaited) as steps."""
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        goal = state.get("goal", "")
        replans = state.get("replans") or []
        stop = next((s for halt in self.stops if (s := halt(state, self.config)) is not None), None)
        unfinished = bool(unresolved(tasks, replans))
        calls, left = spent_model_calls(state), state.get("remaining_steps")
        reason = stop_reason(tasks, replans, calls, self.config, left) if unfinished else ""
        reason = stop.reason if stop else reason
        skip = bool(stop and stop.skip_running)  # a cancelled run: what runs is skipped, not failed
        closing = stop_unfinished(tasks, reason, state.get("windows"), skip) if reason else {}
        closed = {tid: {**t, **closing.get("tasks", {}).get(tid, {})} for tid, t in tasks.items()}
        with reading_pending(closing):  # the partial results it keeps are read whole
            left = max(self.config.max_steps - calls, 0)  # calls past the first one come out of max_steps
            short = state.get("answer_form") == ANSWER_SHORT  # the plan says: not the items, a short answer
            answer, reported, lists = yield from self.answer(goal, closed, reason, awaited, left, short)
            kept = keep_outputs(report_task(closed), lists)
        answer += cut_results_note(closed)
        additions = self.additions({**state, "tasks": closed}, reason)  # after the answer's calls: they count too
        answer = with_sections(answer, [addition.section for addition in additions])
        done = event(
            PLAN_COMPLETED,
            final_answer=answer,
            counts=status_counts(closed),
            stop_reason=reported or None,
            notes=run_notes(closed),
        )
        counts = ", ".join(f"{n} {status}" for status, n in status_counts(closed).items() if n) or "no subtasks"
        if reported:
            logger.warning("run stopped: %s (plan %s; %s)", reported, latest_plan(closed), counts)
        else:
            logger.info("run finished: every subtask completed (plan %s; %s)", latest_plan(closed), counts)
        update: StateUpdate = {
            **{key: value for addition in additions for key, value in addition.writes.items()},
            **merge_updates([closing, kept]),
            "final_answer": answer,
            "stop_reason": reported,
            "messages": [AIMessage(chat_markdown(answer), name="replangraph")],  # its lines kept in a chat
            "windows": {RESET: True},
        }
        added_events = [e for addition in additions for e in addition.events]
        return announced([*(stop.events if stop else ()), *added_events, done], update)

    def additions(self, state: Mapping, reason: str) -> list[AnswerAddition]:
        """What the features' before-answer hooks add, in order: each sees the state as this node leaves it so
        far (the answer's own model calls metered in, `with_metered_writes`) with the writes of those before it."""
        found: list[AnswerAddition] = []
        seen = with_metered_writes(state)
        now = run_time()
        for hook in self.before_answer:
            addition = hook(Answering(seen, self.config, reason, now))
            if addition is not None:
                found.append(addition)
                seen.update(addition.writes)
        return found

    def ask(self, request: list[AnyMessage], awaited: bool = False) -> Steps:
        """The model's text for ``request`` (steps; awaited when ``awaited``); its failure raised (`synthesize`
        stops at the first). An answer cut at the output limit ends with a note saying so (and an
        ``answer_cut`` event)."""
        observe = lambda sent, reply: self.monitor.observe(sent, (), reply)  # noqa: E731
        call = acall_model if awaited else call_model
        trace = traced(FINALIZE)
        reply = (
            yield call(self.model, request, self.config, observe=observe, monitor=self.monitor, trace=trace)
        ).result()
        text = answer_text(reply)
        if text and was_cut(reply):
            limit = output_limit(self.config, self.monitor)
            emit(ANSWER_CUT, task_id=None, part="final answer", limit=limit)
            text = f"{text}\n\n{cut_note(limit)}"
        return text

    def synthesize(
        self,
        goal: str,
        tasks: Mapping[str, Task],
        share: float = 1.0,
        awaited: bool = False,
        short: bool = False,
        most: int | None = None,
    ) -> Steps:
        """The model's answer over every result (steps ending in a `Synthesis`), each request within ``share``
        of the budget and of the output room: the answer's bound as sent (`output_limit`), else the whole
        window; at most ``most`` calls (None: no bound). A ``short`` answer (the plan's ``answer_form``) needs
        no room for the items."""
        room = output_limit(self.config, self.monitor) or self.monitor.effective_window
        return synthesize(
            goal,
            result_entries(tasks),
            ask=lambda request: self.ask(request, awaited),
            tokens=self.monitor.tokens,
            budget=max(int(self.monitor.budget * share), 1),
            room=None if short else max(int(room * share), 1),
            most=most,
        )

    def answer(
        self,
        goal: str,
        tasks: Mapping[str, Task],
        reason: str,
        awaited: bool = False,
        left: int | None = None,
        short: bool = False,
    ) -> Steps:
        """``(final answer, why it is the fallback report, the report's whole lists to keep)`` (steps): the
        model's synthesis when everything completed (the reason then '', no lists), else the report.

        The first call is the answer's own; any more (parts, their merge, asking again for left-out items) come
        out of the ``left`` calls ``max_steps`` allows (None: no bound). Results no call could show follow the
        answer word for word (`UNSEEN_RESULTS`).

        A provider that refuses a request as too long gets one more try, fitted to the window its error
        names, else with half the budget. An answer that is JSON cut off before it closes (`is_cut_json`) is no
        final answer: the report is.
        """
        if reason or not tasks:
            reason = reason or "no subtasks were planned"
            report, lists = report_with_lists(goal, tasks, reason)
            return report, reason, lists
        failure: list[tuple[str, dict[str, str]]] = []

        def failed(exc: Exception) -> str:
            text, lists = failed_answer(goal, tasks, exc)
            failure.append((f"the final answer could not be written ({type(exc).__name__})", lists))
            return text

        def written() -> Steps:
            most = None if left is None else 1 + left
            syntheses = yield from refit_steps(
                lambda share: self.synthesize(goal, tasks, share, awaited, short, most),
                learn=self.monitor.learn_overflow,
                label="finalize call",
            )
            synthesis = syntheses[-1]
            again = left is None or synthesis.calls <= left  # one more ask still fits max_steps
            text = with_unseen(synthesis)
            return (yield from self.whole(goal, tasks, text, awaited, again, short))

        text = yield from guarded_steps(written(), failed)
        if failure:
            return text, *failure[0]
        if not text or is_cut_json(text):
            reason = CUT_JSON if text else "the model returned an empty final answer"
            report, lists = report_with_lists(goal, tasks, reason)
            return report, reason, lists
        return text, "", {}

    def whole(
        self,
        goal: str,
        tasks: Mapping[str, Task],
        text: str,
        awaited: bool = False,
        again: bool = True,
        short: bool = False,
    ) -> Steps:
        """``text`` (the model's final answer), with nothing the subtasks reported dropped (steps).

        An answer that leaves out list items the results report (`reported`), or shortens a list and says so
        ("... and 9 more"), is asked for once more, in the same conversation when the results fit one request.
        When the answer it keeps still shortens a list, or stopped at the output limit, the items it leaves out
        follow it, word for word. Items left out of two answers that say nothing of it are the model's choice
        (a goal may ask for some of the items found): they stay in the results. Without ``again`` (``max_steps``
        is spent) the model is not asked once more.

        A ``short`` answer (the plan says the goal asks for no items) is kept as it is, unless it says it shortened
        a list or stopped at the output limit: when it leaves out items, a line naming output ``results`` (every
        result, whole) follows it."""
        if not text:
            return text
        results = reported([entry.body for entry in result_entries(tasks)])
        missing = left_out(text, results)
        if short and not shortened(text):
            return f"{text}\n\n{data_note()}" if missing else text
        if not missing and not shortened(text):
            return text
        first = final_request(goal, joined(result_entries(tasks)))
        named = "; ".join(preview(item, 80) for item in missing[:LEFT_OUT_NAMED])
        retry = [*first, AIMessage(text), HumanMessage(LEFT_OUT.format(count=len(missing), named=named or "none"))]
        if again and self.monitor.fits(retry):
            second = yield from self.ask(retry, awaited)
            if second and len(left_out(second, results)) <= len(missing) and not shortened(second):
                text, missing = second, left_out(second, results)
        if missing and shortened(text):
            emit(ANSWER_COMPLETED, items=len(missing))
            text = f"{text}\n\n{ADDED_ITEMS}\n" + "\n".join(missing)
        return text


def with_sections(answer: str, sections: Sequence[str]) -> str:
    """``answer`` followed by the features' ``sections`` (those not empty), each after a blank line."""
    return "\n\n".join([answer, *(section.strip() for section in sections if section.strip())])


def data_note() -> str:
    """The line that names output ``results`` (every result, whole) after a short answer."""
    return DATA_OUTPUT.format(ident=RESULTS_ID, thread=thread_id() or "THREAD")


def with_unseen(synthesis: Synthesis) -> str:
    """The synthesis' text, followed word for word by the results no request showed (`UNSEEN_RESULTS`)."""
    if not synthesis.text or not synthesis.unseen:
        return synthesis.text
    count = len(synthesis.unseen)
    logger.warning("final answer: %d result piece(s) follow it unwritten (max_steps left no calls)", count)
    return "\n\n".join([synthesis.text, UNSEEN_RESULTS, *synthesis.unseen])


def shortened(answer: str) -> bool:
    """Whether a final answer says it shortened a list ("... and 9 more"), or stopped at the output limit."""
    return elides(answer) or CUT_TEXT in answer


CUT_TEXT = "stopped at the model's output limit"
"""What `cut_note` says of an answer the output limit cut."""


def cut_results_note(tasks: Mapping[str, Task]) -> str:
    """A closing note naming the subtasks whose results stopped at the output limit, or ''."""
    cut = [t["id"] for t in ordered(tasks) if t.get("answer_cut")]
    if not cut:
        return ""
    return (
        f"\n\nNote: the result of subtask(s) {', '.join(cut)} stopped at the model's output limit "
        "(max_output_tokens), so what they found may be incomplete; raise max_output_tokens to get it whole."
    )
