"""The subtask queue, pure (no LangGraph): tasks and their rendering, the incremental index, plans and splits."""
