"""tools node: runs the pending tool calls of every subtask in progress, then the router picks what's next.

It is also the join point of parallel executor branches: however many subtasks
took a model turn in the last step, this node runs once.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from concurrent.futures import Future

from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from replangraph.config import AgentConfig, AgentProfile, Configured
from replangraph.context.fitting import PAGE_RE
from replangraph.context.kept import (
    READ_OUTPUT,
    cut_observation,
    drop_old_observations,
    is_taken,
    keep_outputs,
    mark_kept,
    read_saved,
    saved_keys,
    window_outputs,
)
from replangraph.context.workspace import WORKSPACE, collect_writes
from replangraph.events import EVENTS, held_events
from replangraph.llm.calls import StepClock, StepTimeout, call_pool, call_with_timeout
from replangraph.llm.messages import message_text, pending_tool_calls
from replangraph.names import ASK_USER, TOOLKIT_NAMES
from replangraph.nodes.human.ask_user import ask_user_tool
from replangraph.nodes.human.questions import screen_question
from replangraph.outcomes import completed, failed, failed_with_window, merge_updates
from replangraph.queue.tasks import Task, preview
from replangraph.state import StateUpdate
from replangraph.tools.read_output import read_output_tool
from replangraph.tools.replan_toolkit.toolkit import (
    STILL_YOURS,
    ReplanSession,
    replan_toolkit,
    sent_summary,
)


def not_run(call: dict) -> ToolMessage:
    """Answer for a tool call that came after the toolkit ended the subtask."""
    return ToolMessage(
        "Not run: this subtask had already ended.",
        tool_call_id=call.get("id") or "",
        name=call.get("name", ""),
        status="error",
    )


ToolReply = tuple[ToolMessage, dict]
"""A tool call's reply to the agent, and the state update the tool returned (usually {})."""


def run_tool_call(toolbox: Mapping[str, BaseTool], call: dict, task_id: str, tasks: Mapping[str, Task]) -> ToolReply:
    """One tool call; unknown tools, bad arguments and exceptions become error messages."""
    name, call_id = call.get("name", ""), call.get("id") or ""
    if call.get("type") == "invalid_tool_call":
        return ToolMessage(
            f"Error: the arguments of this call could not be read ({preview(call.get('error'), 200)}). "
            f"Call {name} again with a JSON object of arguments.",
            tool_call_id=call_id,
            name=name,
            status="error",
        ), {}
    tool = toolbox.get(name)
    if tool is None:
        known = ", ".join(sorted(toolbox))
        message = f"Error: no tool named {name!r}. Available: {known}"
        return ToolMessage(message, tool_call_id=call_id, name=name, status="error"), {}
    try:
        reply = tool.invoke({**call, "type": "tool_call"})
    except GraphBubbleUp:
        raise
    except Exception as exc:  # bad arguments or a crashing tool: tell the agent, keep the run
        return ToolMessage(f"Error: {type(exc).__name__}: {exc}", tool_call_id=call_id, name=name, status="error"), {}
    if isinstance(reply, Command):
        return command_reply(reply, call, task_id, tasks)
    if not isinstance(reply, ToolMessage):
        reply = ToolMessage(str(reply), tool_call_id=call_id, name=name)
    return reply, {}


def command_reply(command: Command, call: dict, task_id: str, tasks: Mapping[str, Task]) -> ToolReply:
    """The reply and state update of a tool that returned ``Command(update=...)``, as LangGraph's
    ``ToolNode`` reads one: its ``messages`` hold the reply. The update may change ``tasks`` and
    end the calling subtask (``windows: {its id: None}``); anything else is refused.

    A reply that names another call is taken as this call's (the window must answer every call).
    """
    name, call_id = call.get("name", ""), call.get("id") or ""
    update = dict(command.update or {})
    messages = update.pop("messages", None) or []
    reply = next((m for m in messages if isinstance(m, ToolMessage)), None)
    windows = update.get("windows") or {}
    problems = [f"key {k!r}" for k in update if k not in ("tasks", "windows", WORKSPACE, EVENTS)]  # effects too
    problems += [f"window {k!r}" for k, v in windows.items() if k != task_id or v is not None]
    removed = [k for k, v in (update.get("tasks") or {}).items() if v is None]
    problems += [
        f"removal of running task {k!r}" for k in removed if (tasks.get(k) or {}).get("status") == "in_progress"
    ]
    problems += ["goto"] * bool(command.goto) + ["graph"] * (command.graph is not None)
    if problems:
        error = f"Error: tool {name} returned a state update this graph cannot apply ({', '.join(problems)})."
        return ToolMessage(error, tool_call_id=call_id, name=name, status="error"), {}
    if reply is None:
        reply = ToolMessage("Done.", tool_call_id=call_id, name=name)
    elif reply.tool_call_id != call_id or not reply.name:
        reply = reply.model_copy(update={"tool_call_id": call_id, "name": reply.name or name})
    return reply, {k: v for k, v in update.items() if v}


def ends_subtask(update: Mapping, task_id: str) -> bool:
    """Whether a tool's update ends the subtask: its window closed, or its status no longer in progress."""
    status = ((update.get("tasks") or {}).get(task_id) or {}).get("status", "in_progress")
    return task_id in (update.get("windows") or {}) or status != "in_progress"


def is_repeated_refusal(window: Sequence[AnyMessage], reply: ToolMessage) -> bool:
    """Whether ``reply`` refuses a toolkit or ask_user call exactly as an earlier reply in the window did."""
    if reply.status != "error" or reply.name not in (*TOOLKIT_NAMES, ASK_USER):
        return False
    text = message_text(reply)
    return any(
        isinstance(m, ToolMessage) and m.status == "error" and m.name == reply.name and message_text(m) == text
        for m in window
    )


class ToolRunner(Configured):
    """Executes tool calls with the subtask's tools plus its own replan toolkit."""

    def __init__(self, profiles: Mapping[str, AgentProfile], config: AgentConfig, teams: Sequence[str] = ()):
        self.profiles = profiles
        self.agent_types = [*profiles, *teams]
        """What a hand-off may assign: the agent types and the teams."""
        self.base_config = config

    def run_subtask_tools(
        self, task_id: str, window: Sequence[AnyMessage], tasks: Mapping[str, Task], goal: str
    ) -> StateUpdate:
        """The state update after running one subtask's pending tool calls (their time counts as the step's).

        A crash in this subtask's step fails this subtask only, and the events its tools
        emitted before the crash never go out (the update that carried them is lost).
        """
        task = tasks[task_id]
        clock = StepClock(task.get("elapsed_s") or 0.0, self.config.step_timeout_s)
        replies: list[ToolMessage] = []  # filled as calls return, so a crash keeps what they brought
        cut: dict[str, str] = {}  # the same for the whole texts of cut replies
        try:
            with held_events():
                update = self.run_calls(task_id, window, tasks, goal, clock, replies, cut)
        except GraphBubbleUp:
            raise
        except Exception as exc:  # a bug in one subtask's step must not take its parallel siblings down
            error = f"tools crashed: {type(exc).__name__}: {exc}"
            update = failed_with_window(task, [*window, *replies], error, task.get("model_calls", 0))
        update = merge_updates([keep_outputs(task, cut), update])
        own = update.setdefault("tasks", {}).setdefault(task_id, {})
        if own is not None:
            own["elapsed_s"] = round(clock.elapsed(), 6)
        return update

    def run_calls(
        self,
        task_id: str,
        window: Sequence[AnyMessage],
        tasks: Mapping[str, Task],
        goal: str,
        clock: StepClock,
        replies: list[ToolMessage],
        cut: dict[str, str],
    ) -> StateUpdate:
        """The state update after running one subtask's pending tool calls (their replies go to ``replies``,
        the whole texts of the replies it cuts to ``cut``, by key)."""
        task = tasks[task_id]
        session = ReplanSession(task_id, tasks, self.agent_types, self.config, goal=goal)
        reader = read_output_tool(
            lambda ident: read_saved(ident, tasks, goal, task_id),
            lambda: saved_keys(tasks, task_id),
            self.config.max_observation_chars,
        )
        asker = [ask_user_tool()] if self.config.max_clarifications else []  # named in "no tool named" errors
        tools = [*self.profiles[task["agent_type"]].tools, *replan_toolkit(session), reader, *asker]
        toolbox = {t.name: t for t in tools}
        calls = task.get("model_calls", 0)
        changes: list[dict] = []  # what the tools returned for the state, in call order
        ending: dict | None = None
        saved_before = is_taken(task)

        def taken(key: str) -> bool:
            return key in cut or saved_before(key)

        repeated: str | None = None
        for call in pending_tool_calls(window):
            if ending is not None or repeated is not None:
                replies.append(not_run(call))
                continue
            if call.get("name") == ASK_USER:
                screened = screen_question(call, task, self.config)
                if screened is None:  # it waits for the user: the ask node answers it
                    continue
                reply, change = screened, {}
            elif call.get("name") in TOOLKIT_NAMES:
                # Our own microsecond-fast code: run inline, so its update can never land after a timeout.
                reply, change = run_tool_call(toolbox, call, task_id, tasks)
            else:
                try:
                    run = functools.partial(run_tool_call, toolbox, call, task_id, tasks)
                    reply, change = call_with_timeout(run, clock.left())
                except StepTimeout:
                    session.close()
                    error = f"step exceeded step_timeout_s={self.config.step_timeout_s:g} in tool {call.get('name')!r}"
                    changes.append(keep_outputs(task, window_outputs([*window, *replies], taken)))
                    return merge_updates([*changes, failed(task, error, calls)])
            if change and ends_subtask(change, task_id):
                ending = merge_updates([change, {"windows": {task_id: None}}])
            elif change:
                changes.append(change)
            if is_repeated_refusal([*window, *replies], reply):
                repeated = sent_summary(call.get("args")) if reply.name != ASK_USER else ""
                refusal = message_text(reply).replace(STILL_YOURS, "").strip()
                error = f"the agent repeated a refused {reply.name} call: {preview(refusal, 300)}"
            page = PAGE_RE.match(message_text(reply)) if reply.name == READ_OUTPUT else None
            if page:  # a page of something kept: never saved again
                reply = mark_kept(reply, message_text(reply), page.group(1))
            reply, key, full_text = cut_observation(reply, self.config.max_observation_chars, task_id, taken)
            if full_text is not None:
                cut[key] = full_text  # kept even if a later call in this step crashes
            replies.append(reply)
        session.close()
        new_window, dropped = drop_old_observations([*window, *replies], self.config.max_observations, task_id, taken)
        to_keep = dict(dropped)
        if ending is not None or repeated is not None:  # the window goes: keep every output it had read
            to_keep.update(window_outputs(new_window, lambda k: taken(k) or k in dropped))
        changes.append(keep_outputs(task, to_keep))
        if repeated is not None:
            # The same refusal twice: the agent will not get past it alone. What it sent as summary is
            # its result (later tasks may build on it); the rest of its work goes to the replanner.
            request = {"trigger": "failure", "reason": error}
            if not repeated:
                return merge_updates([*changes, failed(task, error, calls, replan_request=request)])
            update = completed(task, repeated, calls)
            update["tasks"][task_id]["replan_request"] = request
            return merge_updates([*changes, update])
        if ending is not None:
            return merge_updates([*changes, ending])
        return merge_updates([*changes, {"windows": {task_id: new_window}}])

    @collect_writes  # the toolkit's events go out with the update that carries them
    def __call__(self, state: Mapping) -> StateUpdate:
        return self.run_all(state)

    def run_all(self, state: Mapping) -> StateUpdate:
        """The update after running every subtask's pending tool calls."""
        if state.get("cancelled"):  # the user cancelled the run: the finalizer is next
            return {}
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        windows = state.get("windows") or {}
        goal = state.get("goal", "")
        work = [
            task_id
            for task_id, window in windows.items()
            if task_id in tasks and tasks[task_id]["status"] == "in_progress" and pending_tool_calls(window)
        ]
        if not work:
            return {}
        if len(work) == 1:
            return self.run_subtask_tools(work[0], windows[work[0]], tasks, goal)
        else:  # at most max_concurrency subtasks are in progress, so at most that many run at once
            futures: list[Future] = [
                call_pool("subtasks").submit(self.run_subtask_tools, task_id, windows[task_id], tasks, goal)
                for task_id in work
            ]
        return merge_updates([f.result() for f in futures])
