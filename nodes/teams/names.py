"""The teams' node names."""

TEAM = "team"
TEAM_MERGE = "team_merge"

# Events it emits (`replangraph.events.EVENT_NAMES` lists them with the engine's)
TEAM_MERGED = "team_merged"
EVENTS = (TEAM_MERGED,)

EXPORTS = {"Team": "replangraph.nodes.teams.teams"}
"""What the feature exports at the top level (``from replangraph import Team``): name -> its module."""
