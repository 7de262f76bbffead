"""The single-agent fallback as one `Feature`: after a replanning round that leaves the goal without a
way on, one agent gets the goal, the completed results and what failed, and tries to finish alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from replangraph.config import AgentConfig
from replangraph.features import Feature
from replangraph.nodes.fallback.fallback import fallback_task
from replangraph.queue.tasks import Task, apply_writes, fallback_of, spent_model_calls


def feature(build: Any) -> Feature:
    """The fallback (it needs nothing the graph is built with)."""
    return fallback_feature()


def fallback_feature() -> Feature:
    """The fallback adds no node: its task is an ordinary subtask the executor runs, queued by the
    replanner's round (`queue_fallback`) when ``single_agent_fallback`` is on."""
    return Feature("fallback", after_replan=queue_fallback)


def queue_fallback(
    state: Mapping[str, Any],
    tasks: Mapping[str, Task],
    updates: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    unanswered: bool,
    settings: AgentConfig,
) -> tuple[Task | None, list[str]]:
    """``(the single-agent fallback task this round writes or None, notes for the round's record)``.

    Queued when the round left the goal without a way on (``gave_up`` or ``limit``), the run is
    not cancelled, and there is room: steps left in ``max_steps``, a place in ``max_tasks``. A
    fallback still pending is written again every round (what finished, failed or was queued
    since changes what it waits for and is told), under the same id. Once it has started there
    is never another, so a run resumed from a checkpoint never queues a second one.
    """
    if unanswered:  # the model is down: one more agent would only fail the same way
        return None, ["no single-agent fallback: the model did not answer"]
    before = fallback_of(tasks)
    if before is not None and before["status"] != "pending":
        return None, []
    if before is None and records[-1]["outcome"] == "replanned":
        return None, []
    left = settings.max_steps - spent_model_calls({**state, "replans": records})
    if not settings.single_agent_fallback or state.get("cancelled") or left <= 0:
        return None, []
    view = apply_writes(tasks, [updates])
    if before is None and len(view) >= settings.max_tasks:
        return None, []
    if any(r["outcome"] == "gave_up" for r in records):
        why = "the replanner found no way to continue"
    else:
        why = f"no replans were left: max_replans={settings.max_replans}"
    return fallback_task(view, why, min(left, settings.max_step_iterations), before), []
