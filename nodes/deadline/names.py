"""The deadline's event."""

DEADLINE_PASSED = "deadline_passed"
"""Emitted by the finalizer when the deadline stopped the run: ``deadline_s``, ``overrun_s`` and a ``message``."""
EVENTS = (DEADLINE_PASSED,)
