"""Human in the loop: ask_user questions, plan review, slash commands."""

from __future__ import annotations

from typing import Any

from replangraph.nodes.human.names import (  # its events, for the CLI and your own stream readers
    COMMAND_ANSWERED,
    PLAN_REVIEWED,
    QUESTION_ANSWERED,
)

__all__ = ["COMMAND_ANSWERED", "PLAN_REVIEWED", "QUESTION_ANSWERED", "RESUME", "slash_command", "unfinished"]


def __getattr__(name: str) -> Any:
    # Loaded when first used: `replangraph.config` imports this folder's settings, before the rest can load.
    if name in ("RESUME", "unfinished"):
        from replangraph.nodes.human import hooks

        return getattr(hooks, name)
    if name == "slash_command":
        from replangraph.nodes.human.interrupts import slash_command

        return slash_command
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
