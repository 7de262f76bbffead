"""Human in the loop's node names."""

ASK = "ask"
PLAN_REVIEW = "plan_review"
COMMANDS = "commands"
