"""Teams: agent types whose subtasks several members run, one result kept (best, vote, fusion)."""
