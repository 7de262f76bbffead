"""Teams: agent types whose subtasks several members run, one result kept (best, vote, fusion)."""

from replangraph.nodes.teams.names import TEAM_MERGED  # its events, for the CLI and your own stream readers

__all__ = ["TEAM_MERGED"]
