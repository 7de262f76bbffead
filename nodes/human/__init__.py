"""Human in the loop: ask_user questions, plan review, slash commands."""

from replangraph.nodes.human.interrupts import slash_command
from replangraph.nodes.human.routing import RESUME, unfinished

__all__ = ["RESUME", "slash_command", "unfinished"]
