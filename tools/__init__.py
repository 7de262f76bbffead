"""Tools the graph gives to executing agents, and tools you may give them (`workspace_tools`)."""

from .replan_toolkit import REQUEST_REPLAN_TOOL, REVIEW_TOOL, SPLIT_TOOL, ReplanSession, replan_toolkit
from .workspace_files import resolve_inside, workspace_tools

__all__ = [
    "REQUEST_REPLAN_TOOL",
    "REVIEW_TOOL",
    "SPLIT_TOOL",
    "ReplanSession",
    "replan_toolkit",
    "resolve_inside",
    "workspace_tools",
]
