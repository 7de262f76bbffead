"""The router: after the planner, the tools node and the replanner, decides what runs next.

It is a pure function of the state, so it gives the same answer however many
parallel branches joined before it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import END
from langgraph.types import Send

from replangraph.config import FINALIZE_MARGIN, AgentConfig, run_settings
from replangraph.context.kept import full_result
from replangraph.context.monitor import ContextMonitor
from replangraph.context.workspace import WORKSPACE, open_workspace, step_key
from replangraph.llm.messages import calls_to_run, ends_with_answer, waiting_questions
from replangraph.names import (
    ASK,
    COMMANDS,
    COMPRESSOR,
    EXECUTOR,
    FINALIZE,
    PLAN_REVIEW,
    PLANNER,
    REPLANNER,
    TEAM,
    TEAM_MERGE,
    TOOLS,
    VERIFIER,
)
from replangraph.nodes.human.slash import RESUME, last_command, paused, pending_command, unfinished
from replangraph.nodes.teams.teams import mergeable, settled
from replangraph.queue.index import index_of
from replangraph.queue.tasks import Task, active_tasks, dependency_results, plan_summary, ready_tasks, spent_model_calls
from replangraph.state import DependencyResult, SubtaskInput


def subtask_input(state: Mapping[str, Any], task: Task) -> SubtaskInput:
    """The Send payload for one subtask: the task, its window, and on its first turn its inputs.

    Dependency results are read whole from the workspace until the subtask's first
    model turn (later turns have them in the window). Without a store, the payload names the keys the
    subtask already holds in the workspace (not their text), so new ones never clash.
    """
    tasks = state.get("tasks") or {}
    window = list((state.get("windows") or {}).get(task["id"], []))
    opening_only = not any(isinstance(m, AIMessage) for m in window)
    dependencies = [dependency_input(d) for d in dependency_results(tasks, task)] if opening_only else []
    payload = SubtaskInput(
        task_id=task["id"], goal=state.get("goal", ""), task=task, dependencies=dependencies, window=window
    )
    held = (state.get(WORKSPACE) or {}).get(step_key(task))
    if held:
        payload[WORKSPACE] = {step_key(task): dict.fromkeys(held, {})}
    return payload


def dependency_input(task: Task) -> DependencyResult:
    """What a subtask is told about one of its dependencies: id, instructions and the whole result."""
    return DependencyResult(id=task["id"], content=task["content"], result=full_result(task) or "")


def make_router(
    config: AgentConfig,
    monitor: ContextMonitor,
    tool_schemas: Mapping[str, Sequence[Any]],
    teams: Collection[str] = (),
) -> Callable[[Mapping[str, Any]], list[Send] | str]:
    """The routing function, bound to the run's limits, each agent type's tools and the team names.

    A ready team subtask goes to the team node, which queues its members; once they have all
    ended, the team merge node keeps one result. The members count against ``max_concurrency``,
    the team subtask itself does not.
    """

    def route(state: Mapping[str, Any]) -> list[Send | str] | str:
        with open_workspace(state.get(WORKSPACE)):  # dependency results are read whole from it
            decision = decide(state)
        left = state.get("remaining_steps")
        if left is not None and left <= FINALIZE_MARGIN:  # LangGraph's recursion_limit: end with a report, not a crash
            return FINALIZE
        return decision

    def decide(state: Mapping[str, Any]) -> list[Send | str] | str:
        settings = run_settings(config)
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        if state.get("cancelled"):
            return FINALIZE
        if pending_command(state, settings.cancel_word):  # a slash command answered instead of a question
            return COMMANDS
        if state.get("plan_review") == "waiting":
            return PLAN_REVIEW
        windows = state.get("windows") or {}
        active = active_tasks(tasks)
        if any(calls_to_run(windows.get(t["id"], [])) for t in active):  # a run resumed by /resume after a crash
            return TOOLS
        if index_of(tasks).replan:
            return REPLANNER
        if spent_model_calls(state) >= settings.max_steps:  # a team whose members ended merges first, at no cost
            due = any(t["agent_type"] in teams and mergeable(tasks, t, budget_spent=True) for t in active)
            return TEAM_MERGE if due else FINALIZE
        # Questions pause the run alone: a sibling's finished step in the same superstep would be
        # dropped if the thread then got new input (a slash command) instead of an answer.
        questions = [Send(ASK, subtask_input(state, t)) for t in active if waiting_questions(windows.get(t["id"], []))]
        if questions:
            return questions
        sends: list[Send | str] = []
        running = 0
        for task in active:
            if task["agent_type"] in teams:  # it waits for its members
                if TEAM_MERGE not in sends and settled(tasks, task):
                    sends.append(TEAM_MERGE)  # one merge node merges every team whose members have ended
                continue
            running += 1
            window = windows.get(task["id"], [])
            if ends_with_answer(window):
                if VERIFIER not in sends:
                    sends.append(VERIFIER)  # one verifier node checks every waiting answer
                continue
            overflow = task.get("context_overflow") or {}
            refused = bool(overflow) and not overflow.get("compressed")  # the provider said it is too long
            over = refused or monitor.over_threshold(window, tool_schemas.get(task["agent_type"], ()))
            payload = subtask_input(state, task)
            if over:
                payload["plan"] = plan_summary(tasks)
            sends.append(Send(COMPRESSOR if over else EXECUTOR, payload))
        room = max(settings.max_concurrency - running, 0)
        queue_size = len(tasks)  # each team started here counts its members against max_tasks for the next
        for task in ready_tasks(tasks, room):
            if task["agent_type"] in teams:  # the team node queues its members: no inputs to read
                sends.append(Send(TEAM, {"task_id": task["id"], "task": task, "queue_size": queue_size}))
                queue_size += len(teams[task["agent_type"]].members)
            else:
                sends.append(Send(EXECUTOR, subtask_input(state, task)))
        if len(sends) == 1 and isinstance(sends[0], Send) and sends[0].node == EXECUTOR:
            sends[0].arg["alone"] = True
        return sends or FINALIZE

    return route


def make_entry_router(config: AgentConfig) -> Callable[[Mapping[str, Any]], str]:
    """Where a run starts: the commands node for a slash command (or the cancel word), else the planner."""

    def entry(state: Mapping[str, Any]) -> str:
        return COMMANDS if pending_command(state, run_settings(config).cancel_word) else PLANNER

    return entry


def make_command_router(route: Callable[[Mapping[str, Any]], list[Send | str] | str]) -> Callable[..., Any]:
    """What follows a command: a run paused for the user pauses again (``route`` asks its question or
    shows its plan anew; a cancelled one is finalized), ``/resume`` continues a run that stopped
    between steps, and otherwise the run ends: a command never starts work by itself."""

    def after_command(state: Mapping[str, Any]) -> list[Send | str] | str:
        resumed = last_command(state) == RESUME and unfinished(state)
        return route(state) if paused(state) or resumed else END

    return after_command


def make_turn_router(route: Callable[[Mapping[str, Any]], list[Send | str] | str]) -> Callable[..., Any]:
    """What follows a model turn: the tools node, which runs tool calls and is where parallel
    branches join; or ``route`` at once when the turn ran alone and ended its subtask
    (``ended_alone``), where the join would be an empty superstep."""

    def after_turn(state: Mapping[str, Any]) -> list[Send | str] | str:
        return route(state) if state.get("ended_alone") else TOOLS

    return after_turn
