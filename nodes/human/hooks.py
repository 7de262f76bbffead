"""Human in the loop's hooks into a run: slash commands (input that starts with ``/`` is answered by a handler
instead of planned; ``/plan``, ``/status``, ``/cancel`` and ``/resume`` are built in), the feature's routing
rules (a cancelled run, a slash command, a plan waiting for approval, questions), where a run starts and what
follows a command, the ask_user tool with the wrappers that offer it to the executor's model (while the
subtask may still ask) and screen the questions agents ask (the ask node puts the rest to the user), and
the note that tells a starting subtask the answers the user gave so far in the run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.graph import END
from langgraph.types import Send

from replangraph.config import AgentConfig
from replangraph.llm.reading import message_text, waiting_questions
from replangraph.names import ASK_USER, FINALIZE
from replangraph.nodes.human.interrupts import COMMAND_RE
from replangraph.nodes.human.names import ASK, COMMANDS, PLAN_REVIEW
from replangraph.nodes.human.prompts import ASK_USER_DESCRIPTION, NO_USER
from replangraph.nodes.human.questions import AskArgs, answers_so_far, question_of, screen_question
from replangraph.queue.tasks import Task, plan_summary, preview, spent_model_calls, status_counts
from replangraph.resume import RESUME, unfinished
from replangraph.routing import Decision, Route, Rule, subtask_input
from replangraph.run_config import Configured, has_checkpointer, run_settings

CommandHandler = Callable[[str, Mapping[str, Any]], Any]
CANCEL = "/cancel"
RESERVED = (CANCEL, RESUME)


def parse_command(text: str) -> tuple[str, str] | None:
    """``("/name", "argument text")`` for a slash command (name lower-cased), else None."""
    match = COMMAND_RE.match(text.strip())
    if match is None:
        return None
    return "/" + match.group(1).lower(), (match.group(2) or "").strip()


def pending_command(state: Mapping[str, Any], cancel_word: str = CANCEL) -> str | None:
    """The command text when the thread's last message is a human slash command (or the cancel word)
    not yet answered."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    if not isinstance(last, HumanMessage):
        return None
    text = message_text(last).strip()
    return text if parse_command(text) or text.casefold() == cancel_word.strip().casefold() else None


def pending_reply(state: Mapping[str, Any]) -> str | None:
    """The text of the thread's last message when that is a human message (input just sent), else None."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return message_text(last).strip() if isinstance(last, HumanMessage) else None


def last_command(state: Mapping[str, Any]) -> str:
    """The name of the command in the thread's latest human message ("" if it is not one)."""
    messages = state.get("messages") or []
    human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    parsed = parse_command(message_text(human)) if human is not None else None
    return parsed[0] if parsed else ""


def paused(state: Mapping[str, Any]) -> bool:
    """Whether the run is stopped for the user: a question or the plan waits, or it was cancelled and not closed."""
    if not unfinished(state):
        return False
    return bool(state.get("cancelled") or waiting_for(state))


def waiting_for(state: Mapping[str, Any]) -> list[str]:
    """What the run waits on the user for: the plan's approval and each subtask's question."""
    if state.get("cancelled"):
        return []
    waits = ["approval of the plan"] if state.get("plan_review") == "waiting" else []
    tasks: Mapping[str, Task] = state.get("tasks") or {}
    for task_id, window in (state.get("windows") or {}).items():
        if task_id in tasks and tasks[task_id]["status"] == "in_progress":
            waits += [f'an answer to {task_id}: "{preview(question_of(c), 120)}"' for c in waiting_questions(window)]
    return waits


def plan_command(args: str, state: Mapping[str, Any]) -> str:
    """``/plan``: the thread's plan, one line per task."""
    tasks = state.get("tasks") or {}
    return plan_summary(tasks) if tasks else "No plan yet: send a goal to start a run."


def status_command(args: str, state: Mapping[str, Any], config: AgentConfig) -> str:
    """``/status``: counts per status, steps used, and what the run waits for."""
    tasks = state.get("tasks") or {}
    if not tasks:
        return "No run on this thread yet: send a goal to start one."
    counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in status_counts(tasks).items())
    lines = [f"Tasks: {counts}.", f"Steps used: {spent_model_calls(state)} of max_steps={config.max_steps}."]
    if state.get("cancelled"):
        lines.append("The run was cancelled.")
    elif state.get("final_answer"):
        lines.append("The run has ended; its final answer is in the messages above.")
    waits = waiting_for(state)
    lines += [f"Waiting for {w}" for w in waits]
    return "\n".join(lines)


def registered_commands(commands: Mapping[str, CommandHandler] | None) -> dict[str, CommandHandler]:
    """``commands`` keyed ``/name`` (a leading slash is added); bad names and handlers raise ValueError."""
    checked: dict[str, CommandHandler] = {}
    for name, handler in (commands or {}).items():
        parsed = parse_command(name if str(name).startswith("/") else f"/{name}")
        if parsed is None or parsed[1]:
            raise ValueError(f"command name {name!r} must be a word such as '/todo'")
        if parsed[0] in RESERVED:
            raise ValueError(f"{parsed[0]} is built in and cannot be replaced")
        if not callable(handler):
            raise ValueError(f"the handler of {name!r} must be callable (args: str, state) -> str")
        checked[parsed[0]] = handler
    return checked


def known_commands(handlers: Mapping[str, CommandHandler]) -> list[str]:
    return sorted({"/plan", "/status", *RESERVED, *handlers})


def answer_command(
    text: str, state: Mapping[str, Any], handlers: Mapping[str, CommandHandler], config: AgentConfig
) -> str:
    """The reply to a command other than ``/cancel`` and ``/resume``; a failing handler's error is the reply."""
    name, args = parse_command(text) or ("", "")
    builtins: dict[str, CommandHandler] = {
        "/plan": plan_command,
        "/status": lambda a, s: status_command(a, s, config),
    }
    handler = handlers.get(name) or builtins.get(name)
    if handler is None:
        return f"Unknown command {name}. Known commands: {', '.join(known_commands(handlers))}."
    try:
        reply = handler(args, state)
    except Exception as exc:  # a user's handler must not crash the run it reports on
        return f"Command {name} failed: {type(exc).__name__}: {exc}"
    return reply if isinstance(reply, str) else str(reply)


def cancelled(route: Route) -> Decision | None:
    """The user cancelled the run: the finalizer reports what was done."""
    return FINALIZE if route.state.get("cancelled") else None


def command_pending(route: Route) -> Decision | None:
    """A slash command (or the cancel word) sent as input, or as the answer to a question."""
    return COMMANDS if pending_command(route.state, route.settings.cancel_word) else None


def plan_review(route: Route) -> Decision | None:
    """The plan waits for the user's approval."""
    return PLAN_REVIEW if route.state.get("plan_review") == "waiting" else None


def questions(route: Route) -> Decision | None:
    """Questions pause the run alone: a sibling's finished step in the same superstep would be dropped
    if the thread then got new input (a slash command) instead of an answer."""
    asks = [
        Send(ASK, subtask_input(route.state, t))
        for t in route.active
        if waiting_questions(route.windows.get(t["id"], []))
    ]
    return asks or None


def human_rules() -> list[Rule]:
    """The rules, in order, with their stages."""
    return [
        Rule("cancelled", "human", cancelled, "stop"),
        Rule("slash_command", "human", command_pending, "user"),
        Rule("plan_review", "human", plan_review, "user"),
        Rule("questions", "human", questions, "pause"),
    ]


def make_entry_router(config: AgentConfig) -> Callable[[Mapping[str, Any]], Decision | None]:
    """The feature's entry: the commands node for a slash command (or the cancel word); for a message sent
    while the run waits for the user, the node that waits (`answer_waiting`); else None (the planner)."""

    def entry(state: Mapping[str, Any]) -> Decision | None:
        if pending_command(state, run_settings(config).cancel_word):
            return COMMANDS
        return answer_waiting(state)

    return entry


def answer_waiting(state: Mapping[str, Any]) -> Decision | None:
    """A message sent to a thread that waits for the user answers what waits: the plan review or the one
    waiting question get it as their input's ``reply``. With several questions waiting, the commands node
    says why the message was not used, and the questions are asked again. None: nothing waits (a new goal)."""
    reply = pending_reply(state)
    if reply is None or not paused(state) or state.get("cancelled"):
        return None
    if state.get("plan_review") == "waiting":
        return [Send(PLAN_REVIEW, {**state, "reply": reply})]
    tasks: Mapping[str, Task] = state.get("tasks") or {}
    windows = state.get("windows") or {}
    asking = [t for t in tasks.values() if t["status"] == "in_progress" and waiting_questions(windows.get(t["id"], []))]
    if len(asking) == 1 and len(waiting_questions(windows[asking[0]["id"]])) == 1:
        return [Send(ASK, {**subtask_input(state, asking[0]), "reply": reply})]
    return COMMANDS


def make_command_router(route: Callable[[Mapping[str, Any]], list[Send | str] | str]) -> Callable[..., Any]:
    """What follows a command: a run paused for the user pauses again (``route`` asks its question or
    shows its plan anew; a cancelled one is finalized), ``/resume`` continues a run that stopped
    between steps, and otherwise the run ends: a command never starts work by itself."""

    def after_command(state: Mapping[str, Any]) -> list[Send | str] | str:
        resumed = last_command(state) == RESUME and unfinished(state)
        return route(state) if paused(state) or resumed else END

    return after_command


def opening_answers(state: Mapping[str, Any], task: Task) -> str:
    """The feature's opening note: the user's answers so far in this run (`answers_so_far`); "" before any.
    The count of answers says whether there are any without a look at every task (a thread checkpointed before
    the count existed is looked through)."""
    count = state.get("answers")
    if count == 0:
        return ""
    tasks: Mapping[str, Task] = state.get("tasks") or {}
    return answers_so_far(tasks, task) if count or any(t.get("clarifications") for t in tasks.values()) else ""


def ask_user_tool() -> BaseTool:
    """The tool's schema, for binding to the model (the graph answers its calls, never this function)."""

    def ask(question: Any) -> str:
        raise ToolException("ask_user is answered by the graph's ask node")

    return StructuredTool.from_function(ask, name=ASK_USER, description=ASK_USER_DESCRIPTION, args_schema=AskArgs)


class OfferAskUser(Configured):
    """``wrap_model_call``: adds ask_user to the request's tools while the subtask (``request.state["task"]``)
    has questions left under ``max_clarifications``."""

    def __init__(self, config: AgentConfig, tool: BaseTool | None = None):
        self.base_config = config
        self.tool = tool or ask_user_tool()

    def __call__(self, request: Any, handler: Callable) -> Any:
        return handler(self.offered(request))

    async def awrap(self, request: Any, handler: Callable) -> Any:
        return await handler(self.offered(request))

    def offered(self, request: Any) -> Any:
        """``request``, with ask_user among its tools while the subtask may still ask."""
        asked = len(request.state["task"].get("clarifications") or [])
        if self.config.max_clarifications > asked and has_checkpointer():  # without one, nobody can answer
            request = request.override(tools=[*request.tools, self.tool])
        return request


class ScreenQuestions(Configured):
    """``wrap_tool_call``: answers an ask_user call the user need not see (empty, answered before anywhere in the
    run: ``request.state["tasks"]``, over the limit); returns None for one the ask node must put to the user.
    Other calls go on to ``handler``."""

    def __init__(self, config: AgentConfig, tool: BaseTool | None = None):
        self.base_config = config
        self.tool = tool or ask_user_tool()

    def __call__(self, request: Any, handler: Callable) -> Any:
        if request.tool_call.get("name") != ASK_USER:
            return handler(request)
        if not has_checkpointer():  # the run cannot pause: the agent is told so, the run goes on
            return ToolMessage(NO_USER, tool_call_id=request.tool_call.get("id") or "", name=ASK_USER, status="error")
        return screen_question(request.tool_call, request.state["task"], self.config, request.state.get("tasks"))

    async def awrap(self, request: Any, handler: Callable) -> Any:
        if request.tool_call.get("name") != ASK_USER:
            return await handler(request)
        return self(request, handler)  # an ask_user call never reaches ``handler``

    def answered_tools(self) -> list[BaseTool]:
        """Tools whose calls this wrapper answers, for the tools node's list of known tools."""
        return [self.tool] if self.config.max_clarifications else []
