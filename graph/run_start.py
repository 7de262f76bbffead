"""The run-start node: where every input to the graph goes first, before it is planned or routed, so that the
features' run-start hooks (`replangraph.features.Feature.on_run_start`) see it. A resumed pause does not pass
here: LangGraph goes on in the node that paused."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from replangraph.clock import run_time
from replangraph.config import AgentConfig
from replangraph.features import RunStart
from replangraph.names import PLANNER
from replangraph.run_config import Configured, settings_resolved_once


class RunStarter(Configured):
    """Runs the features' run-start hooks in order; their writes are the node's update, each hook given the
    state as the ones before it left it. ``start``: where the run goes next (`replangraph.routing.start_router`),
    which says whether the input starts a new goal (it goes to the planner)."""

    effects_in_tasks = True
    """It calls nothing outside the state: a host may run it where the state is (`replangraph.hosting`)."""

    def __init__(
        self,
        config: AgentConfig,
        hooks: Sequence[Callable[[Any], Mapping[str, Any] | None]],
        start: Callable[[Mapping[str, Any]], Any],
    ):
        self.base_config = config
        self.hooks = list(hooks)
        self.start = start

    def __call__(self, state: Mapping[str, Any]) -> dict[str, Any]:
        with settings_resolved_once():
            settings = self.config
            new_goal = self.start(state) == PLANNER
            now = run_time()
            writes: dict[str, Any] = {}
            for hook in self.hooks:
                written = hook(RunStart({**state, **writes}, settings, new_goal, now)) or {}
                writes.update(written)
        return writes
