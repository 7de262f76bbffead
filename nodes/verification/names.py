"""The completion check's node names."""

VERIFIER = "verifier"
GOAL_CHECK = "goal_check"
