"""The teams' routing rules: a ready team subtask goes to the team node, which queues its members; once
they have all ended (or the step budget is spent and one completed), the merge node keeps one result.
The members count against ``max_concurrency``, the team subtask itself does not."""

from __future__ import annotations

from collections.abc import Mapping

from langgraph.types import Send

from replangraph.nodes.teams.names import TEAM, TEAM_MERGE
from replangraph.nodes.teams.teams import Team, mergeable, settled
from replangraph.queue.tasks import Task, spent_model_calls
from replangraph.routing import HOLD, Decision, Dispatch, Route, Rule, TaskRule


def team_rules(teams: Mapping[str, Team]) -> tuple[list[Rule], list[TaskRule]]:
    """``(rules ahead of the step budget's, task rules of the dispatch step)`` for ``teams``."""

    def merge_on_spent_budget(route: Route) -> Decision | None:
        """With the budget spent, a team whose members ended (or one completed) merges first, at no cost."""
        if spent_model_calls(route.state) < route.settings.max_steps:
            return None
        due = any(t["agent_type"] in teams and mergeable(route.tasks, t, budget_spent=True) for t in route.active)
        return TEAM_MERGE if due else None

    def members_ended(route: Route, task: Task) -> str | None:
        """A running team subtask waits for its members; one merge node merges every team whose members ended."""
        if task["agent_type"] not in teams:
            return None
        return TEAM_MERGE if settled(route.tasks, task) else HOLD

    def start_team(route: Route, task: Task, dispatch: Dispatch) -> Send | None:
        """A ready team subtask goes to the team node, which queues its members (they count against
        ``max_tasks`` for the next team started in the same superstep)."""
        if task["agent_type"] not in teams:
            return None
        payload = {"task_id": task["id"], "task": task, "queue_size": dispatch.queue_size}
        dispatch.queue_size += len(teams[task["agent_type"]].members)
        return Send(TEAM, payload)

    return (
        [Rule("merge_on_spent_budget", "teams", merge_on_spent_budget, "budget")],
        [TaskRule("team_members", "teams", running=members_ended, ready=start_team, holds_slot=False)],
    )
