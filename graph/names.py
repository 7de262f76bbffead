"""The engine's node names and the names of the tools every executing agent gets (a feature names its own nodes)."""

REPLAN_MARKER = "[REPLAN]"


RUN_START = "run_start"
"""Where every input goes first while a feature has a run-start hook (`replangraph.run_start`)."""
PLANNER = "planner"
EXECUTOR = "executor"
TOOLS = "tools"
COMPRESSOR = "compressor"
REPLANNER = "replanner"
FINALIZE = "finalize"

# Tools every executing agent gets (naming one in a plan's ``required_tools`` asks for nothing)
REVIEW_TOOL = "replan_review_context"
SPLIT_TOOL = "replan_split_and_handoff"
REQUEST_REPLAN_TOOL = "request_replan"
TOOLKIT_NAMES = (REVIEW_TOOL, SPLIT_TOOL, REQUEST_REPLAN_TOOL)
READ_OUTPUT = "read_output"
ASK_USER = "ask_user"
BUILT_IN_TOOLS = (*TOOLKIT_NAMES, READ_OUTPUT, ASK_USER)
