"""team node: starts a team subtask by queueing one member task per member (see `replangraph.nodes.teams.teams`)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from replangraph.config import AgentConfig
from replangraph.context.outcomes import failed
from replangraph.context.workspace import collect_writes
from replangraph.events import STEP_STARTED, emit
from replangraph.nodes.teams.teams import Team, start_changes
from replangraph.queue.plans import LimitReached, limit_hit
from replangraph.run_config import Configured
from replangraph.state import StateUpdate


class TeamStart(Configured):
    """Puts the team subtask in the payload in progress and queues its members right after it,
    with its inputs; they run as ordinary subtasks. A queue too full for them fails the subtask.

    Computes only (no model call), so it has no ``acall``: under ``ainvoke`` it runs in replangraph's pool
    (``both_paths``); the thread hop costs tens of microseconds (measured: docs/how-it-works.md)."""

    def __init__(self, teams: Mapping[str, Team], config: AgentConfig):
        self.teams = teams
        self.base_config = config

    @collect_writes
    def __call__(self, payload: Mapping[str, Any]) -> StateUpdate:
        """``payload``: ``task`` (the team subtask) and ``queue_size``, sent by the router."""
        task = payload["task"]
        name = task["agent_type"]
        team = self.teams[name]
        try:
            changes = start_changes(task, name, team, payload.get("queue_size", 0), self.config.max_tasks)
        except LimitReached as exc:
            return failed(task, str(exc), task.get("model_calls", 0), **limit_hit(task, exc))
        changes[task["id"]]["started_at"] = task.get("started_at") or time.time()
        members = [changes[i]["agent_type"] for i in changes if i != task["id"]]
        emit(STEP_STARTED, task_id=task["id"], content=task["content"], agent_type=name, members=members)
        return {"tasks": changes}
