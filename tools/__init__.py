"""Tools the graph gives to executing agents, and tools you may give them (`workspace_tools`)."""

from replangraph.tools.files.workspace_files import resolve_inside, workspace_tools
from replangraph.tools.replan_toolkit.toolkit import (
    REQUEST_REPLAN_TOOL,
    REVIEW_TOOL,
    SPLIT_TOOL,
    ReplanSession,
    replan_toolkit,
)

__all__ = [
    "REQUEST_REPLAN_TOOL",
    "REVIEW_TOOL",
    "SPLIT_TOOL",
    "ReplanSession",
    "replan_toolkit",
    "resolve_inside",
    "workspace_tools",
]
