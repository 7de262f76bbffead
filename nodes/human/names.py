"""Human in the loop's node names."""

ASK = "ask"
PLAN_REVIEW = "plan_review"
COMMANDS = "commands"

# Events it emits (`replangraph.state.EVENT_NAMES` lists them with the engine's)
PLAN_REVIEWED = "plan_reviewed"
QUESTION_ANSWERED = "question_answered"
COMMAND_ANSWERED = "command_answered"
EVENTS = (PLAN_REVIEWED, QUESTION_ANSWERED, COMMAND_ANSWERED)
