"""What is kept: the results workspace where subtask results and text cut from windows live, and the
update builders that end a subtask.

**The results workspace.** Entries live in the graph's LangGraph store when it has one (``InMemoryStore``,
``SqliteStore``, ``PostgresStore``, the store ``langgraph dev`` provides), under the run's namespace
``("replangraph", thread_label(thread_id))`` and keys ``plan:{plan_id}:step:{step_id}:result`` (the latest version; each
version also under ``…:result:v{n}``) and ``plan:{plan_id}:step:{step_id}:output:{key}``. Without a store they
live in the state's ``workspace`` channel, checkpointed as writes (each text once), so they are exactly as
durable as the checkpointer. A run without a thread id keeps them in that channel too, store or not, so two
such runs on one store never read each other's entries. Nodes read it through `current_workspace()`.

**Output ids** are ``goal``, ``{task_id}/result`` (a subtask's whole result) and ``{task_id}/{key}`` (a tool
call id for tool outputs, ``history-N`` for folded messages, ``summary-N``/``message-…`` for cut messages,
``window-at-failure``, ``turn-at-end``), ``plan`` (the current plan) and ``results`` (every result, whole).

**Writes are effects.** The update builders (`entry_update`; `completed`, `completed_with_window`, `failed`,
`failed_with_window`, which end a subtask) are pure: an update carries the ``workspace`` entries to write and
the ``events`` to emit, and the node's `collect_writes` applies them when it returns (to the store in one batch,
awaited on the async path, when there is one, else as the channel's writes). Called outside a graph run they write
and send nothing. On the async path the reads run off the event loop (`replangraph.llm.aio`).

**Finding kept text**: the store namespace a thread's entries live under (`thread_label`, `run_namespace`,
`run_label`), the whole text behind an output id (`read_saved`: what ``read_output``, ``replangraph output`` and
``durable.kept_output`` show) and the ids kept (`saved_keys`, `output_keys`).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import inspect
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.messages import AnyMessage, ToolMessage
from langgraph.config import get_config, get_store
from langgraph.store.base import PutOp
from langgraph.types import Command

from replangraph.context.carried import Read, own_part, read_digests, reads_in, uncarried, with_reads
from replangraph.context.compression import transcript
from replangraph.context.excerpts import PAGE_RE
from replangraph.context.fitting import (
    GOAL_ID,
    KEPT,
    PLAN_ID,
    RESULT_KEY,
    RESULTS_ID,
    excerpt,
    kept_id,
    mark_kept,
    message_key,
    output_id,
    result_id,
    unique_key,
)
from replangraph.events import EVENTS, STEP_COMPLETED, STEP_FAILED, emit, event, held_events
from replangraph.llm.reading import message_text
from replangraph.names import ASK_USER, READ_OUTPUT
from replangraph.queue.tasks import ordered, plan_summary, preview
from replangraph.run_config import settings_resolved_once
from replangraph.state import StateUpdate, merge_workspace
from replangraph.tracing import task_label

logger = logging.getLogger(__name__)

RUN_KEY = "run_key"
"""The state channel holding the run's own key (`replangraph.state.RunKey`)."""
WORKSPACE = "workspace"
"""The state channel holding the entries of a run without a store:
``{"plan:1:step:3": {":result": entry, ":result:v1": entry, ":output:call_7": entry}}``."""


# --------------------------------------------------------------------------- the results workspace


def step_key(task: Mapping[str, Any]) -> str:
    """``plan:{plan_id}:step:{step_id}``: the prefix of a subtask's entries."""
    return f"plan:{task.get('plan_id') or '1'}:step:{task['id']}"


Slot = tuple[str, str]
"""``(step key, rest)``: an entry's place; its store key is the two joined."""


def result_slot(task: Mapping[str, Any], version: int | None = None) -> Slot:
    """Where a subtask's result is kept (its latest version, or version ``version``)."""
    return step_key(task), ":result" + (f":v{version}" if version else "")


def output_slot(task: Mapping[str, Any], key: str) -> Slot:
    """Where text kept for a subtask under ``key`` (a tool call id, ``history-2``, ``window-at-failure``) is."""
    return step_key(task), f":output:{key}"


def thread_id() -> str | None:
    """The thread id of the graph run going on (``configurable.thread_id``), or None (none, or no run)."""
    try:
        found = get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:
        return None
    return None if found is None or found == "" else str(found)


def graph_store() -> Any:
    """The graph's store, or None (no store, not inside a graph run, or a run without a thread id: its
    entries stay in its own state, unseen by other runs on the store)."""
    try:
        store = get_store()
    except (RuntimeError, KeyError):  # KeyError: inside a runnable (a tool call) but not a graph run
        return None
    return store if thread_id() is not None else None


class Workspace:
    """Reads entries in the store, or in the ``workspace`` channel (``entries``), and the entries the node
    is about to write (``pending``, see `reading_pending`). A node that got a ``Send`` payload sees only
    the keys it was given. Writing is `apply_effects`'s job."""

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, Any]] | None = None,
        store: Any = None,
        pending: Mapping | None = None,
        run_key: str | None = None,
    ):
        self.store = store
        self.run_key = run_key
        self.entries = entries or {}
        self.pending = pending or {}
        self.namespace = run_namespace() if store is not None else ()

    def _entry(self, slot: Slot) -> Mapping[str, Any] | None:
        step, rest = slot
        found = self.pending.get(step, {}).get(rest)
        if found is not None:
            return found
        if self.store is not None:
            item = self.store.get(self.namespace, step + rest)
            return item.value if item is not None else None
        return self.entries.get(step, {}).get(rest)

    def get(self, slot: Slot) -> str | None:
        """The text in ``slot``, or None (also for a slot a ``Send`` payload names without its text)."""
        entry = self._entry(slot)
        return None if entry is None or "content" not in entry else str(entry["content"])

    def has(self, slot: Slot) -> bool:
        """Whether ``slot`` holds an entry."""
        return self._entry(slot) is not None

    def keys(self, task: Mapping[str, Any], limit: int = 20) -> list[str]:
        """Keys of a subtask's kept outputs (the part after ``output:``), oldest first, the last ``limit``."""
        return output_keys(self, task, limit)

    def with_pending(self, update: Mapping[str, Any]) -> Workspace:
        """This workspace, also reading the entries ``update`` will write (nothing is written)."""
        pending = merge_workspace(self.pending, [update.get(WORKSPACE)])
        return Workspace(self.entries, self.store, pending, self.run_key)


def entry_update(slot: Slot, text: str, **meta: Any) -> dict[str, Any]:
    """``{"workspace": {step: {rest: entry}}}``: the update part that keeps ``text`` in ``slot``."""
    step, rest = slot
    return {WORKSPACE: {step: {rest: {"content": text, "step": step, **meta}}}}


def entries_of(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One update part holding the ``workspace`` entries of ``parts`` (a later one wins a slot), or {}."""
    entries = merge_workspace({}, [part.get(WORKSPACE) for part in parts])
    return {WORKSPACE: entries} if entries else {}


_current: contextvars.ContextVar[Workspace | None] = contextvars.ContextVar("replangraph_workspace", default=None)


def current_workspace() -> Workspace:
    """The workspace of the node running now (a fresh, store-backed or empty one outside `collect_writes`)."""
    found = _current.get()
    return found if found is not None else Workspace(store=graph_store())


@contextmanager
def using(workspace: Workspace) -> Iterator[Workspace]:
    """Make ``workspace`` current for the calls inside the block."""
    token = _current.set(workspace)
    try:
        yield workspace
    finally:
        _current.reset(token)


def open_workspace(
    entries: Mapping[str, Any] | None, run_key: str | None = None
) -> contextlib.AbstractContextManager[Workspace]:
    """Make a workspace over ``entries`` (and the graph's store) of the run with ``run_key`` current for the
    calls inside the block."""
    return using(Workspace(entries, graph_store(), run_key=run_key))


@contextmanager
def reading_pending(update: Mapping[str, Any]) -> Iterator[Workspace]:
    """Let reads inside the block see the entries ``update`` will write, as a node that reads what it keeps."""
    with using(current_workspace().with_pending(update)) as view:
        yield view


def split_effects(update: Any, keep_entries: bool) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    """``(update without its effects, its workspace entries by step and key, its events)`` for ``update`` (a dict
    or a ``Command``); with ``keep_entries`` the entries stay in the update too (the channel's writes)."""
    inner = update.update if isinstance(update, Command) else update
    pairs = list(inner.items()) if isinstance(inner, Mapping) else list(inner or ())
    entries = merge_workspace({}, [v for k, v in pairs if k == WORKSPACE])
    events = [e for k, v in pairs if k == EVENTS for e in v or ()]
    rest = [(k, v) for k, v in pairs if k not in (WORKSPACE, EVENTS)]
    if keep_entries and entries:
        rest.append((WORKSPACE, entries))
    if not isinstance(update, Command):
        return (dict(rest) if update is not None or rest else update), entries, events
    changed = dataclasses.replace(update, update=dict(rest) if isinstance(inner, Mapping) or inner is None else rest)
    return changed, entries, events


def store_writes(entries: Mapping[str, Mapping[str, Any]], store: Any) -> list[PutOp]:
    """The store operations writing ``entries`` (by step and key) under the run's namespace, with the store's
    default time to live, as ``store.put`` would write each."""
    namespace, ttl = run_namespace(), (getattr(store, "ttl_config", None) or {}).get("default_ttl")
    return [
        PutOp(namespace, step + rest, entry, ttl=ttl)
        for step, slots in entries.items()
        for rest, entry in slots.items()
    ]


def apply_effects(update: Any, store: Any) -> Any:
    """``update`` (a dict or a ``Command``) with its effects applied: its ``workspace`` entries go to
    ``store`` in one batch (without one they stay, as the channel's writes), then its ``events`` are emitted,
    in order. Returns the update without what it applied."""
    rest, entries, events = split_effects(update, keep_entries=store is None)
    if store is not None and entries:
        store.batch(store_writes(entries, store))
    for item in events:
        emit(**item)
    return rest


async def aapply_effects(update: Any, store: Any) -> Any:
    """`apply_effects` on the async path: the batch is awaited (``store.abatch``), never sent from the event loop
    through the store's sync methods."""
    rest, entries, events = split_effects(update, keep_entries=store is None)
    if store is not None and entries:
        await store.abatch(store_writes(entries, store))
    for item in events:
        emit(**item)
    return rest


def collect_writes(node: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a node (a function or a node class's ``__call__``) or an error handler so that its
    update's effects are applied when it returns normally (`apply_effects`): its input's entries are
    readable, its workspace writes reach the store or the state, its events go out.

    A context variable carries the workspace to the readers deep in a node's call
    (as LangGraph's own ``get_store`` does) instead of threading it through every
    function; the wrapper keeps the node's signature for LangGraph. Events a node
    emits directly are held too (`held_events`): a crash sends none of them. The run's
    settings are resolved once per call (`settings_resolved_once`).
    """

    def opened(args: tuple) -> contextlib.AbstractContextManager[Workspace]:
        state = next((a for a in args if isinstance(a, Mapping)), None)  # after ``self`` for a method
        entries, key = (state.get(WORKSPACE), state.get(RUN_KEY)) if state is not None else (None, None)
        return open_workspace(entries, key)

    if inspect.iscoroutinefunction(node):  # an async node: the same, around what it awaits; its writes awaited

        @functools.wraps(node)
        async def arun(*args: Any, **kwargs: Any) -> Any:
            with opened(args) as workspace, held_events(), settings_resolved_once():
                return await aapply_effects(await node(*args, **kwargs), workspace.store)

        return arun

    @functools.wraps(node)
    def run(*args: Any, **kwargs: Any) -> Any:
        with opened(args) as workspace, held_events(), settings_resolved_once():
            return apply_effects(node(*args, **kwargs), workspace.store)

    return run


DROPPED = '[output "{id}" removed from context (only the last {keep} tool outputs are kept); {how}]'
DROPPED_START = "[output "
DROPPED_MARK = "removed from context"


# --------------------------------------------------------------------------- kept text; ending a subtask


def keep_outputs(task: Mapping[str, Any], outputs: Mapping[str, str]) -> dict[str, Any]:
    """The update part (``workspace`` entries) keeping texts cut from a subtask's window, by key. A key
    already held is not written again (callers pick free keys with `unique_key`): a note may point at it."""
    workspace = current_workspace()
    fresh = {key: text for key, text in outputs.items() if not workspace.has(output_slot(task, key))}
    return entries_of(entry_update(output_slot(task, key), text, kind="output") for key, text in fresh.items())


RESULT_PREVIEW_CHARS = 2_000
"""Results up to this long stay whole in the queue; longer ones as an excerpt pointing at the workspace."""


def result_fields(task: Mapping[str, Any], text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(task fields, update part)`` keeping a subtask's result as a new version: the fields point at it
    (``result``, whole when short, else an excerpt; ``result_ref``), the update part holds its
    ``workspace`` entries. An existing version is never overwritten (a replayed or forked run)."""
    workspace = current_workspace()
    version = int((task.get("result_ref") or {}).get("version", 0)) + 1
    while workspace.has(result_slot(task, version)):
        version += 1
    meta = {"kind": "result", "task_id": task["id"], "version": version}
    entries = [entry_update(result_slot(task, version), text, **meta), entry_update(result_slot(task), text, **meta)]
    shown = text if len(text) <= RESULT_PREVIEW_CHARS else excerpt(text, RESULT_PREVIEW_CHARS, result_id(task["id"]))
    ref = {"key": "".join(result_slot(task, version)), "version": version, "chars": len(text)}
    return {"result": shown, "result_ref": ref}, entries_of(entries)


def full_result(task: Mapping[str, Any]) -> str | None:
    """A subtask's whole result: from the workspace when the queue holds a preview, else the queue's."""
    ref = task.get("result_ref")
    if ref:
        found = current_workspace().get(result_slot(task, ref.get("version")))
        if found is not None:
            return found
    return task.get("result")


def all_results(tasks: Mapping[str, Mapping[str, Any]]) -> str:
    """Every completed result and partial result of ``tasks``, whole, in queue order, each under its subtask's id
    and instructions: the text of output id ``results``, read from the workspace, never kept twice."""
    parts = []
    for task in ordered(tasks):
        text = full_result(task) if task["status"] == "completed" or task.get("result") else None
        if text:
            mark = "" if task["status"] == "completed" else f" (partial result; {task['status']})"
            parts.append(f"[{task['id']}] {task['content']}{mark}\n{text}")
    return "\n\n".join(parts)


REPORT_PREFIX = "report-"


def report_task(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The stand-in task whose kept outputs hold the fallback report's whole lists, for the queue's latest
    plan ``p``: id ``report-{p}``, so its output ids are ``report-{p}/{key}``."""
    numbers = [int(p) for t in tasks.values() if str(p := t.get("plan_id") or "1").isdigit()]
    plan = str(max(numbers, default=1))
    return {"id": f"{REPORT_PREFIX}{plan}", "plan_id": plan}


def cut_observation(
    message: ToolMessage, max_chars: int, task_id: str, taken: Callable[[str], bool] = lambda key: False
) -> tuple[ToolMessage, str, str | None]:
    """``(message for the window, key, full text to save under it if it was cut)``: head, tail and a note."""
    text = message_text(message) if not isinstance(message.content, str) else message.content
    if len(text) <= max_chars or kept_id(message):
        return message, "", None
    key = unique_key(message_key(message), taken)
    ident = output_id(task_id, key)
    return mark_kept(message, excerpt(text, max_chars, ident), ident), key, text


def is_dropped(message: AnyMessage) -> bool:
    """Whether a tool output was removed from the window by `drop_old_observations`."""
    text = message_text(message)
    return bool(kept_id(message)) and text.startswith(DROPPED_START) and DROPPED_MARK in text[:300]


def drop_old_observations(
    window: Sequence[AnyMessage], keep: int, task_id: str, taken: Callable[[str], bool] = lambda key: False
) -> tuple[list[AnyMessage], dict[str, str]]:
    """``(window, texts to save by key)``: tool outputs beyond the last ``keep`` leave the window.

    Each keeps its message (every tool call keeps its answer) with a note saying how
    to read it back. Texts that are kept already (an excerpt's original, a
    ``read_output`` page) are not saved again.
    """
    result = list(window)
    indices = [i for i, m in enumerate(result) if isinstance(m, ToolMessage)]
    saved: dict[str, str] = {}
    for index in indices[: max(len(indices) - keep, 0)]:
        message = result[index]
        if is_dropped(message) or message.name == ASK_USER:  # the user's answers stay in view
            continue
        text = message_text(message)
        ident = kept_id(message)
        page = PAGE_RE.match(text) if ident else None
        if page:
            how = f'read it again with read_output(output_id="{ident}", offset={page.group(2)})'
        elif ident:
            how = f'read it with read_output(output_id="{ident}")'
        elif message.name == READ_OUTPUT and message.status == "error":
            result[index] = mark_kept(message, f"[{READ_OUTPUT} error removed from context]", READ_OUTPUT)
            continue
        else:
            key = unique_key(message_key(message), lambda k: taken(k) or k in saved)
            ident, saved[key] = output_id(task_id, key), text
            how = f'read it with read_output(output_id="{ident}")'
        result[index] = mark_kept(message, DROPPED.format(id=ident, keep=keep, how=how), ident)
    return result, saved


def window_outputs(window: Sequence[AnyMessage], taken: Callable[[str], bool] = lambda key: False) -> dict[str, str]:
    """Text of every tool output in a window that is not kept already, by a key not ``taken``."""
    return marked_outputs("", window, taken)[1]


def marked_outputs(
    task_id: str, window: Sequence[AnyMessage], taken: Callable[[str], bool] = lambda key: False
) -> tuple[list[AnyMessage], dict[str, str]]:
    """``(window, texts by key)``: every tool output of ``window`` not kept already, by a key not ``taken``, and
    the window with each of them marked as kept under its output id (its text unchanged), so that a window carried
    on never keeps them again."""
    outputs: dict[str, str] = {}
    marked = []
    for m in window:
        if isinstance(m, ToolMessage) and not kept_id(m) and (text := message_text(m)):
            key = unique_key(message_key(m), lambda k: taken(k) or k in outputs)
            outputs[key] = text
            metadata = {**(m.response_metadata or {}), KEPT: output_id(task_id, key)}
            m = m.model_copy(update={"response_metadata": metadata})
        marked.append(m)
    return marked, outputs


def is_taken(task: Mapping[str, Any]) -> Callable[[str], bool]:
    """Whether a key already holds kept text of ``task``."""
    workspace = current_workspace()
    return lambda key: workspace.has(output_slot(task, key))


def failed(task: Mapping[str, Any], error: str, model_calls: int, **extra: Any) -> StateUpdate:
    """State update for a failed subtask; the router then hands it to the replanner.

    A partial ``result`` in ``extra`` is kept in the workspace like any result.
    """
    task_id = task["id"]
    request = extra.pop("replan_request", None) or {"trigger": "failure", "reason": error}
    partial = extra.pop("result", None)
    change = {"status": "failed", "error": error, "model_calls": model_calls, "replan_request": request, **extra}
    fields, entries = result_fields(task, partial) if partial else ({}, {})
    change.update(fields)
    ending = {"tasks": {task_id: change}, "windows": {task_id: None}}
    logger.warning("%s failed after %d model calls: %s", task_label(task), model_calls, error)
    return {**ending, **entries, EVENTS: [event(STEP_FAILED, task_id=task_id, error=error)]}


def completed(task: Mapping[str, Any], result: str, model_calls: int | None = None, **payload: Any) -> StateUpdate:
    """State update for a completed subtask; its result is kept in the workspace."""
    fields, entries = result_fields(task, result)
    change: dict[str, Any] = {"status": "completed", **fields, "error": None}
    if model_calls is not None:
        change["model_calls"] = model_calls
    done = event(STEP_COMPLETED, task_id=task["id"], result_preview=preview(result, 200), **payload)
    calls = task.get("model_calls", 0) if model_calls is None else model_calls
    logger.info("%s completed after %d model calls (%d characters)", task_label(task), calls, len(result))
    return {"tasks": {task["id"]: change}, "windows": {task["id"]: None}, **entries, EVENTS: [done]}


def combined_ending(task_id: str, endings: Sequence[StateUpdate], flags: Sequence[str]) -> StateUpdate:
    """One update from the updates that ended a subtask in one turn (a hand-off, a replan request,
    a tool's own), in call order, plus ``flags``: problems the replanner should see.

    The last one that completes the subtask wins (a hand-off: its result and follow-ups), else the last;
    the others add their follow-ups, and their replan reasons join ``flags`` in the winner's
    ``replan_request``. Only the winner's events go out (one completion, one list of added tasks)."""

    def own(update: StateUpdate) -> Mapping[str, Any]:
        return (update.get("tasks") or {}).get(task_id) or {}

    winner = next((e for e in reversed(endings) if own(e).get("status") == "completed"), endings[-1])
    losers = [e for e in endings if e is not winner]
    others = [{"tasks": {k: v for k, v in (e.get("tasks") or {}).items() if k != task_id}} for e in losers]
    update = merge_updates([*others, winner])
    requests = [r for r in (own(winner).get("replan_request"), *(own(e).get("replan_request") for e in losers)) if r]
    reasons = [*(r["reason"] for r in requests), *flags]
    if reasons:
        trigger = requests[0]["trigger"] if requests else "failure"
        change = {**own(winner), "replan_request": {"trigger": trigger, "reason": "; ".join(dict.fromkeys(reasons))}}
        update.setdefault("tasks", {})[task_id] = change
    return update


def announced(events: list[dict[str, Any]], update: StateUpdate) -> StateUpdate:
    """``update`` with ``events`` sent before its own."""
    return {**update, EVENTS: [*events, *(update.get(EVENTS) or [])]} if events else update


def merge_updates(updates: list[StateUpdate]) -> StateUpdate:
    """One state update from several (parallel subtasks joined in one node, or one subtask's steps in
    order): a later change to a task's field wins; workspace entries and events are joined in order;
    no empty writes."""
    merged: dict = {"tasks": {}, "windows": {}, WORKSPACE: {}, EVENTS: []}
    for update in updates:
        for task_id, change in (update.get("tasks") or {}).items():
            before = merged["tasks"].get(task_id)
            both = isinstance(before, dict) and isinstance(change, dict)
            merged["tasks"][task_id] = {**before, **change} if both else change  # a removal or RESET as it is
        merged["windows"].update(update.get("windows") or {})
        merged[WORKSPACE] = merge_workspace(merged[WORKSPACE], [update.get(WORKSPACE)])
        merged[EVENTS] += update.get(EVENTS) or []
    return {key: value for key, value in merged.items() if value}


def keep_window(task: Mapping[str, Any], window: Any) -> tuple[str, dict[str, Any]]:
    """``(note for the error, update part)`` keeping what a subtask whose window goes had seen and
    written (its tool outputs, and its window's transcript as ``window-at-failure``) in the workspace."""
    window = list(window or [])
    if len(window) <= 2:  # only the opening: nothing seen or written yet
        return "", {}
    taken = is_taken(task)
    outputs = window_outputs(window, taken)
    key = unique_key("window-at-failure", lambda k: taken(k) or k in outputs)
    outputs[key] = transcript(window)
    return f" (its window is kept as output {output_id(task['id'], key)})", keep_outputs(task, outputs)


def window_reads(task: Mapping[str, Any], window: Any) -> list[Read]:
    """The outputs of its own tools a subtask's window holds (`replangraph.context.carried.reads_in`), an
    output the window dropped read back from the workspace; of a window carried over from a stopped subtask, only
    the part that is the subtask's own (`own_part`: the rest is in the stopped subtask's result)."""
    prefix = f"{task['id']}/"
    workspace = current_workspace()

    def kept_text(ident: str) -> str | None:
        return workspace.get(output_slot(task, ident.removeprefix(prefix))) if ident.startswith(prefix) else None

    return reads_in(own_part(task["id"], list(window or [])), kept_text)


def result_with_reads(task: Mapping[str, Any], window: Any, text: str) -> str:
    """``text`` (an answer, a summary, a partial result), followed by the outputs the subtask's window holds
    whose data it does not show (`with_reads`): what the agent read reaches its result."""
    reads = window_reads(task, window)
    return with_reads(text, reads) if reads else text


def completed_with_window(
    task: Mapping[str, Any], window: Any, result: str, model_calls: int | None = None, **payload: Any
) -> StateUpdate:
    """`completed`, keeping the tool outputs still in the subtask's window that are not kept already; the result
    carries the outputs whose data the answer does not show (`result_with_reads`)."""
    kept = keep_outputs(task, window_outputs(list(window or []), is_taken(task)))
    result = result_with_reads(task, window, result)
    update = merge_updates([kept, completed(task, result, model_calls, **payload)])
    return with_read_digests(update, task, window)


def failed_with_window(task: Mapping[str, Any], window: Any, error: str, model_calls: int, **extra: Any) -> StateUpdate:
    """`failed`, keeping what the subtask had seen and written (see `keep_window`); the error says where. Its
    partial result carries the outputs it read (`result_with_reads`), so what it found reaches the replanner, the
    tasks that take its work over and the final answer."""
    note, kept = keep_window(task, window)
    partial = result_with_reads(task, window, extra.pop("result", None) or "")
    if partial:
        extra["result"] = partial
    return with_read_digests(merge_updates([kept, failed(task, error + note, model_calls, **extra)]), task, window)


def with_read_digests(update: StateUpdate, task: Mapping[str, Any], window: Any) -> StateUpdate:
    """``update`` (one that ends ``task``) with the digests of what its agent's own tools returned
    (`read_digests`), when they returned anything: its follow-ups' progress is told from them."""
    made = read_digests(window_reads(task, window))
    if made and task["id"] in (update.get("tasks") or {}):
        update["tasks"][task["id"]]["read_digests"] = made
    return update


def ending_result(update: StateUpdate, task: Mapping[str, Any]) -> str | None:
    """The whole result an update that ends ``task`` keeps (None: it keeps none)."""
    step, rest = result_slot(task)
    entry = ((update.get(WORKSPACE) or {}).get(step) or {}).get(rest)
    own = (update.get("tasks") or {}).get(task["id"]) or {}
    return str(entry["content"]) if entry and "content" in entry else own.get("result")


def earlier_reads(ending: StateUpdate, task: Mapping[str, Any], window: Any, more: str) -> str:
    """``more`` (what a turn that ended its subtask adds to its result), followed by the outputs of the turns
    before it whose data neither the result the ending keeps nor ``more`` shows (`with_reads`)."""
    reads = window_reads(task, window)
    said = "\n\n".join(part for part in (ending_result(ending, task) or "", more) if part) if reads else ""
    missing = uncarried(said, reads) if reads else []
    if not missing:
        return more
    return "\n\n".join(part for part in (more, with_reads("", missing)) if part)


# --------------------------------------------------------------------------- finding kept text

LABEL_MAX = 200
"""Longest label `thread_label` returns whole; a longer one is cut and ends in a hash of the whole."""


def thread_label(thread: str) -> str:
    """``thread`` as one store-namespace label and file name: ``%``, ``.``, ``/``, ``\\``, ``~``, control
    characters and NUL percent-encoded (``a.b`` → ``a%2Eb``), so it is never ``.`` or ``..``, holds no period
    (LangGraph's stores refuse them) and two ids never share a label; one over `LABEL_MAX` characters (after encoding)
    is cut and ends in ``~`` and 16 hex digits of its SHA-256."""
    label = "".join(f"%{ord(c):02X}" if c in "%./\\~" or ord(c) < 32 or ord(c) == 127 else c for c in thread)
    if len(label) > LABEL_MAX or len(label.encode("utf-8")) > LABEL_MAX:
        digest = hashlib.sha256(thread.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        label = label.encode("utf-8")[: LABEL_MAX - 17].decode("utf-8", "ignore") + "~" + digest
    return label or "%"


def run_namespace(thread: str | None = None) -> tuple[str, ...]:
    """The store namespace of the run on ``thread`` (default: the run going on):
    ``("replangraph", thread_label(thread))``, ``("replangraph", "default")`` without a thread id."""
    thread = thread if thread is not None else thread_id()
    return ("replangraph", thread_label(thread) if thread is not None else "default")


def run_label() -> str | None:
    """The label of the run going on: its thread's (`thread_label`), else ``~run-<its run key>`` (a run
    without a thread id), else None (outside a graph run). A thread label never starts with ``~`` (it
    percent-encodes it), so no thread id can name the label of a run without one."""
    thread = thread_id()
    if thread is not None:
        return thread_label(thread)
    key = current_workspace().run_key
    return f"{UNTHREADED}run-{key}" if key else None


UNTHREADED = "~"
"""How the labels of what has no thread start (a run without a thread id, calls outside any run): a thread's
label never does, since `thread_label` percent-encodes ``~``."""


def saved_text(task: Mapping[str, Any], key: str) -> str | None:
    """Text kept for ``task`` under ``key``."""
    return current_workspace().get(output_slot(task, key))


def read_saved(ident: str, tasks: Mapping[str, Mapping[str, Any]], goal: str, current: str) -> str | None:
    """The full text behind an output id; ids without a task part are looked up in ``current``'s outputs."""
    ident = ident.strip().strip("'\"` ")
    if ident == GOAL_ID:
        return goal
    if ident == PLAN_ID:
        return plan_summary(tasks)
    if ident == RESULTS_ID:
        return all_results(tasks)
    for index in reversed([i for i, c in enumerate(ident) if c == "/"]):  # task ids may hold a slash too
        task_id, key = ident[:index], ident[index + 1 :]
        if task_id in tasks:
            found = full_result(tasks[task_id]) if key == RESULT_KEY else saved_text(tasks[task_id], key)
            if found is not None:
                return found
    report, _, key = ident.partition("/")
    if report.startswith(REPORT_PREFIX) and key:  # a list the fallback report kept
        found = saved_text({"id": report, "plan_id": report.removeprefix(REPORT_PREFIX)}, key)
        if found is not None:
            return found
    return saved_text(tasks[current], ident) if current in tasks else None


def saved_keys(tasks: Mapping[str, Mapping[str, Any]], task_id: str, limit: int = 20) -> list[str]:
    """Output ids a subtask can read: its own kept outputs, then ``goal``."""
    keys = current_workspace().keys(tasks[task_id], limit) if task_id in tasks else []
    return [output_id(task_id, key) for key in keys] + [GOAL_ID]


def output_keys(workspace: Workspace, task: Mapping[str, Any], limit: int = 20) -> list[str]:
    """Keys of a subtask's kept outputs in ``workspace`` (the part after ``output:``), oldest first, the last
    ``limit`` (`Workspace.keys`)."""
    step = step_key(task)
    prefix = step + ":output:"
    if workspace.store is not None:
        items = workspace.store.search(workspace.namespace, filter={"step": step}, limit=10_000)
        oldest_first = sorted((i for i in items if i.key.startswith(prefix)), key=lambda i: i.created_at)
        rests = [i.key[len(step) :] for i in oldest_first]
    else:
        rests = [*workspace.entries.get(step, {})]
    rests += workspace.pending.get(step, {})
    found = [r.removeprefix(":output:") for r in dict.fromkeys(rests) if r.startswith(":output:")]
    return found[-limit:]
