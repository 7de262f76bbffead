"""Planning: the planner and replanner nodes, the Plan schema and the rule-based fallback plan."""
