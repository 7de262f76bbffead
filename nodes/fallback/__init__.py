"""The single-agent fallback: one agent tries to finish the goal alone when replanning ends."""
