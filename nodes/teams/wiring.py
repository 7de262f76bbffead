"""The teams' nodes, rules and agent types, built from the graph's (`replangraph.nodes.teams.feature`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from replangraph.config import AgentConfig, AgentProfile
from replangraph.context.window_monitor import ContextMonitor
from replangraph.features import Feature, FeatureNode
from replangraph.nodes.teams.merge import TeamMerge
from replangraph.nodes.teams.names import TEAM, TEAM_MERGE
from replangraph.nodes.teams.routing import team_rules
from replangraph.nodes.teams.start import TeamStart
from replangraph.nodes.teams.state import TeamTask
from replangraph.nodes.teams.teams import Team, check_teams, team_description


def team_profiles(teams: Mapping[str, Team], profiles: Mapping[str, AgentProfile]) -> dict[str, AgentProfile]:
    """Each team as the planner sees an agent type: its description, and the tools every member has."""
    shown = {}
    for name, team in teams.items():
        names = [{t.name for t in profiles[m].tools} for m in team.members]
        common = tuple(t for t in profiles[team.members[0]].tools if all(t.name in n for n in names))
        shown[name] = AgentProfile(tools=common, description=team_description(team))
    return shown


def teams_feature(
    teams: Mapping[str, Team],
    profiles: Mapping[str, AgentProfile],
    *,
    model: Any,
    judge: Any,
    config: AgentConfig,
    monitor: ContextMonitor,
    check_model: Callable[[Any, str], None],
) -> Feature:
    """The teams' nodes, rules and agent types; ``judge`` is the default judge model (the planner's)."""
    checked = check_teams(teams, list(profiles))
    for name, team in checked.items():
        if team.judge_model is not None and team.judge_model is not False:
            check_model(team.judge_model, f"teams[{name!r}].judge_model")
    judges = {n: judge if t.judge_model is None else t.judge_model for n, t in checked.items()}
    voters = {n: p.model or model for n, p in profiles.items()}
    rules, task_rules = team_rules(checked)
    return Feature(
        "teams",
        nodes={
            TEAM: FeatureNode(TeamStart(checked, config), after_plan=True),  # queues the members
            TEAM_MERGE: FeatureNode(TeamMerge(checked, judges, voters, config, monitor)),  # keeps one result
        },
        rules=rules,
        task_rules=task_rules,
        planning_types=team_profiles(checked, profiles),
        models={f"teams[{n!r}].judge_model": t.judge_model or None for n, t in checked.items()},
        task_fields=TeamTask,
    )
