"""What the features add to the command line, read from their folders: the app names no feature.

A feature folder may hold a ``cli.py`` (imported only by the app, so it imports little: its ``names.py``,
`replangraph.app.flags`, `replangraph.queue`) with any of:

- ``FLAGS``: `replangraph.app.flags.Flag` s that set its settings on ``run`` and ``resume`` (and go with a
  Temporal run);
- ``describe(event, line) -> str | None``: the line the plain output prints for an event: its own events
  (``line`` is None), or an engine event it adds to (``line`` is the engine's); None leaves the line as it is;
- ``QUEUE_EVENTS``: its events that change the queue (the live view redraws);
- ``EVENT_SAMPLES``: an example payload of each event it emits (``--json`` shows events as they are);
- ``PAUSES``: a `PauseView`, how the terminal shows the run's pauses of its own (its ``interrupt()`` values) and
  reads answers to them; ``REPLY_EVENTS``: its events that answer a slash command sent as input (``reply``).

`feature_clis` reads them for each registered feature (`replangraph.nodes.FEATURES`), in order.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import replangraph.nodes as nodes
from replangraph.app.flags import Flag

Describe = Callable[[Mapping[str, Any], "str | None"], "str | None"]


class PauseView(Protocol):
    """How the terminal shows a feature's pauses and reads answers to them. Each method answers for the
    interrupt values (or typed answers) that are the feature's, and None (False) for the others."""

    answer_help: str
    """What ``resume --answer`` takes for the feature's pauses (the flag's help)."""

    def order(self, value: Any) -> tuple | None:
        """Where a pause stands among those waiting (listed and answered in this order)."""

    def key(self, value: Any) -> Any | None:
        """What the pause asks, stable when the run asks it again (an interrupt's id is not)."""

    def lines(self, value: Any) -> list[str] | None:
        """What the pause asks, for the terminal."""

    def hint(self, value: Any) -> str | None:
        """The prompt's hint of what an answer may be."""

    def waiting_note(self, values: Sequence[Any]) -> str | None:
        """A line after the list of what waits, or None."""

    def cancels(self, answer: str) -> bool:
        """Whether the typed answer cancels the run at once, however many pauses wait."""

    def command(self, answer: str) -> str | None:
        """The answer when it is a command that goes in as new input (a slash command), else None."""


@dataclass(frozen=True)
class FeatureCli:
    """What one feature adds to the command line (see the module's docstring)."""

    name: str
    flags: tuple[Flag, ...] = ()
    describe: Describe | None = None
    queue_events: frozenset[str] = frozenset()
    event_samples: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    pauses: PauseView | None = None
    reply_events: frozenset[str] = frozenset()


@functools.cache
def feature_clis() -> tuple[FeatureCli, ...]:
    """Each registered feature's ``cli.py``, read once, in registered order (features without one add nothing)."""
    folder = Path(nodes.__file__).parent
    found = []
    for name in nodes.FEATURES:
        if not (folder / name / "cli.py").is_file():
            continue
        module = importlib.import_module(f"{nodes.__name__}.{name}.cli")
        found.append(
            FeatureCli(
                name,
                tuple(getattr(module, "FLAGS", ())),
                getattr(module, "describe", None),
                frozenset(getattr(module, "QUEUE_EVENTS", ())),
                dict(getattr(module, "EVENT_SAMPLES", {})),
                getattr(module, "PAUSES", None),
                frozenset(getattr(module, "REPLY_EVENTS", ())),
            )
        )
    return tuple(found)


def feature_flags() -> tuple[Flag, ...]:
    """Every registered feature's flags, in order."""
    return tuple(flag for cli in feature_clis() for flag in cli.flags)


def reply_events() -> frozenset[str]:
    """The events that answer a slash command sent as input."""
    return frozenset(name for cli in feature_clis() for name in cli.reply_events)


def add_feature_flags(parser: argparse.ArgumentParser, default: Callable[[str], str], resume: bool) -> None:
    """The features' flags on ``parser`` (``run``'s or ``resume``'s); ``default`` words the default's help."""
    for flag in feature_flags():
        shown = f"{flag.help} (default: {default(flag.default_text)})"
        if flag.value is None:
            action: Any = argparse.BooleanOptionalAction if resume or flag.negatable else "store_true"
            parser.add_argument(flag.option, action=action, default=None, help=shown)
        else:
            parser.add_argument(flag.option, type=flag.value, default=None, metavar=flag.metavar, help=shown)


# --------------------------------------------------------------------------- pauses, through the features' views


def pause_views() -> list[PauseView]:
    return [cli.pauses for cli in feature_clis() if cli.pauses is not None]


def first(ask: Callable[[PauseView], Any]) -> Any:
    """What the first view that answers (not None) says, else None."""
    return next((said for view in pause_views() if (said := ask(view)) is not None), None)


def pause_order(value: Any) -> tuple:
    """Where a pause stands: by its feature's order, a pause no feature orders last."""
    found = first(lambda view: view.order(value))
    return (0, found) if found is not None else (1, ())


def pause_key(value: Any) -> Any | None:
    return first(lambda view: view.key(value))


def pause_lines(value: Any) -> list[str]:
    """What one pause asks, for the terminal (a pause no feature shows: its value)."""
    found = first(lambda view: view.lines(value))
    if found is not None:
        return found
    if isinstance(value, Mapping):
        return [f"The run asks: {json.dumps(dict(value), default=str)}"]
    return [f"The run asks: {value}"]


def pause_hint(value: Any) -> str:
    return first(lambda view: view.hint(value)) or "your answer"


def waiting_notes(values: Sequence[Any]) -> list[str]:
    return [note for view in pause_views() if (note := view.waiting_note(values))]


def cancels(answer: str) -> bool:
    return any(view.cancels(answer) for view in pause_views())


def command_in(answer: str) -> str | None:
    return first(lambda view: view.command(answer))


def answer_help() -> str:
    """What ``--answer`` takes, as the features' views word it."""
    return "; ".join(view.answer_help for view in pause_views() if view.answer_help)
