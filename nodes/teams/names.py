"""The teams' node names."""

TEAM = "team"
TEAM_MERGE = "team_merge"
