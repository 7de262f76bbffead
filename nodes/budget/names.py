"""The budget's event."""

BUDGET_SPENT = "budget_spent"
"""Emitted by the finalizer when the budget stopped the run: ``limits``, ``spent`` and a ``message``."""
EVENTS = (BUDGET_SPENT,)
