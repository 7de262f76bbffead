"""Teams as one `Feature`: the team start and merge nodes, their routing rules, each team as an agent type
for planning (with the tools every member has) and the judge models.

A graph without a `Team` among ``build_graph(agents=...)`` (or in ``teams=...``) has no teams: `feature` returns
None and imports nothing else of this folder.
"""

from __future__ import annotations

from replangraph.features import Build, Feature


def feature(build: Build) -> Feature | None:
    """The teams ``build.options["teams"]`` names, and those among ``build_graph``'s ``agents`` (judged by the
    planner's model unless a team names its own), or None without teams."""
    teams = dict(build.options.get("teams") or {})
    others = build.options.get("agents") or {}
    if not teams and not others:
        return None
    # Imported here: a graph without teams loads nothing of this folder but this module.
    from replangraph.nodes.teams.teams import Team
    from replangraph.nodes.teams.wiring import teams_feature

    teams.update({name: agent for name, agent in others.items() if isinstance(agent, Team)})
    if not teams:
        return None

    judge = build.planner_model or build.model
    return teams_feature(
        teams,
        build.profiles,
        model=build.model,
        judge=judge,
        config=build.config,
        monitor=build.monitor,
        check_model=build.check_model,
    )
