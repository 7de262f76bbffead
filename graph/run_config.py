"""What a node reads of the run it is in: the run's settings (the graph's `AgentConfig` overlaid by the run's
context, through LangGraph's public runtime API: `Configured`, `run_settings`) and whether it can pause
(`has_checkpointer`)."""

from __future__ import annotations

import contextvars
import dataclasses
import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from langgraph.config import get_config
from langgraph.runtime import get_runtime
from pydantic import BaseModel, ValidationError

from replangraph.config import AgentConfig
from replangraph.hosting import RUN_CAN_PAUSE
from replangraph.langgraph_private import CONFIG_KEY_CHECKPOINTER

SETTING_NAMES = frozenset(AgentConfig.model_fields)


def run_context() -> Any:
    """The ``context`` of the run in progress (LangGraph's public ``get_runtime()``), or None."""
    try:
        return getattr(get_runtime(), "context", None)
    except (RuntimeError, KeyError):  # no run, or a runnable's config outside a graph (a tool invoked alone)
        return None


def context_settings(context: Any) -> dict[str, Any]:
    """The settings a run's context sets: the fields set on an `AgentConfig`, or the keys (attributes of a
    dataclass) named like its fields, so a parent graph's own context schema may carry them too."""
    if context is None:
        return {}
    if isinstance(context, AgentConfig):
        return {name: getattr(context, name) for name in context.model_fields_set}
    if isinstance(context, Mapping):
        return {name: context[name] for name in SETTING_NAMES.intersection(context)}
    if dataclasses.is_dataclass(context):
        return {f.name: getattr(context, f.name) for f in dataclasses.fields(context) if f.name in SETTING_NAMES}
    if isinstance(context, BaseModel):
        return {name: getattr(context, name) for name in SETTING_NAMES.intersection(context.model_fields_set)}
    return {}


_RESOLVED: contextvars.ContextVar[dict[int, tuple[AgentConfig, Any, AgentConfig]] | None] = contextvars.ContextVar(
    "replangraph_resolved_settings", default=None
)
"""The settings `run_settings` resolved in the node call in progress, by ``id(base)``: ``(base, the run config's
configurable it was resolved under, the settings)`` (`settings_resolved_once`)."""


@contextmanager
def settings_resolved_once() -> Iterator[None]:
    """Within it, `run_settings` resolves each base once per run config. A node's call runs under one run
    config and one context, and its helpers read the settings dozens of times per model turn; `collect_writes`
    and the routers enter this around every node call and decision (a fresh scope each time). A run started
    inside the call (a graph used as a tool) has a run config of its own, so it resolves its own settings."""
    token = _RESOLVED.set({})
    try:
        yield
    finally:
        _RESOLVED.reset(token)


def run_settings(base: AgentConfig) -> AgentConfig:
    """The settings of the run in progress: ``base`` (the graph's), overlaid with the run config's
    ``configurable`` keys that name `AgentConfig` fields, then with the fields its ``context`` sets.
    ``base`` outside a run. Invalid values raise ValueError naming them."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a run
        return base
    resolved = _RESOLVED.get()
    if resolved is None:
        return _resolve_settings(base, configurable)
    known = resolved.get(id(base))
    if known is None or known[0] is not base or known[1] is not configurable:
        known = resolved[id(base)] = (base, configurable, _resolve_settings(base, configurable))
    return known[2]


def _resolve_settings(base: AgentConfig, configurable: Mapping[str, Any]) -> AgentConfig:
    overrides = {name: configurable[name] for name in SETTING_NAMES.intersection(configurable)}
    overrides.update(context_settings(run_context()))
    if not overrides:
        return base
    items = tuple(sorted(overrides.items()))
    try:
        return _overlaid(base, items)
    except TypeError:  # an unhashable value: validate it without the cache
        return _overlaid.__wrapped__(base, items)


@functools.lru_cache(maxsize=128)
def _overlaid(base: AgentConfig, overrides: tuple[tuple[str, Any], ...]) -> AgentConfig:
    if all(getattr(base, name) == value for name, value in overrides):
        return base
    try:
        return AgentConfig(**{**base.model_dump(), **dict(overrides)})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"invalid run settings (context or configurable): {problems}") from None


def has_checkpointer() -> bool:
    """Whether the run in progress can pause: it has a checkpointer (its own, its parent graph's, or the
    one ``langgraph dev`` gives it at run time), or the host that runs the node says it keeps paused runs
    itself (`replangraph.hosting.RUN_CAN_PAUSE` in the run's metadata).

    LangGraph 1.2 has no public way to ask: ``Runtime`` holds no checkpointer (``execution_info.thread_id``
    is only the config's), and ``interrupt()`` without one raises nothing; the run just ends with
    ``__interrupt__``. So this reads the private config key, here only; a ``Runtime.checkpointer`` (or
    an error from ``interrupt()``) would replace it. Outside a run (a wrapper called alone) nothing says it
    cannot: True.
    """
    try:
        config = get_config()
    except RuntimeError:
        return True
    if (config.get("metadata") or {}).get(RUN_CAN_PAUSE):
        return True
    return (config.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER) is not None


class Configured:
    """A node or helper built with the graph's `AgentConfig` (``base_config``) whose ``config`` is the
    settings of the run in progress (`run_settings`), so a run's context reaches every limit it reads."""

    base_config: AgentConfig

    @property
    def config(self) -> AgentConfig:
        return run_settings(self.base_config)
