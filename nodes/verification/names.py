"""The completion check's node names."""

VERIFIER = "verifier"
GOAL_CHECK = "goal_check"

# Events it emits (`replangraph.events.EVENT_NAMES` lists them with the engine's)
STEP_VERIFIED = "step_verified"
CHECK_STOOD_DOWN = "check_stood_down"
GOAL_CHECKED = "goal_checked"
EVENTS = (STEP_VERIFIED, CHECK_STOOD_DOWN, GOAL_CHECKED)
