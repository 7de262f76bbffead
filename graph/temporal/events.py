"""A run's stream on Temporal: custom events and ``updates`` chunks, published to the workflow's stream topic.

What reaches the topic, in the order the workflow logs it (one global log, offsets from 0):

- ``{"mode": "custom", "key": KEY, "chunk": event}``: an event a node wrote with ``get_stream_writer()``
  (`replangraph.events.emit`). A node that runs as an activity publishes through the plugin's stream client, at
  least once per activity attempt: a retried activity publishes its events again. ``KEY`` is
  ``"<workflow run id>/<activity id>/<n>"`` (the n-th event of that activity; the ids stay the same across its
  attempts, and the run id tells a continuation's activities from the first run's), so a
  reader keeps the first of each key (`StreamReader`). A node in the workflow publishes exactly once: no key.
- ``{"mode": "updates", "chunk": {node: update}}``: what each node wrote, as ``stream_mode="updates"`` gives it
  in-process, ``{"__interrupt__": (...)}`` when the run pauses; the workflow publishes these itself.
- ``{"mode": "values", "chunk": view}``: the state (`state_view`: without its large keys) each time the graph stops:
  it pauses (after its interrupts, once the run's ``pending`` shows them), it was stopped for new input, or it
  ended. Published by the workflow, once per stop.

- ``{"mode": "paused", "chunk": reason}``: the run paused for a model server that stopped answering; it waits for
  ``/resume`` (`replangraph.temporal.workflow`). `replangraph.temporal.remote.TemporalRun` raises `ModelServerDown`.

Everything published is plain JSON first (`plain`): what the data converter cannot write crosses as its ``str``
(as ``--json`` writes it), so an odd value in an event never fails the activity or the workflow that publishes it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables.config import var_child_runnable_config
from langgraph.types import Interrupt

from replangraph.langgraph_private import CONFIG_KEY_RUNTIME
from replangraph.temporal.converter import plain

TOPIC = "replangraph"
"""The stream topic of a run (the plugin's ``streaming_topic``): events and updates, in one log."""
INTERRUPT = "__interrupt__"
LEFT_OUT_OF_VIEW = frozenset({"messages", "windows", "workspace"})
"""The state's keys `state_view` leaves out: the conversation, the subtasks' windows and the kept outputs."""


class KeyedWriter:
    """A stream writer that publishes each value as a custom chunk with a key (``prefix/n``, n counting from 0),
    or without one when ``prefix`` is None. With ``loop`` it may be called from any thread: each value is handed
    to ``loop`` in the order of the calls (the plugin's stream client is not thread-safe)."""

    def __init__(self, publish: Callable[[Any], None], prefix: str | None, loop: asyncio.AbstractEventLoop | None):
        self.publish, self.prefix, self.loop = publish, prefix, loop
        self.count = itertools.count()
        self.lock = threading.Lock()

    def __call__(self, value: Any) -> None:
        with self.lock:  # the key and the hand-over in one order
            key = None if self.prefix is None else f"{self.prefix}/{next(self.count)}"
            envelope = {"mode": "custom", "key": key, "chunk": plain(value)}
            if self.loop is None:
                self.publish(envelope)
            else:
                self.loop.call_soon_threadsafe(self.publish, envelope)


@contextmanager
def keyed_events(prefix: str | None, loop: asyncio.AbstractEventLoop | None = None) -> Iterator[None]:
    """Inside the block, ``get_stream_writer()`` publishes through a `KeyedWriter` around the run's writer (the
    plugin's topic): ``prefix`` names the activity (None in the workflow); ``loop``: the activity's event loop,
    when nodes may write from threads. Outside a run, or without a writer, nothing changes."""
    config = var_child_runnable_config.get() or {}
    configurable = config.get("configurable") or {}
    runtime = configurable.get(CONFIG_KEY_RUNTIME)
    if runtime is None or getattr(runtime, "stream_writer", None) is None:
        yield
        return
    keyed = dataclasses.replace(runtime, stream_writer=KeyedWriter(runtime.stream_writer, prefix, loop))
    token = var_child_runnable_config.set({**config, "configurable": {**configurable, CONFIG_KEY_RUNTIME: keyed}})
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def updates_item(chunk: Any) -> dict[str, Any]:
    """What the workflow publishes for one ``updates`` chunk."""
    return {"mode": "updates", "chunk": plain(chunk)}


def state_view(values: Mapping[str, Any]) -> dict[str, Any]:
    """What a client shows of a run's state (the goal, the queue, steps spent, the final answer, how it ended): the
    state without the keys that grow with the run's text (`LEFT_OUT_OF_VIEW`), as plain JSON."""
    view = plain({key: value for key, value in values.items() if key not in LEFT_OUT_OF_VIEW})
    return view if isinstance(view, dict) else {}  # a key JSON cannot hold: nothing to show rather than text


def values_item(values: Any) -> dict[str, Any]:
    """What the workflow publishes each time the graph stops: the state's view (`state_view`)."""
    return {"mode": "values", "chunk": state_view(values)}


PAUSED = "paused"
"""The stream item mode of a run that paused for a model server that stopped answering (the reason its chunk)."""


def paused_item(reason: str) -> dict[str, Any]:
    """What the workflow publishes when the run pauses for a model server that stopped answering."""
    return {"mode": PAUSED, "chunk": reason}


def custom_item(chunk: Any) -> dict[str, Any]:
    """What the workflow publishes for a custom chunk that reached its own stream (a workflow-side node that
    wrote to the writer in the config it was given, not the plugin's): exactly once, no key."""
    return {"mode": "custom", "key": None, "chunk": plain(chunk)}


class StreamReader:
    """Turns the topic's items into ``(mode, chunk)`` pairs as ``astream(stream_mode=["updates", "custom",
    "values"])`` yields them in-process (``values`` only when the graph stops, as `state_view`): a custom chunk
    whose key was seen is dropped (a retried activity's events), and a pause's interrupts come back as LangGraph's
    ``Interrupt``. Keys are remembered for the reader's life."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def read(self, item: Any) -> tuple[str, Any] | None:
        """The pair for one item, or None for a repeat."""
        if not isinstance(item, dict) or item.get("mode") not in ("custom", "updates", "values", PAUSED):
            return ("custom", item)  # written to the topic by something else: passed on as it is
        mode, chunk = item["mode"], item.get("chunk")
        if mode in ("values", PAUSED):
            return mode, chunk
        if mode == "custom":
            key = item.get("key")
            if key is not None:
                if key in self.seen:
                    return None
                self.seen.add(key)
            return mode, chunk
        if isinstance(chunk, dict) and isinstance(chunk.get(INTERRUPT), list):
            chunk = {**chunk, INTERRUPT: tuple(revived_interrupt(i) for i in chunk[INTERRUPT])}
        return mode, chunk


INTERRUPT_FIELDS = frozenset(f.name for f in dataclasses.fields(Interrupt))


def revived_interrupt(item: Any) -> Any:
    """An ``Interrupt`` from what crossed (its fields: ``value``, ``id``, and ``response_schema`` when it is a
    JSON schema; a class crossed as its name and is left out); anything else as it is."""
    if not isinstance(item, dict) or not {"value", "id"} <= set(item) <= INTERRUPT_FIELDS:
        return item
    schema = item.get("response_schema")
    return Interrupt(value=item["value"], id=item["id"], response_schema=schema if isinstance(schema, dict) else None)
