"""The graph's node names, in one place."""

PLANNER = "planner"
EXECUTOR = "executor"
TOOLS = "tools"
COMPRESSOR = "compressor"
VERIFIER = "verifier"
REPLANNER = "replanner"
FINALIZE = "finalize"

ROUTED_TO = [EXECUTOR, COMPRESSOR, VERIFIER, REPLANNER, FINALIZE]
"""Where the router may send the run."""
