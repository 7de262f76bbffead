"""Talking to models: the call path (retries, time limits, overflow), lenient readers of what models send, message helpers."""
