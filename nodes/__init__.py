"""The graph's nodes: the engine's (planning, execution, compression, finalize) and the features.

`FEATURES` registers the features, in order; the builder merges what each declares before it compiles
(`replangraph.features`). Removing a feature is deleting its folder and its line here.
"""

FEATURES = (
    # Teams first: its task rules claim a team's subtask before the completion check or the executor could.
    "teams",
    # The completion check before human in the loop: an answer waits for its check before anything else.
    "verification",
    "human",
    # The fallback after the others: it looks at what a replanning round left, once every rule has run.
    "fallback",
    "budget",
    "deadline",
    "cost_report",
)
"""Feature folders under ``nodes/``, in the order their rules and hooks run. Each has a ``feature.py`` with
``feature(build)`` (`replangraph.features.Build` -> `Feature` or None) and may have a ``settings.py`` whose
``Settings`` model adds fields to `replangraph.AgentConfig` (imported by the engine, so it imports pydantic only)."""
