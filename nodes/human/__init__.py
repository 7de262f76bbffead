"""Human in the loop: ask_user questions, plan review, slash commands."""

from replangraph.nodes.human.hooks import RESUME, unfinished
from replangraph.nodes.human.interrupts import slash_command

__all__ = ["RESUME", "slash_command", "unfinished"]
