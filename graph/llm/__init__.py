"""Talking to models: the call path (retries, time limits, overflow), lenient readers, message helpers."""
