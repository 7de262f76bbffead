"""What each model's endpoint told about itself, shared by every `ContextMonitor` of a compiled graph: one
`Learned` per model (`LearnedByModel`, keyed by `model_key`), and the window a model's profile names
(`model_context_window`). Used when monitors are made (the graph is built, a monitor for another model); a
monitor's counts then read its `Learned` entry. No LangGraph here."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from replangraph.llm.calls import endpoint_url

if TYPE_CHECKING:
    from replangraph.context.fitting import Learned


def model_context_window(model: Any) -> int | None:
    """``max_input_tokens`` from a chat model's profile, if it has one."""
    profile = getattr(model, "profile", None) or {}
    value = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    return int(value) if value else None


def model_key(model: Any) -> tuple:
    """Which model an entry of `LearnedByModel` describes: its class, base URL and model name when it has a
    name, else the object itself (``id``)."""
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    if not isinstance(name, str) or not name:
        return ("object", id(model))
    url = endpoint_url(model) or str(getattr(model, "base_url", None) or "")
    return (type(model).__name__, url, name)


class LearnedByModel:
    """One `Learned` per model (`model_key`), for every monitor of a compiled graph.

    An entry describes a model's server, not anyone's data, so the graph's threads and runs share it: an
    overflow in one run narrows that model's window for the next. A model never sees another's entry."""

    def __init__(self) -> None:
        self.entries: dict[tuple, Learned] = {}
        self.lock = threading.Lock()

    def of(self, model: Any) -> Learned:
        """``model``'s entry, made on first use."""
        from replangraph.context.fitting import Learned  # fitting imports this module

        with self.lock:
            return self.entries.setdefault(model_key(model), Learned())
