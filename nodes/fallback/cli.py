"""The single-agent fallback on the command line: a replanning round's line says when it queued the fallback."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def describe(event: Mapping[str, Any], line: str | None) -> str | None:
    if event["event"] == "replanning" and line and event.get("fallback_task_id"):
        return f"{line}; single-agent fallback {event['fallback_task_id']} queued"
    return None
