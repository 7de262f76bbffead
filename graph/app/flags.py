"""A command-line flag a feature declares in its ``cli.py`` (`replangraph.app.feature_cli`), and how flag values
are read."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def whole_number(text: str) -> int:
    """``text`` as an int; else the error argparse shows after the flag's name."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    """A flag's value that must be a whole number of at least 1 (``--max-steps``, ``--concurrency``)."""
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """A flag's value that must be a whole number of 0 or more (``--max-clarifications``)."""
    value = whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_number(text: str) -> float:
    """A flag's value that must be a number above 0 (``--deadline``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text}")
    return value


@dataclass(frozen=True)
class Flag:
    """A flag that sets one `replangraph.AgentConfig` field (``field``). ``value``: how its text is read (None:
    a switch, ``--name`` on; ``--no-name`` turns it off on ``resume``, and on ``run`` too when ``negatable``).
    ``default``: what the help says the default is ("": the field's own default)."""

    option: str
    field: str
    help: str
    default: str = ""
    value: Callable[[str], Any] | None = None
    metavar: str | None = None
    negatable: bool = False

    @property
    def default_text(self) -> str:
        """The default the help names: ``default``, else the field's (``on``/``off``, ``none``, the number)."""
        if self.default:
            return self.default
        from replangraph.config import AgentConfig

        value = AgentConfig.model_fields[self.field].default
        if isinstance(value, bool):
            return "on" if value else "off"
        return "none" if value is None else f"{value:,}" if isinstance(value, int) else str(value)

    @property
    def dest(self) -> str:
        """The name the command's settings keep it under (``--approve-plan``: ``approve_plan``)."""
        return self.option.removeprefix("--").replace("-", "_")
