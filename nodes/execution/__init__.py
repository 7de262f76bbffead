"""Execution: one model turn of a subtask (executor) and its tool calls (tools node)."""
