"""The completion check on the command line: ``--verify``, and how its events print."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replangraph.app.flags import Flag
from replangraph.nodes.verification.names import CHECK_STOOD_DOWN, GOAL_CHECKED, STEP_VERIFIED
from replangraph.queue import preview

FLAGS = (
    Flag(
        "--verify",
        "verify_results",
        "check each result and queue what is missing; --no-verify turns it off",
        negatable=True,
    ),
)
QUEUE_EVENTS = (GOAL_CHECKED,)
EVENT_SAMPLES = {
    STEP_VERIFIED: {"task_id": "a", "complete": False, "reason": "ranks 6-19 missing", "follow_up_ids": ["a_dyn_0"]},
    CHECK_STOOD_DOWN: {"task_id": "a_dyn_0", "reason": "its follow-up a_dyn_0 found nothing a had not"},
    GOAL_CHECKED: {"complete": False, "reason": "ranks 20-25 missing", "task_ids": ["goal_check_1"]},
}
ADDED_BY = {"verifier": "{parent_id}: the check added {added}", "goal_check": "the goal check added {added}"}
"""The line of a ``dynamic_tasks_added`` event whose ``source`` is the check."""


def describe(event: Mapping[str, Any], line: str | None) -> str | None:
    name = event["event"]
    if name == STEP_VERIFIED:
        return f"{event['task_id']} checked: {verdict_text(event, 'complete', event.get('follow_up_ids'))}"
    if name == CHECK_STOOD_DOWN:
        return f"{event['task_id']}: the check stood down ({preview(event['reason'], 100)})"
    if name == GOAL_CHECKED:
        return f"goal checked against every result: {verdict_text(event, 'covered', event.get('task_ids'))}"
    if name == "dynamic_tasks_added" and event.get("source") in ADDED_BY:
        added = ", ".join(event["task_ids"])
        return ADDED_BY[event["source"]].format(parent_id=event.get("parent_id"), added=added)
    return None


def verdict_text(event: Mapping[str, Any], complete: str, queued: list[str] | None) -> str:
    """``complete`` or ``incomplete``, then the check's reason, what it queued and why it could not judge."""
    verdict = complete if event["complete"] else "incomplete"
    why = f" ({preview(event['reason'], 70)})" if event.get("reason") else ""
    added = f"; queued {', '.join(queued)}" if queued else ""
    trouble = f"; {preview(event['error'], 80)}" if event.get("error") else ""
    return f"{verdict}{why}{added}{trouble}"
