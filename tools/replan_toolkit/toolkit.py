"""The replan toolkit: lets the agent running a subtask see the plan and hand off the rest.

A `ReplanSession` is bound to one running subtask and holds a snapshot of the
queue. A toolkit call that changes the queue returns its own state update, as a
LangGraph ``Command`` whose ``messages`` hold the reply to the agent (the
convention of LangGraph's ``ToolNode``); the tools node merges it into the
subtask's update. Once the session is closed the tools refuse to work.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException
from langgraph.types import Command
from pydantic import BaseModel

from replangraph.config import AgentConfig
from replangraph.context.fitting import kept_id, message_key, output_id, unique_key
from replangraph.context.outcomes import announced, completed, failed
from replangraph.events import DYNAMIC_TASKS_ADDED, event
from replangraph.llm.reading import UnreadableInput, as_text, bad_arguments, message_text, task_specs, text_field
from replangraph.names import ASK_USER, REPLAN_MARKER, REQUEST_REPLAN_TOOL, REVIEW_TOOL, SPLIT_TOOL, TOOLKIT_NAMES
from replangraph.policy import DEFAULT_POLICY, TextPolicy
from replangraph.queue.coverage import follow_ups
from replangraph.queue.plans import LimitReached, coerce_agent_types, limit_hit, split_task
from replangraph.queue.tasks import (
    FollowUpKind,
    QueueError,
    Task,
    is_candidate,
    is_continuation,
    ordered,
    preview,
    queued_by_check,
    task_line,
)
from replangraph.tools.files.workspace_files import thread_folder, workspace_listing
from replangraph.tools.replan_toolkit.prompts import (
    REPLAN_REASON_DESCRIPTION,
    REQUEST_REPLAN_DESCRIPTION,
    REVIEW_TOOL_DESCRIPTION,
    SPLIT_SUMMARY_DESCRIPTION,
    SPLIT_TASKS_DESCRIPTION,
    SPLIT_TOOL_DESCRIPTION,
)
from replangraph.tracing import task_label

logger = logging.getLogger(__name__)

MAX_WORKSPACE_FILES = 40
"""Most workspace entries a review names."""
MAX_REVIEW_WALKED = 1_000
"""Most workspace entries a review looks at."""
THREAD_PLACEHOLDER = "{thread}"
"""In ``AgentConfig.workspace_dir``: the folder of the run's thread under the folder before it."""


@dataclass
class ReplanSession:
    """The toolkit's view of one running subtask."""

    task_id: str
    tasks: Mapping[str, Task]
    agent_types: Iterable[str]
    config: AgentConfig = field(default_factory=AgentConfig)
    goal: str = ""
    ended: bool = False
    """Whether a toolkit call ended the subtask (handoff or replan request); a review is refused after it,
    another hand-off or replan request of the same turn is not."""
    handed_off: list[dict[str, Any]] = field(default_factory=list)
    """The follow-up specs of this turn's hand-offs (a second hand-off adds to the first)."""
    summaries: list[str] = field(default_factory=list)
    """The summaries of this turn's hand-offs, in call order."""
    limits_hit: dict[str, int] = field(default_factory=dict)
    """The limits that refused a split in this turn, with the value that would have fit."""
    progress: bool = False
    """Whether the subtask did some of its work with its own tools: its follow-ups then continue that work (at
    its depth), else they split it (one level deeper)."""
    new_data: Callable[[str], bool] = lambda summary: True
    """Whether a hand-off with this summary holds data the subtask's parent did not find (with what its agent
    read): a continuation that adds nothing stops its chain."""
    policy: TextPolicy = DEFAULT_POLICY
    """The text heuristics that may add follow-ups or notes (`replangraph.policy`)."""
    closed: bool = False

    def _check_open(self, ending: bool = False) -> None:
        """Refuse a call once the session is closed, and a review once this turn ended the subtask
        (another hand-off or replan request of the same turn still counts: see `split_and_handoff`)."""
        if self.closed:
            raise ToolException(f"the replan toolkit of subtask {self.task_id} is closed: that subtask has ended")
        if self.ended and not ending:
            raise ToolException("this subtask has already ended; stop working on it")

    def review_context(self) -> str:
        """The plan around the current subtask, bounded by ``review_context_chars``."""
        self._check_open()
        return render_review(
            self.tasks,
            self.task_id,
            goal=self.goal,
            limit=self.config.review_context_chars,
            preview_chars=self.config.result_preview_chars,
            workspace=self.config.workspace_dir,
        )

    def split_and_handoff(self, summary: Any, tasks: Any, call_id: str = "") -> Command:
        """The update completing this subtask with ``summary`` as its result and queueing the follow-ups.

        ``tasks`` may be a JSON string, a JSON array, fenced JSON, a list of strings or
        one task per line; an unknown agent type runs as this subtask's type. A team member's
        follow-ups wait for its team's merge and run only if its result wins. Input
        that cannot be read is refused with a `ToolException` and changes nothing; a
        split over a limit is refused with an update recording the limit on the task.

        A second hand-off in the same turn adds to the first: its update holds both
        summaries (the first one leads) and every follow-up (a task already handed off
        in this turn is not queued twice).
        """
        self._check_open(ending=True)
        summary = as_text(summary).strip()
        if not summary:
            raise ToolException("`summary` is empty: put the partial result you have so far in it")
        unchanged = STILL_YOURS
        try:
            specs = task_specs(tasks, lines=self.policy.enabled)
        except UnreadableInput as exc:
            logger.debug(
                "split of %s refused: its tasks could not be read (%s)", task_label(self.tasks[self.task_id]), exc
            )
            example = '[{"content": "Extract items 6-10"}, {"content": "Extract items 11-15"}]'
            raise ToolException(
                f"`tasks` could not be read: {exc}. Send a list such as {example}. {unchanged}"
            ) from None
        task = self.tasks[self.task_id]
        specs, notes = coerce_agent_types(specs, list(self.agent_types), task["agent_type"])
        earlier = {spec["content"] for spec in self.handed_off}
        specs, covered = self.covered([*self.handed_off, *(spec for spec in specs if spec["content"] not in earlier)])
        kind = "continuation" if self.progress else "split"
        stopped = None
        if kind == "continuation" and (is_continuation(task) or queued_by_check(task)) and not self.new_data(summary):
            before = f"its parent {task['parent_id']}" if task.get("parent_id") else "the run"
            stopped = f"it found nothing {before} had not: its chain of continuations stops here"
            specs = []
        try:
            created = self.queued(specs, kind)
        except LimitReached as exc:
            self.limits_hit = limit_hit({"limits_hit": {**(task.get("limits_hit") or {}), **self.limits_hit}}, exc)[
                "limits_hit"
            ]
            change = {"tasks": {self.task_id: {"limits_hit": self.limits_hit}}}
            logger.warning("split of %s refused: %s (limits hit: %s)", task_label(task), exc, self.limits_hit)
            return reply(call_id, SPLIT_TOOL, f"{exc}. {unchanged}", change, status="error")
        except QueueError as exc:
            logger.warning("split of %s refused: %s", task_label(task), exc)
            raise ToolException(f"{exc}. {unchanged}") from None
        again = bool(self.summaries)
        self.ended, self.handed_off = True, specs
        if summary not in self.summaries:
            self.summaries.append(summary)
        notes += covered
        added = event(
            DYNAMIC_TASKS_ADDED, parent_id=self.task_id, task_ids=list(created), source="toolkit", notes=notes
        )
        update = completed(task, joined_summaries(self.summaries), handed_off=list(created))
        update = announced([added], update) if created else update
        update["tasks"].update(created)
        if stopped:
            update["tasks"][self.task_id]["chain_stopped"] = stopped
        listing = ", ".join(created)
        text = f"Handed off. Your partial result is saved and {len(created)} task(s) were queued: {listing}."
        if again:
            text = f"Handed off with this turn's earlier hand-off: {len(created)} task(s) are queued in all: {listing}."
        if is_candidate(task):  # held until the team's merge
            text = f"Handed off. Your partial result is saved; {listing} run only if the team keeps your result."
        if not created:
            text = "Your partial result is saved; nothing was queued: " + (stopped or "the rest is queued or done.")
        if notes:
            text += " Note: " + " ".join(note.rstrip(".") + "." for note in notes)
        return reply(call_id, SPLIT_TOOL, text + " Stop now.", update)

    def covered(self, specs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
        """``(follow-ups to queue, notes)``: every one of ``specs`` in order, identical ones too, but the goal
        itself (`follow_ups`); with the text policy on, the parts of this subtask's range the follow-ups skip are
        added and overlaps with other work noted (`TextPolicy`)."""
        if not specs:
            return specs, []
        task = self.tasks[self.task_id]
        fresh = follow_ups([spec["content"] for spec in specs], goal=self.goal)
        queued = set(fresh.queued)  # a refused split may name 100,000 follow-ups: no scan of a list per spec
        kept = [dict(spec) for spec in specs if spec["content"] in queued]
        contents = [k["content"] for k in kept]
        skipped = self.policy.added_work(task["content"], contents)
        notes = [*fresh.notes, *self.policy.notes(self.tasks, contents, within=task)]
        kept += [{"content": c, "agent_type": task["agent_type"], "by": "coverage"} for c in skipped]
        notes += [f"Follow-up {c!r} was added: the follow-ups skipped that part of this subtask" for c in skipped]
        return kept, notes

    def queued(self, specs: list[dict[str, Any]], kind: FollowUpKind) -> dict[str, Task]:
        """The follow-up tasks for ``specs`` (none for none); `QueueError` when the queue's rules refuse them."""
        if not specs:
            return {}
        return split_task(
            self.tasks,
            self.task_id,
            specs,
            agent_types=self.agent_types,
            max_tasks=self.config.max_tasks,
            max_split_depth=self.config.max_split_depth,
            kind=kind,
        )

    def request_replan(self, reason: Any, call_id: str = "") -> Command:
        """The update ending this subtask and asking the replanner for a new plan of the remaining work
        (with a hand-off in the same turn, the tools node keeps the hand-off and adds this request)."""
        self._check_open(ending=True)
        reason = as_text(reason).strip()
        if not reason:
            raise ToolException("`reason` is empty: say why the plan cannot go on as it is")
        self.ended = True
        task = self.tasks[self.task_id]
        request = {"trigger": "tool", "reason": reason}
        update = failed(task, f"replan requested: {reason}", task.get("model_calls", 0), replan_request=request)
        text = "Replan requested. This subtask ends here; the replanner will revise the remaining plan."
        return reply(call_id, REQUEST_REPLAN_TOOL, text, update)

    def close(self) -> None:
        """End the session; the tools refuse any later call."""
        self.closed = True


ANOTHER_SUMMARY = "Summary sent with another hand-off in the same turn:"


def joined_summaries(summaries: list[str]) -> str:
    """The result of a turn's hand-offs: the first summary, then each later one under a label."""
    return "\n\n".join([summaries[0], *(f"{ANOTHER_SUMMARY}\n{s}" for s in summaries[1:])])


def reply(call_id: str, name: str, text: str, update: dict, status: str = "success") -> Command:
    """A toolkit call's result: ``update`` for the state, with the reply to the agent in ``messages``."""
    message = ToolMessage(text, tool_call_id=call_id, name=name, status=status)
    return Command(update={**update, "messages": [message]})


class _NoArgs(BaseModel):
    pass


STILL_YOURS = "The queue is unchanged; this subtask is still yours."
"""Ends every refusal; dropped where the refusal is quoted after the subtask ended (the repeat guard)."""
SUMMARY_NAMES = ("summary", "partial_result", "result", "results", "findings", "data")
TASKS_NAMES = ("tasks", "follow_up_tasks", "subtasks", "new_tasks", "remaining_tasks")


class _ReplanArgs(BaseModel):
    reason: text_field(REPLAN_REASON_DESCRIPTION, ("reason", "why"))
    tool_call_id: Annotated[str, InjectedToolCallId]


class _SplitArgs(BaseModel):
    summary: text_field(SPLIT_SUMMARY_DESCRIPTION, SUMMARY_NAMES)
    tasks: text_field(SPLIT_TASKS_DESCRIPTION, TASKS_NAMES)
    tool_call_id: Annotated[str, InjectedToolCallId]


def sent_summary(args: Any) -> str:
    """The partial result a split call carried, whatever the field was called; failing a known
    name, everything it sent but the task list (raw text when its arguments were unreadable)."""
    if isinstance(args, str):
        return args.strip()
    if not isinstance(args, dict):
        return ""
    named = next((as_text(args[k]).strip() for k in SUMMARY_NAMES if as_text(args.get(k)).strip()), "")
    rest = {k: v for k, v in args.items() if k not in (*TASKS_NAMES, *SUMMARY_NAMES) and as_text(v).strip()}
    return named or (as_text(rest).strip() if rest else "")


def replan_toolkit(session: ReplanSession | None) -> list[BaseTool]:
    """The toolkit's tools, bound to ``session`` (None: schemas only; calls return an error)."""

    def review() -> str:
        if session is None:
            raise ToolException("the replan toolkit is only available while a subtask runs")
        return session.review_context()

    def split(summary: Any, tasks: Any, tool_call_id: str) -> Command:
        if session is None:
            raise ToolException("the replan toolkit is only available while a subtask runs")
        return session.split_and_handoff(summary, tasks, tool_call_id)

    def replan(reason: Any, tool_call_id: str) -> Command:
        if session is None:
            raise ToolException("the replan toolkit is only available while a subtask runs")
        return session.request_replan(reason, tool_call_id)

    return [
        StructuredTool.from_function(
            review,
            name=REVIEW_TOOL,
            description=REVIEW_TOOL_DESCRIPTION,
            args_schema=_NoArgs,
            handle_tool_error=True,
            handle_validation_error=bad_arguments,
        ),
        StructuredTool.from_function(
            split,
            name=SPLIT_TOOL,
            description=SPLIT_TOOL_DESCRIPTION,
            args_schema=_SplitArgs,
            handle_tool_error=True,
            handle_validation_error=bad_arguments,
        ),
        StructuredTool.from_function(
            replan,
            name=REQUEST_REPLAN_TOOL,
            description=REQUEST_REPLAN_DESCRIPTION,
            args_schema=_ReplanArgs,
            handle_tool_error=True,
            handle_validation_error=bad_arguments,
        ),
    ]


# --------------------------------------------------------------------------- review rendering


def workspace_lines(path: str | None, limit: int = MAX_WORKSPACE_FILES, max_chars: int | None = None) -> list[str]:
    """The review's ``- relative/path (N bytes)`` lines for the files under ``path``: at most ``limit``
    lines and ``max_chars`` characters, then a line saying how many more list_files would show.
    ``{thread}`` in ``path`` stands for the run's own folder (`thread_folder`)."""
    if path and THREAD_PLACEHOLDER in path:
        path = str(thread_folder(path.replace(THREAD_PLACEHOLDER, "").rstrip("/\\") or "."))
    if not path or not os.path.isdir(path):
        return []
    try:
        lines, complete = workspace_listing(Path(os.path.realpath(path)), most=MAX_REVIEW_WALKED)
    except OSError as exc:
        return [f"(the workspace could not be listed: {exc.strerror or type(exc).__name__})"]
    shown = lines[:limit]
    while shown and max_chars is not None and len("\n".join(shown)) > max_chars:
        shown.pop()
    if len(shown) < len(lines) or not complete:
        shown.append(f"(… {len(lines) - len(shown)}{'' if complete else '+'} more not shown; call list_files)")
    return shown


def render_review(
    tasks: Mapping[str, Task],
    current_id: str,
    *,
    goal: str = "",
    limit: int = 4_000,
    preview_chars: int = 160,
    workspace: str | None = None,
) -> str:
    """The review text; drops the oldest completed and the farthest pending lines to fit ``limit``
    (the workspace files get about a quarter of it)."""
    queue = ordered(tasks)
    done = [task_line(t, preview_chars) for t in queue if t["status"] == "completed"]
    stopped = [task_line(t, preview_chars) for t in queue if t["status"] in ("failed", "skipped")]
    waiting = [task_line(t, 0) for t in queue if t["status"] in ("pending", "in_progress") and t["id"] != current_id]
    current = tasks[current_id]
    head = [f"Goal: {preview(goal, 400)}"] if goal else []
    head.append(f"Current subtask: {current_id}: {preview(current['content'], 400)}")
    files = workspace_lines(workspace, max_chars=limit // 4)

    def render(n_done: int, n_waiting: int) -> str:
        parts = list(head)
        parts.append(f"Completed ({len(done)}):")
        if n_done < len(done):
            parts.append(f"(… {len(done) - n_done} earlier completed subtasks not shown)")
        parts.extend(done[len(done) - n_done :] or ([] if n_done < len(done) else ["(none)"]))
        if stopped:
            parts.append(f"Failed or skipped ({len(stopped)}):")
            parts.extend(stopped[-5:])
        parts.append(f"Pending ({len(waiting)}):")
        parts.extend(waiting[:n_waiting] or ([] if n_waiting < len(waiting) else ["(none)"]))
        if n_waiting < len(waiting):
            parts.append(f"(… {len(waiting) - n_waiting} later pending subtasks not shown)")
        if files:
            parts.append("Workspace files (paths for read_file/write_file):")
            parts.extend(files)
        return "\n".join(parts)

    n_done, n_waiting = len(done), len(waiting)
    text = render(n_done, n_waiting)
    while len(text) > limit and (n_done or n_waiting):
        if n_done >= n_waiting:
            n_done -= 1
        else:
            n_waiting -= 1
        text = render(n_done, n_waiting)
    if len(text) > limit:
        text = text[: limit - 30] + "\n(… review cut to fit)"
    return text


# --------------------------------------------------------------------------- a turn that ended its subtask


TURN_OUTPUTS = "Outputs of the other tool calls of the turn that ended this subtask (the agent never saw them):"
"""Heads the outputs a hand-off turn's other calls return, after the hand-off's summary."""


ARGS_PREVIEW_CHARS = 200
"""Longest arguments a result or a replan reason shows of a call of the ending turn; the rest is in its record."""


def call_args(call: dict, record: str) -> str:
    """The arguments of a call of the ending turn as its result or replan reason shows them. Longer
    ones are cut, pointing at ``record`` (the output id of the turn's record, see `turn_record`);
    an ``ask_user`` question is shown whole (nobody asked it: the result is where it is read)."""
    args = json.dumps(call.get("args"), default=str, ensure_ascii=False)
    if len(args) > ARGS_PREVIEW_CHARS and call.get("name") != ASK_USER:
        return f"{preview(args, ARGS_PREVIEW_CHARS)} (whole call in output {record})"
    return args


def turn_outputs(
    task_id: str,
    turn: Sequence[dict],
    replies: Sequence[AnyMessage],
    skip: set[str],
    taken: Callable[[str], bool],
    record: str,
) -> tuple[str, dict[str, str]]:
    """``(text, outputs to keep by key)``: the replies to a turn's calls that the subtask's result
    must carry, each labelled with its call and arguments (`call_args`), whether it failed, and the output
    id its whole text is kept under (the reply as the window had it: a long one cut to ``max_observation_chars``).
    Left out: ``skip`` (call ids) and the toolkit's own successful replies (the hand-off, a review)."""
    by_id = {r.tool_call_id: r for r in replies if isinstance(r, ToolMessage)}
    parts, keep = [], {}
    for call in turn:
        reply = by_id.get(call.get("id") or "")
        if reply is None or reply.tool_call_id in skip or call.get("name") == REVIEW_TOOL:
            continue
        if call.get("name") in TOOLKIT_NAMES and reply.status != "error":
            continue
        ident = kept_id(reply)
        if ident is None:
            key = unique_key(message_key(reply), lambda k: taken(k) or k in keep)
            keep[key] = message_text(reply)
            ident = output_id(task_id, key)
        failed_mark = " (failed)" if reply.status == "error" else ""
        body = message_text(reply).replace(STILL_YOURS, "").strip()  # the subtask has ended all the same
        if call.get("name") == SPLIT_TOOL and (summary := sent_summary(call.get("args"))):
            body += f"\nSummary it sent: {summary}"
        parts.append(f"[{call.get('name', '')} {call_args(call, record)}]{failed_mark} (output {ident})\n{body}")
    return ("\n\n".join([TURN_OUTPUTS, *parts]) if parts else ""), keep


def turn_failures(turn: Sequence[dict], replies: Sequence[ToolMessage], skip: set[str], record: str) -> list[str]:
    """What failed in a turn that ended its subtask, which the agent will never see but the replanner
    should: each failed call with its arguments (`call_args`); ``skip`` (call ids), a review refused
    after the hand-off, an unasked question and a call the timeout left unrun do not count."""
    by_id = {r.tool_call_id: r for r in replies}
    found = []
    for call in turn:
        reply = by_id.get(call.get("id") or "")
        if reply is None or reply.status != "error" or reply.tool_call_id in skip:
            continue
        if call.get("name") in (REVIEW_TOOL, ASK_USER) or message_text(reply).startswith("Not run:"):
            continue
        why = preview(message_text(reply), 200)
        found.append(f"the {call.get('name')} call {call_args(call, record)} failed: {why}")
    return found


MARKER_LEAD = re.compile(r"[ \t>*_#-]*")
"""What may come before the marker at the start of a line: indentation, a bullet, a quote mark, emphasis."""


OWN_MARKER = re.compile(rf"^{MARKER_LEAD.pattern}(?={re.escape(REPLAN_MARKER)})", re.M)


def split_replan_marker(text: str) -> tuple[str, str] | None:
    """``(partial result, reason)`` when the answer carries the replan marker as its own: starting a line
    (the reason after it, on as many lines as it takes), or on the answer's last line after the partial
    result. A marker quoted mid-text (the instructions repeated, a marker in quotes or backticks) is no
    request. None without one."""
    body = text.strip()
    own = OWN_MARKER.search(body)
    if own:
        at = own.end()
    else:
        lines = body.splitlines() or [""]
        last = lines[-1]
        at = last.find(REPLAN_MARKER)
        if at < 0 or (at > 0 and last[at - 1] in "\"'`“‘«"):
            return None
        at += len(body) - len(last)
    before = MARKER_LEAD.sub("", body[:at][::-1], count=1)[::-1]  # the marker line's bullet is no result
    return before.strip(), body[at + len(REPLAN_MARKER) :].strip(" \t*_:").strip() or "no reason given"
