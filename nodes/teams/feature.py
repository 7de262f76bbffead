"""Teams as one unit: what a graph with teams adds, assembled from this folder (`teams_feature`).

The builder asks for it only when ``build_graph(teams=...)`` names teams, so a graph without teams never
imports this folder: its nodes (the team start and the merge), its routing rules, the agent types it
adds to planning (each team, with the tools every member has) and the judge models it checks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from replangraph.config import AgentConfig, AgentProfile
from replangraph.context.monitor import ContextMonitor
from replangraph.names import TEAM, TEAM_MERGE
from replangraph.nodes.teams.merge import TeamMerge
from replangraph.nodes.teams.routing import team_rules
from replangraph.nodes.teams.start import TeamStart
from replangraph.nodes.teams.teams import Team, check_teams, team_description
from replangraph.routing import Rule, TaskRule


@dataclass
class TeamsFeature:
    """What teams add to a graph."""

    teams: dict[str, Team]
    """The teams, checked."""
    planning_types: dict[str, AgentProfile]
    """Each team as the planner sees an agent type."""
    models: dict[str, Any]
    """The judge models, by the name a warning uses."""
    nodes: dict[str, Callable[..., Any]] = field(default_factory=dict)
    """Node name -> node; each joins parallel branches at the tools node, like a model turn."""
    rules: list[Rule] = field(default_factory=list)
    """Rules ahead of the step budget's."""
    task_rules: list[TaskRule] = field(default_factory=list)
    """Rules of the dispatch step, ahead of the others."""


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
) -> TeamsFeature:
    """The teams' nodes, rules and agent types; ``judge`` is the default judge model (the planner's)."""
    checked = check_teams(teams, list(profiles))
    for name, team in checked.items():
        if team.judge_model is not None and team.judge_model is not False:
            check_model(team.judge_model, f"teams[{name!r}].judge_model")
    judges = {n: judge if t.judge_model is None else t.judge_model for n, t in checked.items()}
    voters = {n: p.model or model for n, p in profiles.items()}
    rules, task_rules = team_rules(checked)
    return TeamsFeature(
        teams=checked,
        planning_types=team_profiles(checked, profiles),
        models={f"teams[{n!r}].judge_model": t.judge_model or None for n, t in checked.items()},
        nodes={TEAM: TeamStart(checked, config), TEAM_MERGE: TeamMerge(checked, judges, voters, config, monitor)},
        rules=rules,
        task_rules=task_rules,
    )
