"""Tools the graph gives to executing agents."""

from .replan_toolkit import REVIEW_TOOL, SPLIT_TOOL, ReplanSession, replan_toolkit

__all__ = ["REVIEW_TOOL", "SPLIT_TOOL", "ReplanSession", "replan_toolkit"]
