"""The results workspace: where subtask results and text cut from windows are kept, and how nodes write to it.

Entries live in the graph's LangGraph store when it has one (``InMemoryStore``, ``SqliteStore``, ``PostgresStore``,
the store ``langgraph dev`` provides), under the run's namespace ``("replangraph", thread_label(thread_id))`` and keys
``plan:{plan_id}:step:{step_id}:result`` (the latest version; each version also under ``…:result:v{n}``) and
``plan:{plan_id}:step:{step_id}:output:{key}``. Without a store they live in the state's ``workspace`` channel,
checkpointed as writes (each text once), so they are exactly as durable as the checkpointer. A run without a thread
id keeps them in that channel too, store or not, so two such runs on one store never read each other's entries.
Nodes read it through `current_workspace()`.

**Writes are effects.** Update builders are pure: an update carries the ``workspace`` entries to write and the
``events`` to emit, and the node's `collect_writes` applies them when it returns (to the store in one batch,
awaited on the async path, when there is one, else as the channel's writes). Called outside a graph run they write
and send nothing. On the async path the reads run off the event loop (`replangraph.llm.aio`)."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from langgraph.config import get_config, get_store
from langgraph.store.base import PutOp
from langgraph.types import Command

from replangraph.events import EVENTS, emit, held_events
from replangraph.run_config import settings_resolved_once
from replangraph.state import merge_workspace

RUN_KEY = "run_key"
"""The state channel holding the run's own key (`replangraph.state.RunKey`)."""


WORKSPACE = "workspace"
"""The state channel holding the entries of a run without a store:
``{"plan:1:step:3": {":result": entry, ":result:v1": entry, ":output:call_7": entry}}``."""


Slot = tuple[str, str]
"""``(step key, rest)``: an entry's place; its store key is the two joined."""


def step_key(task: Mapping[str, Any]) -> str:
    """``plan:{plan_id}:step:{step_id}``: the prefix of a subtask's entries."""
    return f"plan:{task.get('plan_id') or '1'}:step:{task['id']}"


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
