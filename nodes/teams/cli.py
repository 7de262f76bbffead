"""Teams on the command line: how a team's merge prints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replangraph.nodes.teams.names import TEAM_MERGED
from replangraph.queue import preview

EVENT_SAMPLES = {
    TEAM_MERGED: {
        "task_id": "a",
        "strategy": "best",
        "winner": "careful",
        "reason": "complete",
        "candidates": [{"agent_type": "careful", "error": None}, {"agent_type": "fast", "error": "boom"}],
    },
}


def describe(event: Mapping[str, Any], line: str | None) -> str | None:
    if event["event"] != TEAM_MERGED:
        return None
    kept = f"kept {event['winner']}" if event.get("winner") else "fused"
    if not any(c.get("error") is None for c in event.get("candidates") or ()):
        kept = "every member failed"
    return f"{event['task_id']} team {event['strategy']}: {kept} ({preview(event.get('reason'), 80)})"
