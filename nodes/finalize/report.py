"""The fallback report: a final answer built from the queue alone, without a model.

Its size has a cap whatever the queue holds (`REPORT_LISTED` subtasks a list, `REPORT_RESULTS_CHARS` of
results, `FALLBACK_ANSWER_CHARS` of the fallback's answer): a longer list ends in a line naming the output id
(``report-{plan}/completed``, ``report-{plan}/not-finished``) its whole list is kept under in the results
workspace, and a result that does not fit is an excerpt naming its own output id (``{id}/result``). A report
that shows some result only in part (a list cut, an excerpt) names output ``results``: every result and partial
result, whole, in plan order (`replangraph.context.results.all_results`).

A run that stops unfinished also gets here: `stop_reason` says why (naming any limit that stopped it),
`stop_unfinished` closes what was left, and `failed_answer` is the report when the final answer could not be
written."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from langchain_core.messages import AnyMessage

from replangraph.config import FINALIZE_MARGIN, AgentConfig, recursion_limit
from replangraph.context.compression import SUMMARY_ID_PREFIX, split_window
from replangraph.context.fitting import GOAL_ID, RESULTS_ID, excerpt, fair_shares, output_id, result_id, unique_key
from replangraph.context.outcomes import keep_window, merge_updates, result_with_reads
from replangraph.context.output_ids import saved_text
from replangraph.context.results import full_result, report_task, result_fields
from replangraph.context.window_outputs import is_taken
from replangraph.context.workspace import thread_id
from replangraph.llm.errors import says_server_down
from replangraph.llm.reading import answer_text, ends_with_answer
from replangraph.nodes.finalize.notes import replanned_ids, run_notes
from replangraph.queue.index import index_of
from replangraph.queue.tasks import Task, fallback_of, is_fallback, ordered, plan_tasks, preview
from replangraph.state import StateUpdate

CUT_MARK = " (its answer stopped at the model's output limit, max_output_tokens)"
KEPT_HINT = (
    "- What a failed subtask had seen and written is kept under the output id its Why names: read it with "
    "`replangraph output --thread {thread} OUTPUT_ID` (on Temporal, with --temporal HOST:PORT; or a run's "
    "read_output tool)."
)
FALLBACK_LABEL = "one agent's attempt to finish the goal alone (the single-agent fallback)"
"""How the report names the fallback task (its content is the whole brief the agent got)."""
REPORT_LISTED = 40
"""Most subtasks each list of the report (completed, not finished, next steps) shows one by one."""
REPORT_RESULTS_CHARS = 200_000
"""Most characters the results and partial results the report shows take together: when they are longer,
each gets a fair share (a short one stays whole) and a longer one is an excerpt naming its output id."""
FALLBACK_ANSWER_CHARS = 20_000
"""Longest single-agent fallback answer the report shows whole; a longer one is an excerpt."""
GOAL_CHARS = 2_000
"""Longest goal the report shows whole."""
CONTENT_CHARS = 300
"""Longest subtask content or reason a line of the report shows (a longer one is a one-line preview)."""
REPORT_MAX_CHARS = 300_000
"""About the most characters a report takes, whatever the queue holds (the sum of the limits above)."""
MORE = "- … and {count} more; the whole list is kept as output {ident}"
ALL_RESULTS = (
    "Not every result fits this report whole: every result and partial result, whole, in plan order, is output "
    "{ident} (`replangraph output --thread {thread} {ident}`, on Temporal with --temporal HOST:PORT; or a run's "
    "read_output tool)."
)
FOLDED = "messages its window folded into a summary, whole"
LISTED_CHARS = 200
"""Longest content, reason or result preview of a line in a kept whole list."""


def report_with_lists(goal: str, tasks: Mapping[str, Task], reason: str) -> tuple[str, dict[str, str]]:
    """``(report, whole lists to keep by key of the run's report_task)``: three sections, what was
    completed, what was not finished and why, suggested next steps; lists past `REPORT_LISTED` subtasks
    end in a line naming the output id of the whole list.

    When the single-agent fallback finished, its answer comes first, in a section of its own; the
    sections after it still list what the plan did not finish and why.
    """
    solo = fallback_of(tasks)
    answered = solo is not None and solo["status"] == "completed"
    queue = plan_tasks(tasks)  # a team's members and the work they hold: its task stands for them
    done = [t for t in queue if t["status"] == "completed"]
    open_ = [t for t in queue if t["status"] != "completed"]
    unfinished = open_ + ([solo] if solo is not None and not answered else [])
    report = report_task(tasks)
    taken = is_taken(report)
    long_lists = {
        key: items for key, items in (("completed", done), ("not-finished", unfinished)) if len(items) > REPORT_LISTED
    }
    keys = {name: unique_key(name, taken) for name in long_lists}  # kept text is written once
    kept = {keys[name]: whole_list(items) for name, items in long_lists.items()}
    idents = {name: output_id(report["id"], key) for name, key in keys.items()}
    more = {name: MORE.format(count=len(long_lists[name]) - REPORT_LISTED, ident=idents[name]) for name in keys}
    shown_done, shown_open = done[:REPORT_LISTED], unfinished[:REPORT_LISTED]
    results = [full_result(t) or "" for t in shown_done] + [full_result(t) or "" for t in shown_open if t.get("result")]
    shares = fair_shares([len(r) for r in results], REPORT_RESULTS_CHARS)
    limits = iter(shares)
    lines = [f"The run for this goal stopped before it was finished: {reason}"]
    if answered:
        lines[0] += (
            ". One agent then took the goal over alone (the single-agent fallback): its answer comes first, "
            "then what the plan finished and what it did not."
        )
    lines.append(f"Goal: {excerpt(goal, GOAL_CHARS, GOAL_ID)}")
    cut = long_lists or any(len(r) > share for r, share in zip(results, shares, strict=True))
    if cut or (answered and len(full_result(solo) or "") > FALLBACK_ANSWER_CHARS):
        lines.append(ALL_RESULTS.format(ident=RESULTS_ID, thread=thread_id() or "THREAD"))
    lines.append("")
    if answered:
        answer = excerpt(full_result(solo) or "", FALLBACK_ANSWER_CHARS, result_id(solo["id"]))
        lines += ["## Answer of the single-agent fallback", answer, ""]
    lines.append("## Completed")
    for t in shown_done:
        result = excerpt(full_result(t) or "", next(limits), result_id(t["id"]))
        content = preview(t["content"], CONTENT_CHARS)
        lines.append(f"- {t['id']}: {content}{CUT_MARK * bool(t.get('answer_cut'))}\n  Result: {result}")
    lines += [more["completed"]] if "completed" in more else []
    if not done:
        lines.append("- nothing was completed")
    lines += ["", "## Not finished"]
    for t in shown_open:
        content = FALLBACK_LABEL if is_fallback(t) else preview(t["content"], CONTENT_CHARS)
        lines.append(f"- {t['id']} ({t['status']}): {content}")
        if t.get("error"):
            why, kept_at, where = t["error"].partition(" (its window is kept as output ")
            lines.append(f"  Why: {preview(why, CONTENT_CHARS)}{kept_at}{preview(where, CONTENT_CHARS)}")
        if t.get("result"):
            lines.append(f"  Partial result: {excerpt(full_result(t) or '', next(limits), result_id(t['id']))}")
    lines += [more["not-finished"]] if "not-finished" in more else []
    if not unfinished:
        lines.append("- every subtask was completed")
    lines += ["", "## Suggested next steps", *next_steps(open_, idents.get("not-finished", ""))]
    if any("is kept as output" in (t.get("error") or "") for t in unfinished):
        lines.append(KEPT_HINT.format(thread=thread_id() or "THREAD"))
    if "max_" in reason:
        lines.append("- A limit stopped the run: raise it in AgentConfig (max_steps, max_tasks, max_replans).")
    notes = run_notes(tasks)
    if notes:
        lines += ["", "## Notes", *(f"- {note}" for note in notes[:REPORT_LISTED])]
        lines += [f"- … and {len(notes) - REPORT_LISTED} more"] if len(notes) > REPORT_LISTED else []
    return "\n".join(lines), kept


def next_steps(open_: list[Task], listed_in: str) -> list[str]:
    """The suggested next steps for the subtasks not finished (``listed_in``: the output id of their whole list)."""
    failed = [t for t in open_ if t["status"] == "failed"]
    lines = [f"- Fix the cause of {t['id']} failing, then run it again." for t in failed[:REPORT_LISTED]]
    if len(failed) > REPORT_LISTED:
        lines.append(
            f"- The same for the {len(failed) - REPORT_LISTED} other failed subtasks (listed in output {listed_in})."
        )
    waiting = [t for t in open_ if t["status"] in ("pending", "in_progress", "skipped")]
    if waiting:
        ids = ", ".join(t["id"] for t in waiting[:REPORT_LISTED])
        ids += f" and {len(waiting) - REPORT_LISTED} more" if len(waiting) > REPORT_LISTED else ""
        lines.append(f"- Run the unfinished subtasks ({ids}), e.g. as a new goal that includes the results above.")
    return lines


def whole_list(items: list[Task]) -> str:
    """Every subtask of a report list, one line each: status, content, why, where its whole result is."""
    lines = []
    for t in items:
        line = (
            f"- {t['id']} ({t['status']}): {preview(FALLBACK_LABEL if is_fallback(t) else t['content'], LISTED_CHARS)}"
        )
        if t.get("error"):
            line += f"\n  Why: {preview(t['error'], LISTED_CHARS)}"
        if t.get("result"):
            line += f"\n  Result ({result_id(t['id'])}): {preview(t['result'], LISTED_CHARS)}"
        lines.append(line)
    return "\n".join(lines)


# --------------------------------------------------------------------------- a run that stops unfinished


class ResultsTooBig(ValueError):
    """Even the smallest pieces of the results do not fit a request."""


def stop_unfinished(
    tasks: Mapping[str, Task], reason: str, windows: Mapping[str, list] | None = None, cancelled: bool = False
) -> StateUpdate:
    """The update that closes every task still pending or in progress when the run stops
    (``cancelled``: a running one is ``skipped`` too, not ``failed``).

    Nothing a stopped subtask saw or wrote is dropped: what it read and any answer still waiting for the
    completion check become its partial result (`stopped_result`), and its window is kept (`keep_window`);
    both are workspace entries of the update.
    """
    updates: list[StateUpdate] = []
    windows = windows or {}
    for task in tasks.values():
        if task["status"] == "in_progress":
            window = windows.get(task["id"]) or []
            status = "skipped" if cancelled else "failed"
            change = {"status": status, "error": f"stopped before it finished: {reason}"}
            partial = stopped_result(task, window)
            fields, result = result_fields(task, partial) if partial else ({}, {})
            note, kept = keep_window(task, window)
            change.update(fields, error=change["error"] + note)
            updates.append({"tasks": {task["id"]: change}, **merge_updates([result, kept])})
        elif task["status"] == "pending":
            updates.append(
                {"tasks": {task["id"]: {"status": "skipped", "error": task.get("error") or f"not run: {reason}"}}}
            )
    return merge_updates(updates)


def stopped_result(task: Task, window: Sequence[AnyMessage]) -> str:
    """The partial result of a subtask the run stopped: its answer still waiting for the completion check, if
    any, then the outputs its window holds that the answer does not show (`result_with_reads`; one the window
    dropped is read back), then, when the window was compressed, the messages folded into its summary, whole
    (`folded_messages`). '' when it read and wrote nothing."""
    answer = answer_text(window[-1]) if ends_with_answer(window) else ""
    parts = [result_with_reads(task, window, answer), folded_messages(task, window)]
    return "\n\n".join(part for part in parts if part)


def folded_messages(task: Task, window: Sequence[AnyMessage]) -> str:
    """The messages a compressed window folded into its summary, as kept (``history-1`` … ``history-N``), each
    under its output id; '' for a window never compressed."""
    _, summary, _ = split_window(window)
    if summary is None:
        return ""
    count = int(str(summary.id).removeprefix(SUMMARY_ID_PREFIX) or 1)
    kept = [(output_id(task["id"], f"history-{n}"), saved_text(task, f"history-{n}")) for n in range(1, count + 1)]
    return "\n\n".join(f"[{ident}: {FOLDED}]\n{text}" for ident, text in kept if text)


def failed_answer(goal: str, tasks: Mapping[str, Task], exc: Exception) -> tuple[str, dict[str, str]]:
    """The report (and its whole lists, `report_with_lists`) when the synthesis failed: the results too big, or the
    model down (the queue keeps every result)."""
    if isinstance(exc, ResultsTooBig):
        return report_with_lists(goal, tasks, f"the results do not fit the model's context window ({exc})")
    return report_with_lists(goal, tasks, f"the final model call failed ({type(exc).__name__}: {exc})")


def steps_needed(tasks: Mapping[str, Task], model_calls: int) -> int:
    """A lower bound of the ``max_steps`` the queued work needs: the calls spent plus, for every
    unfinished subtask, the average calls of a finished one (later splits may need more)."""
    done = [t for t in tasks.values() if t["status"] == "completed"]
    per_task = math.ceil(sum(t.get("model_calls", 0) for t in done) / len(done)) if done else 2
    left = [t for t in tasks.values() if t["status"] in ("pending", "in_progress")]
    return model_calls + max(per_task * len(left), 1)


def limit_notes(tasks: Mapping[str, Task], replans: Sequence[Mapping], config: AgentConfig) -> list[str]:
    """``max_tasks=50 refused follow-up tasks; max_tasks=205 would have let them in``, for each limit that did."""
    needed: dict[str, int] = {}
    for task in tasks.values():
        for limit, value in (task.get("limits_hit") or {}).items():
            needed[limit] = max(needed.get(limit, 0), value)
    notes = [
        f"{limit}={getattr(config, limit)} refused follow-up tasks; {limit}={value} would have let them in"
        for limit, value in sorted(needed.items())
    ]
    if any(r.get("outcome") == "limit" for r in replans) and config.max_replans < len(replans):
        notes.append(
            f"max_replans={config.max_replans} stopped further replanning; "
            f"max_replans={len(replans)} would have allowed every request"
        )
    return notes


def stop_reason(
    tasks: Mapping[str, Task],
    replans: Sequence[Mapping],
    model_calls: int,
    config: AgentConfig,
    steps_left: int | None = None,
) -> str:
    """Why the run ends unfinished, naming any limit that stopped it and the value that would have let it finish.

    ``steps_left``: the supersteps LangGraph's ``recursion_limit`` still allowed when finalize started;
    the limit is named when it stopped work that could still run.
    """
    covered = replanned_ids(replans)
    failed = [
        t["id"] for t in ordered(tasks) if t["status"] == "failed" and t["id"] not in covered and not is_fallback(t)
    ]
    if failed and all(says_server_down(tasks[t].get("error")) for t in failed):
        # Not a limit: every failure was the model server not answering (replans failed the same way).
        first = preview(tasks[failed[0]]["error"], 200)
        return f"the model server stopped answering (subtask {', '.join(failed)}: {first})"
    if model_calls >= config.max_steps:
        reason = (
            f"the step budget max_steps={config.max_steps} was used up "
            f"(the work queued so far needs at least max_steps={steps_needed(tasks, model_calls)})"
        )
    elif any(r.get("outcome") == "gave_up" for r in replans):
        reason = "the replanner found no way to continue"
    elif failed:
        reason = f"subtask {', '.join(failed)} failed" if len(failed) == 1 else f"subtasks {', '.join(failed)} failed"
    else:
        reason = "no remaining subtask could run"
    if model_calls < config.max_steps and steps_left is not None and steps_left < FINALIZE_MARGIN:
        waiting = index_of(tasks).active or any(t["status"] == "pending" for t in tasks.values())
        if waiting:
            cut = (
                f"LangGraph's recursion_limit was nearly reached; these settings need "
                f"recursion_limit={recursion_limit(config)} in the run config"
            )
            reason = cut if reason == "no remaining subtask could run" else f"{reason}; {cut}"
    solo = fallback_of(tasks)
    alone = []
    if solo is not None and solo["status"] != "completed":
        alone.append(f"the single-agent fallback ({solo['id']}) did not finish it either")
    return "; ".join([reason, *alone, *limit_notes(tasks, replans, config)])
