"""The graph's node names, in one place."""

PLANNER = "planner"
EXECUTOR = "executor"
TOOLS = "tools"
COMPRESSOR = "compressor"
VERIFIER = "verifier"
REPLANNER = "replanner"
FINALIZE = "finalize"
ASK = "ask"
PLAN_REVIEW = "plan_review"
COMMANDS = "commands"
TEAM = "team"
TEAM_MERGE = "team_merge"

ROUTED_TO = [EXECUTOR, COMPRESSOR, VERIFIER, REPLANNER, ASK, COMMANDS, FINALIZE]
"""Where the router may send the run during a run (after a command it may also go to the plan review;
with teams, to `TEAM` and `TEAM_MERGE` too)."""
