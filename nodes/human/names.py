"""Human in the loop's node names."""

ASK = "ask"
PLAN_REVIEW = "plan_review"
COMMANDS = "commands"

COMMAND_PATTERN = r"^/([A-Za-z][\w-]*)(?:\s+(.*))?$"
"""A slash command: ``/name`` and its argument text (a path such as ``/home/me/data.csv`` is not one)."""

# Events it emits (`replangraph.events.EVENT_NAMES` lists them with the engine's)
PLAN_REVIEWED = "plan_reviewed"
QUESTION_ANSWERED = "question_answered"
COMMAND_ANSWERED = "command_answered"
EVENTS = (PLAN_REVIEWED, QUESTION_ANSWERED, COMMAND_ANSWERED)
