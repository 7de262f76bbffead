"""The results workspace: subtask results and text kept out of windows, outside the hot queue.

Entries live in the graph's LangGraph store when it has one (``InMemoryStore``,
``SqliteStore``, ``PostgresStore``, the store ``langgraph dev`` provides), under
the run's namespace ``("replangraph", thread_id)`` and keys
``plan:{plan_id}:step:{step_id}:result`` (the latest version; each version also
under ``…:result:v{n}``) and ``plan:{plan_id}:step:{step_id}:output:{key}``.
Without a store they live in the state's ``workspace`` channel, checkpointed as
writes (each text once), so they are exactly as durable as the checkpointer.

Nodes read the workspace through `current_workspace()`. Writes are effects: an update
carries the entries to write under its ``workspace`` key (`entry_update`), and
`collect_writes` applies them when the node returns: to the store when there is
one, else as the channel's writes.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from langgraph.config import get_config, get_store
from langgraph.types import Command

from replangraph.state import EVENTS, emit, held_events, merge_workspace

WORKSPACE = "workspace"
"""The state channel holding the entries of a run without a store:
``{"plan:1:step:3": {":result": entry, ":result:v1": entry, ":output:call_7": entry}}``."""


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


def run_namespace() -> tuple[str, ...]:
    """The store namespace of this run: ``("replangraph", thread_id)``."""
    try:
        thread = str(get_config().get("configurable", {}).get("thread_id") or "default")
    except RuntimeError:
        thread = "default"
    return ("replangraph", thread)


def graph_store() -> Any:
    """The graph's store, or None (no store, or not inside a graph run)."""
    try:
        return get_store()
    except (RuntimeError, KeyError):  # KeyError: inside a runnable (a tool call) but not a graph run
        return None


class Workspace:
    """Reads entries in the store, or in the ``workspace`` channel (``entries``), and the entries the node
    is about to write (``pending``, see `reading_pending`). A node that got a ``Send`` payload sees only
    the keys it was given. Writing is `apply_effects`'s job."""

    def __init__(
        self, entries: Mapping[str, Mapping[str, Any]] | None = None, store: Any = None, pending: Mapping | None = None
    ):
        self.store = store
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
        step = step_key(task)
        prefix = step + ":output:"
        if self.store is not None:
            items = self.store.search(self.namespace, filter={"step": step}, limit=10_000)
            ordered = sorted((i for i in items if i.key.startswith(prefix)), key=lambda i: i.created_at)
            rests = [i.key[len(step) :] for i in ordered]
        else:
            rests = [*self.entries.get(step, {})]
        rests += self.pending.get(step, {})
        found = [r.removeprefix(":output:") for r in dict.fromkeys(rests) if r.startswith(":output:")]
        return found[-limit:]

    def with_pending(self, update: Mapping[str, Any]) -> Workspace:
        """This workspace, also reading the entries ``update`` will write (nothing is written)."""
        return Workspace(self.entries, self.store, merge_workspace(self.pending, [update.get(WORKSPACE)]))


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


def open_workspace(entries: Mapping[str, Any] | None) -> contextlib.AbstractContextManager[Workspace]:
    """Make a workspace over ``entries`` (and the graph's store) current for the calls inside the block."""
    return using(Workspace(entries, graph_store()))


@contextmanager
def reading_pending(update: Mapping[str, Any]) -> Iterator[Workspace]:
    """Let reads inside the block see the entries ``update`` will write, as a node that reads what it keeps."""
    with using(current_workspace().with_pending(update)) as view:
        yield view


def apply_effects(update: Any, store: Any) -> Any:
    """``update`` (a dict or a ``Command``) with its effects applied: its ``workspace`` entries go to
    ``store`` (without one they stay, as the channel's writes), then its ``events`` are emitted, in
    order. Returns the update without what it applied."""
    inner = update.update if isinstance(update, Command) else update
    pairs = list(inner.items()) if isinstance(inner, Mapping) else list(inner or ())
    entries = merge_workspace({}, [v for k, v in pairs if k == WORKSPACE])
    events = [e for k, v in pairs if k == EVENTS for e in v or ()]
    rest = [(k, v) for k, v in pairs if k not in (WORKSPACE, EVENTS)]
    if store is not None:
        namespace = run_namespace()
        for step, slots in entries.items():
            for rest_key, entry in slots.items():
                store.put(namespace, step + rest_key, entry)
    elif entries:
        rest.append((WORKSPACE, entries))
    for event in events:
        emit(**event)
    if not isinstance(update, Command):
        return dict(rest) if update is not None or rest else update
    return dataclasses.replace(update, update=dict(rest) if isinstance(inner, Mapping) or inner is None else rest)


def collect_writes(node: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a node (a function or a node class's ``__call__``) or an error handler so that its
    update's effects are applied when it returns normally (`apply_effects`): its input's entries are
    readable, its workspace writes reach the store or the state, its events go out.

    A context variable carries the workspace to the readers deep in a node's call
    (as LangGraph's own ``get_store`` does) instead of threading it through every
    function; the wrapper keeps the node's signature for LangGraph. Events a node
    emits directly are held too (`held_events`): a crash sends none of them.
    """

    @functools.wraps(node)
    def run(*args: Any, **kwargs: Any) -> Any:
        state = next((a for a in args if isinstance(a, Mapping)), None)  # after ``self`` for a method
        with open_workspace(state.get(WORKSPACE) if state is not None else None) as workspace, held_events():
            return apply_effects(node(*args, **kwargs), workspace.store)

    return run
