"""Tools the graph gives to executing agents."""

from .replan_toolkit import REQUEST_REPLAN_TOOL, REVIEW_TOOL, SPLIT_TOOL, ReplanSession, replan_toolkit

__all__ = ["REQUEST_REPLAN_TOOL", "REVIEW_TOOL", "SPLIT_TOOL", "ReplanSession", "replan_toolkit"]
