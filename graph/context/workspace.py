"""The results workspace: subtask results and text kept out of windows, outside the hot queue.

Entries live in the graph's LangGraph store when it has one (``InMemoryStore``,
``SqliteStore``, ``PostgresStore``, the store ``langgraph dev`` provides), under
the run's namespace ``("replangraph", thread_id)`` and keys
``plan:{plan_id}:step:{step_id}:result`` (the latest version; each version also
under ``…:result:v{n}``) and ``plan:{plan_id}:step:{step_id}:output:{key}``.
Without a store they live in the state's ``workspace`` channel, checkpointed as
writes (each text once), so they are exactly as durable as the checkpointer.

Nodes reach the workspace through `current_workspace()`; `collect_writes` gathers
what a node put in the channel and adds it to the node's update.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.config import get_config, get_store
from langgraph.types import Command

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


def result_key(task: Mapping[str, Any], version: int | None = None) -> str:
    """Store key of a subtask's result: ``plan:{plan_id}:step:{step_id}:result[:v{n}]``."""
    return "".join(result_slot(task, version))


def output_key(task: Mapping[str, Any], key: str) -> str:
    """Store key of text kept for a subtask: ``plan:{plan_id}:step:{step_id}:output:{key}``."""
    return "".join(output_slot(task, key))


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


def merge_workspace(current: Mapping | None, writes: Sequence[Mapping | None]) -> dict:
    """Reducer of the ``workspace`` channel: adds entries per step; a key written again takes the new entry."""
    merged = dict(current or {})
    for update in writes:
        for step, entries in (update or {}).items():
            merged[step] = {**merged.get(step, {}), **entries}
    return merged


class Workspace:
    """Reads and writes entries in the store, or in the ``workspace`` channel (``entries``, plus what this
    node wrote, in ``written``). A node that got a ``Send`` payload sees only the keys it was given."""

    def __init__(self, entries: Mapping[str, Mapping[str, Any]] | None = None, store: Any = None):
        self.store = store
        self.entries = entries or {}
        self.written: dict[str, dict[str, dict]] = {}
        self.namespace = run_namespace() if store is not None else ()

    def _entry(self, slot: Slot) -> Mapping[str, Any] | None:
        step, rest = slot
        if self.store is not None:
            item = self.store.get(self.namespace, step + rest)
            return item.value if item is not None else None
        found = self.written.get(step, {}).get(rest)
        return found if found is not None else self.entries.get(step, {}).get(rest)

    def get(self, slot: Slot) -> str | None:
        """The text in ``slot``, or None (also for a slot a ``Send`` payload names without its text)."""
        entry = self._entry(slot)
        return None if entry is None or "content" not in entry else str(entry["content"])

    def has(self, slot: Slot) -> bool:
        """Whether ``slot`` holds an entry."""
        return self._entry(slot) is not None

    def put(self, slot: Slot, text: str, **meta: Any) -> None:
        """Keep ``text`` in ``slot`` (with metadata such as the kind and version)."""
        step, rest = slot
        entry = {"content": text, "step": step, **meta}
        if self.store is not None:
            self.store.put(self.namespace, step + rest, entry)
        else:
            self.written.setdefault(step, {})[rest] = entry

    def keys(self, task: Mapping[str, Any], limit: int = 20) -> list[str]:
        """Keys of a subtask's kept outputs (the part after ``output:``), oldest first, the last ``limit``."""
        step = step_key(task)
        prefix = step + ":output:"
        if self.store is not None:
            items = self.store.search(self.namespace, filter={"step": step}, limit=10_000)
            ordered = sorted((i for i in items if i.key.startswith(prefix)), key=lambda i: i.created_at)
            found = [i.key[len(prefix) :] for i in ordered]
        else:
            rests = [*self.entries.get(step, {}), *self.written.get(step, {})]
            found = [r.removeprefix(":output:") for r in dict.fromkeys(rests) if r.startswith(":output:")]
        return found[-limit:]

    def update(self) -> dict:
        """The channel writes to add to the node's update (empty with a store)."""
        return {WORKSPACE: self.written} if self.written else {}


_current: contextvars.ContextVar[Workspace | None] = contextvars.ContextVar("replangraph_workspace", default=None)


def current_workspace() -> Workspace:
    """The workspace of the node running now (a fresh, store-backed or empty one outside `collect_writes`)."""
    found = _current.get()
    return found if found is not None else Workspace(store=graph_store())


@contextmanager
def open_workspace(entries: Mapping[str, Any] | None) -> Iterator[Workspace]:
    """Make a workspace over ``entries`` current for the calls inside the block."""
    workspace = Workspace(entries, graph_store())
    token = _current.set(workspace)
    try:
        yield workspace
    finally:
        _current.reset(token)


def with_writes(update: Any, workspace: Workspace) -> Any:
    """``update`` (a dict or a ``Command``) with the workspace's channel writes added."""
    extra = workspace.update()
    if not extra:
        return update
    if isinstance(update, Command):
        inner = update.update
        merged = [*inner, *extra.items()] if isinstance(inner, list | tuple) else {**(inner or {}), **extra}
        return dataclasses.replace(update, update=merged)
    return {**(update or {}), **extra}


def collect_writes(node: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a node (a function or a node class's ``__call__``) or an error handler so that what it
    puts in the workspace reaches the state: its input's entries are readable, its writes join its update.

    A context variable carries the workspace to the helpers deep in a node's call
    (as LangGraph's own ``get_store`` does) instead of threading it through every
    function; the wrapper keeps the node's signature for LangGraph.
    """

    @functools.wraps(node)
    def run(*args: Any, **kwargs: Any) -> Any:
        state = next((a for a in args if isinstance(a, Mapping)), None)  # after ``self`` for a method
        with open_workspace(state.get(WORKSPACE) if state is not None else None) as workspace:
            return with_writes(node(*args, **kwargs), workspace)

    return run
