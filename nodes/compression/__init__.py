"""Compression: folds a subtask's older messages into a summary so the next request fits."""
