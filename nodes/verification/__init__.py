"""The completion check (``verify_results``): judges each answer and queues what is missing."""

from replangraph.nodes.verification.names import (  # its events, for the CLI and your own stream readers
    CHECK_STOOD_DOWN,
    GOAL_CHECKED,
    STEP_VERIFIED,
)

__all__ = ["STEP_VERIFIED", "CHECK_STOOD_DOWN", "GOAL_CHECKED"]
