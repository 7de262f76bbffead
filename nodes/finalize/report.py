"""The fallback report: a final answer built from the queue alone, without a model."""

from __future__ import annotations

from collections.abc import Mapping

from replangraph.context.kept import full_result, thread_id
from replangraph.queue.tasks import Task, fallback_of, is_fallback, plan_tasks, preview

CUT_MARK = " (its answer stopped at the model's output limit, max_output_tokens)"
KEPT_HINT = (
    "- What a failed subtask had seen and written is kept under the output id its Why names: read it with "
    "`replangraph output --thread {thread} OUTPUT_ID` (or a run's read_output tool)."
)
FALLBACK_LABEL = "one agent's attempt to finish the goal alone (the single-agent fallback)"
"""How the report names the fallback task (its content is the whole brief the agent got)."""


def fallback_report(goal: str, tasks: Mapping[str, Task], reason: str) -> str:
    """Three sections: what was completed, what was not finished and why, suggested next steps.

    When the single-agent fallback finished, its answer comes first, in a section of its own; the
    sections after it still list what the plan did not finish and why.
    """
    solo = fallback_of(tasks)
    answered = solo is not None and solo["status"] == "completed"
    queue = plan_tasks(tasks)  # a team's members and the work they hold: its task stands for them
    done = [t for t in queue if t["status"] == "completed"]
    open_ = [t for t in queue if t["status"] != "completed"]
    lines = [f"The run for this goal stopped before it was finished: {reason}"]
    if answered:
        lines[0] += (
            ". One agent then took the goal over alone (the single-agent fallback): its answer comes first, "
            "then what the plan finished and what it did not."
        )
    lines += [f"Goal: {goal}", ""]
    if answered:
        lines += ["## Answer of the single-agent fallback", full_result(solo) or "", ""]
    lines.append("## Completed")
    lines.extend(
        f"- {t['id']}: {t['content']}{CUT_MARK * bool(t.get('answer_cut'))}\n  Result: {full_result(t)}" for t in done
    )
    if not done:
        lines.append("- nothing was completed")
    lines += ["", "## Not finished"]
    unfinished = open_ + ([solo] if solo is not None and not answered else [])
    for t in unfinished:
        lines.append(f"- {t['id']} ({t['status']}): {FALLBACK_LABEL if is_fallback(t) else t['content']}")
        if t.get("error"):
            why, kept, where = t["error"].partition(" (its window is kept as output ")
            lines.append(f"  Why: {preview(why, 300)}{kept}{where}")
        if t.get("result"):
            lines.append(f"  Partial result: {full_result(t)}")
    if not unfinished:
        lines.append("- every subtask was completed")
    lines += ["", "## Suggested next steps"]
    failed = [t for t in open_ if t["status"] == "failed"]
    if failed:
        lines.extend(f"- Fix the cause of {t['id']} failing, then run it again." for t in failed)
    waiting = [t for t in open_ if t["status"] in ("pending", "in_progress", "skipped")]
    if waiting:
        ids = ", ".join(t["id"] for t in waiting)
        lines.append(f"- Run the unfinished subtasks ({ids}), e.g. as a new goal that includes the results above.")
    if any("is kept as output" in (t.get("error") or "") for t in unfinished):
        lines.append(KEPT_HINT.format(thread=thread_id() or "THREAD"))
    if "max_" in reason:
        lines.append("- A limit stopped the run: raise it in AgentConfig (max_steps, max_tasks, max_replans).")
    return "\n".join(lines)
