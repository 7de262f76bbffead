"""plan_review node (``approve_plan``): pauses after planning until the user approves, edits or cancels the plan.

Its first step is ``interrupt()``, so a resume runs no planner call again. An edited
plan that does not validate is answered with a new interrupt carrying the error. The interrupt
carries LangChain v1's HITL request too (an ``approve_plan`` action: approve, edit its ``tasks``,
reject), and a message sent to the thread reaches the node as its input's ``reply``. Such a message is
answered with an AI message (agent-chat-ui draws a waiting interrupt's form only under one): the decision
taken, or why it was not used, after which the plan is shown again with that error.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.types import interrupt

from replangraph.config import AgentConfig, AgentProfile
from replangraph.events import emit
from replangraph.llm.reading import UnreadableInput, as_text, match_name, plan_specs
from replangraph.names import BUILT_IN_TOOLS
from replangraph.nodes.human.interrupts import (
    edited_args,
    hitl_decision,
    hitl_request,
    is_cancel,
    pause_for_user,
    slash_command,
    unwrapped,
)
from replangraph.nodes.human.names import PLAN_REVIEWED
from replangraph.nodes.human.prompts import PLAN_TAKEN
from replangraph.queue.plans import (
    fit_required_tools,
    normalize_plan,
    plan_listing,
    tasks_from_plan,
    tool_names,
    validate_plan,
)
from replangraph.queue.tasks import DEFAULT_AGENT, RESET, QueueError, Task, plan_id_of
from replangraph.run_config import Configured
from replangraph.state import StateUpdate

APPROVALS = frozenset({"approve", "approved", "yes", "y", "ok", "okay", "go", "lgtm", "accept", "true"})
TYPED_ERROR = "replangraph_plan_error"
"""``response_metadata`` key of the AI message that says why a typed answer to the plan review was not used."""


def typed_error(messages: Sequence[AnyMessage]) -> str:
    """The error of a typed answer the plan review could not use, when the thread ends with its message, else ""."""
    last = messages[-1] if messages else None
    return str(last.content) if isinstance(last, AIMessage) and (last.response_metadata or {}).get(TYPED_ERROR) else ""


def taken(decision: str, count: int = 0) -> list[AIMessage]:
    """The AI message that answers a plan decision typed into the chat."""
    subtasks = f"{count} subtask" + ("" if count == 1 else "s")
    return [AIMessage(PLAN_TAKEN[decision].format(subtasks=subtasks), name="replangraph")]


def decision_of(answer: Any) -> str | None:
    """``approve`` for True, "approve", "yes", "ok"... or ``{"action": "approve"}``; ``cancel`` for
    ``{"action": "cancel"}``; ``reject`` for ``False`` or ``{"approve": false}``; else None (an edit)."""
    if isinstance(answer, Mapping):
        answer = next((answer[k] for k in ("action", "decision", "approve", "approved") if k in answer), None)
        if answer is None:
            return None
    if answer is True or (isinstance(answer, str) and answer.strip().strip(".!").casefold() in APPROVALS):
        return "approve"
    if answer is False:
        return "reject"
    if isinstance(answer, str) and answer.strip().casefold() in ("cancel", "cancelled"):
        return "cancel"
    return None


def plan_answer(answer: Any) -> Any:
    """A HITL decision read as the answers `decision_of` and `edited_plan` know: ``approve``, ``reject``
    (the plan is not carried out: the run is cancelled), ``edit`` (its ``tasks``), ``respond`` (its
    message as text); any other value unchanged."""
    decision = hitl_decision(answer)
    if decision is None:
        return answer
    kind = decision["type"]
    if kind == "edit":
        args = edited_args(decision)
        return args.get("tasks", args)
    if kind == "respond":
        return as_text(decision.get("message"))
    return {"action": "cancel" if kind == "reject" else "approve"}


def plan_request(goal: str, listing: list[dict[str, Any]], error: str = "") -> dict[str, Any]:
    """The interrupt's value: ``kind``, ``goal``, ``tasks`` (and ``error`` after a bad edit), with the HITL
    request of an ``approve_plan`` action whose ``tasks`` an edit changes."""
    lines = [f"- {t['id']} ({t['agent_type']}): {t['content']}" for t in listing]
    described = "\n\n".join(filter(None, [error, f"Goal: {goal}", "Plan:\n" + "\n".join(lines)]))
    hitl = hitl_request("approve_plan", {"tasks": listing}, described, ["approve", "edit", "reject"])
    return {"kind": "plan", "goal": goal, "tasks": listing, **({"error": error} if error else {}), **hitl}


def edited_plan(
    answer: Any,
    agent_types: Sequence[str],
    max_tasks: int,
    tools_by_agent: Mapping[str, Collection[str]] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The edited plan in an answer (a task list, ``{"tasks": [...]}``, JSON text), validated like any
    plan, and notes on what was repaired (dependency spellings, an agent type's case, unknown tools).

    With ``tools_by_agent``, ``required_tools`` are read as the planner reads them, but the user's
    agent types stand: a type that lacks a required tool is a note (and ``missing_tools`` in
    ``step_started``), never a change."""
    specs, notes = normalize_plan(plan_specs(answer))
    for spec in specs:
        written = spec.get("agent_type") or DEFAULT_AGENT
        spec["agent_type"] = match_name(written, agent_types) or written
        if spec["agent_type"] != written:
            notes.append(f"task {spec['id']!r}: agent type {written!r} read as {spec['agent_type']!r}")
    validate_plan(specs, agent_types=agent_types, max_tasks=max_tasks)
    if tools_by_agent is not None:
        specs, tool_notes, problems = fit_required_tools(specs, tools_by_agent, built_in=BUILT_IN_TOOLS, reassign=False)
        notes += tool_notes + problems
    return specs, notes


class PlanReview(Configured):
    """Shows the plan (``{"kind": "plan", "tasks": [...]}``) and applies the user's decision; a decision typed
    into the chat is answered with an AI message. Only the planner's plan is reviewed; a replan runs without
    a pause.

    Computes only (no model call), so it has no ``acall``: under ``ainvoke`` it runs in replangraph's pool
    (``both_paths``), and ``interrupt()`` pauses the run from there as well (the thread has the run's context)."""

    def __init__(self, agent_types: Iterable[str] | Mapping[str, AgentProfile], config: AgentConfig):
        self.agent_types = list(agent_types)
        self.tools_by_agent = tool_names(agent_types) if isinstance(agent_types, Mapping) else None
        """Each agent type's tool names, when the node was given the profiles (edits' tools are then checked)."""
        self.base_config = config

    def __call__(self, state: Mapping[str, Any]) -> StateUpdate:
        tasks: Mapping[str, Task] = state.get("tasks") or {}
        request = plan_request(state.get("goal", ""), plan_listing(tasks), typed_error(state.get("messages") or []))
        sent = state.get("reply")  # a message sent to the waiting thread (see the feature's entry)
        answer = sent if sent is not None else pause_for_user(request, "approve_plan")
        while True:  # each invalid edit asks again; a resume replays the earlier answers in order
            answer = unwrapped(plan_answer(answer))
            decision = decision_of(answer)
            if is_cancel(answer, self.config) or decision == "cancel":
                emit(PLAN_REVIEWED, decision="cancelled", tasks=request["tasks"], notes=[])
                return {"cancelled": True, "plan_review": "cancelled"}
            command = slash_command(answer)
            if command is not None:  # answered by the commands node; the plan is shown again after it
                return {"messages": [HumanMessage(command)]}
            if decision == "approve":
                emit(PLAN_REVIEWED, decision="approved", tasks=request["tasks"], notes=[])
                return {"plan_review": "approved", **({"messages": taken("approved")} if sent is not None else {})}
            how = f"Answer 'approve', {self.config.cancel_word!r}, or the task list edited (the same shape as `tasks`)."
            try:
                if decision == "reject":
                    raise UnreadableInput("the plan was not approved, and no edited plan was sent")
                specs, notes = edited_plan(answer, self.agent_types, self.config.max_tasks, self.tools_by_agent)
            except (UnreadableInput, QueueError) as exc:
                error = f"The edited plan was not used: {exc}. {how}"
                if isinstance(answer, str) and answer.strip()[:1] not in ("[", "{", "`"):
                    error = f"{as_text(answer)[:80]!r} is not a decision. {how}"
                if sent is not None:  # typed: said in the chat, then the plan is shown again with the error
                    return {"messages": [AIMessage(error, name="replangraph", response_metadata={TYPED_ERROR: True})]}
                answer = interrupt(plan_request(request["goal"], request["tasks"], error))
                continue
            plan_id = plan_id_of(next(iter(tasks.values()), {}))
            new_tasks = tasks_from_plan(specs, plan_id=plan_id)
            emit(PLAN_REVIEWED, decision="edited", tasks=plan_listing(new_tasks), notes=notes)
            update: StateUpdate = {"tasks": {RESET: True, **new_tasks}, "plan_review": "edited"}
            return {**update, **({"messages": taken("edited", len(new_tasks))} if sent is not None else {})}
