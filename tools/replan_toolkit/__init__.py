"""The replan toolkit: the running agent sees the plan, hands off the rest, or asks for a replan."""
