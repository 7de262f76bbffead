"""A node whose work is written once, as steps, for both paths: `StepsNode.steps` yields its model calls;
``__call__`` makes them (``invoke``), ``acall`` awaits them (``ainvoke``, ``astream``, a LangGraph server), and
both apply the update's effects (`replangraph.context.workspace.collect_writes`)."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from replangraph.context.workspace import collect_writes
from replangraph.llm.aio import arun_steps
from replangraph.llm.calls import run_steps
from replangraph.run_config import Configured
from replangraph.state import StateUpdate


class StepsNode(Configured):
    """The planner, the replanner, the finalizer and a team's merge: nodes that read the state and make their
    model calls as steps."""

    def steps(self, state: Mapping[str, Any], awaited: bool = False) -> Generator[Any, Any, StateUpdate]:
        """The node's update, its model calls made (or awaited when ``awaited``) as steps."""
        raise NotImplementedError

    @collect_writes
    def __call__(self, state: Mapping[str, Any]) -> StateUpdate:
        return run_steps(self.steps(state))

    @collect_writes
    async def acall(self, state: Mapping[str, Any]) -> StateUpdate:
        """`__call__` on the async path: the model calls are awaited."""
        return await arun_steps(self.steps(state, awaited=True))
