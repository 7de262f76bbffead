"""Fitting requests to the model's window without losing text. No LangGraph here.

The context monitor (`replangraph.context.window_monitor`) counts a request's tokens against the window. Whatever
is cut from a request is kept
elsewhere under an *output id*, and the cut text says so in a note that names the omitted range: agents read
it back with ``read_output``; one-shot requests (planner, replanner, verifier) only say where it is kept.
A subtask's opening window (its prompt, rules, goal and inputs) is fitted here too, its instructions never cut.
A tool call's long arguments are cut here (`cut_args`); the cutting of text itself (excerpts, notes) is in
`replangraph.context.excerpts`, which runs only when something is too long."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from replangraph.context.excerpts import (  # the cutting itself; fair_shares: importable here as before
    excerpt,
    fair_shares,
)
from replangraph.context.window_monitor import ContextMonitor
from replangraph.llm.reading import message_text

logger = logging.getLogger(__name__)


R = TypeVar("R")


T = TypeVar("T")


GOAL_ID = "goal"


PLAN_ID = "plan"


RESULTS_ID = "results"
"""The output id of every result and partial result of the queue, whole, in plan order (read, not kept)."""


RESULT_KEY = "result"


KEPT = "replangraph_kept"
"""``response_metadata`` key marking a message whose full text is kept under the output id it holds.

Notes are found by this marker, not by their text, so a tool output that merely
quotes a note is still saved like any other."""


def result_id(task_id: str) -> str:
    """Output id of a subtask's result (read from the queue itself)."""
    return f"{task_id}/{RESULT_KEY}"


def output_id(task_id: str, key: str) -> str:
    """Output id of text saved for a subtask under ``key`` (a tool call id, ``history-2``, ...)."""
    return f"{task_id}/{key}"


@dataclass
class Fitted(Generic[R]):
    """A request built from parts, some of them shown as excerpts."""

    request: R
    cut: list[str] = field(default_factory=list)
    """Names of the parts shown as excerpts."""
    fits: bool = True


def fit_parts(
    parts: Mapping[str, str],
    build: Callable[[Mapping[str, str]], R],
    fits: Callable[[R], bool],
    outputs: Mapping[str, str],
    *,
    readable: bool = True,
    floor: int = 300,
) -> Fitted[R]:
    """``build(parts)``, with the largest part halved (as an excerpt kept under ``outputs[name]``)
    until the request fits. Parts missing from ``outputs`` are never cut."""
    shown = dict(parts)
    cut: list[str] = []
    spent: set[str] = set()  # parts that cannot get any shorter
    request = build(shown)
    while not fits(request):
        candidates = [(len(shown[n]), n) for n in outputs if n in shown and n not in spent and len(shown[n]) > floor]
        if not candidates:
            return Fitted(request, cut, fits=False)
        size, name = max(candidates)
        shorter = excerpt(parts[name], max(size // 2, floor), outputs[name], readable)
        if len(shorter) >= size:
            spent.add(name)
            continue
        shown[name] = shorter
        if name not in cut:
            cut.append(name)
        request = build(shown)
    return Fitted(request, cut)


def unique_key(base: str, taken: Callable[[str], bool]) -> str:
    """``base``, or ``base~2``, ``base~3`` ... the first key not ``taken`` (kept text is written once)."""
    key, n = base, 1
    while taken(key):
        n += 1
        key = f"{base}~{n}"
    return key


def message_key(message: AnyMessage) -> str:
    """Base key for a message's full text: its tool call id, else a digest of its text."""
    if isinstance(message, ToolMessage) and message.tool_call_id:
        return message.tool_call_id
    return "message-" + hashlib.sha1(message_text(message).encode()).hexdigest()[:12]


def kept_id(message: AnyMessage) -> str | None:
    """The output id a message's full text is kept under, if it was cut or dropped by replangraph."""
    return (message.response_metadata or {}).get(KEPT)


def mark_kept(message: AnyMessage, content: str, ident: str) -> AnyMessage:
    """``message`` showing ``content``, marked as kept in full under ``ident``."""
    metadata = {**(message.response_metadata or {}), KEPT: ident}
    return message.model_copy(update={"content": content, "response_metadata": metadata})


def json_pairs(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each key and value of a tool call's arguments as JSON text (keys as text, as JSON writes them)."""
    dumps = json.dumps
    return [(dumps(str(k), ensure_ascii=False), dumps(v, ensure_ascii=False, default=str)) for k, v in args.items()]


def args_text(args: Any) -> str:
    """A tool call's arguments as JSON text (arguments written as text: that text)."""
    if isinstance(args, str):
        return args
    if isinstance(args, Mapping):
        return "{" + ", ".join(f"{k}: {v}" for k, v in json_pairs(args)) + "}"
    return json.dumps(args, ensure_ascii=False, default=str)


ARGS_FLOOR = 300
"""Fewest characters a cut argument value is shown in."""


def cut_args(args: Any, limit: int, ident: str) -> tuple[Any, str]:
    """``(arguments within about limit characters, the whole arguments' text to keep under ident)``.

    An object keeps its keys: its small values stay whole, the largest become excerpts of their JSON text
    whose notes name the range in the kept text (`excerpt`); arguments written as text (an unreadable
    call's) become an excerpt. Arguments within ``limit`` come back as they are."""
    whole = args_text(args)
    if len(whole) <= limit:
        return args, whole
    if not isinstance(args, Mapping):
        shown = excerpt(whole, limit, ident)
        return (shown if isinstance(args, str) else {"arguments": shown}), whole
    pairs = json_pairs(args)
    keys, values = [k for k, _ in pairs], [v for _, v in pairs]
    starts, at = [], 1  # where each value starts in ``whole``
    for key, value in pairs:
        starts.append(at + len(key) + 2)
        at += len(key) + len(value) + 4
    shown = list(args.values())
    limits = fair_shares([len(v) for v in values], limit - sum(len(k) + 4 for k in keys), ARGS_FLOOR)
    for index, (value, most) in enumerate(zip(values, limits, strict=True)):
        if len(value) > most:
            shown[index] = excerpt(value, most, ident, at=starts[index], total=len(whole))
    return dict(zip(args, shown, strict=True)), whole


def with_cut_args(message: AIMessage, cut: Mapping[str, Any]) -> AIMessage:
    """``message`` with the arguments of the calls in ``cut`` (call id -> arguments) replaced, wherever the
    message holds them (its tool calls, unreadable calls, a provider's raw calls and content blocks), and
    without its usage figures (they counted the whole arguments)."""

    def raw(call: Mapping[str, Any]) -> Mapping[str, Any]:
        if call.get("id") not in cut or not isinstance(call.get("function"), Mapping):
            return call
        args = cut[call["id"]]
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return {**call, "function": {**call["function"], "arguments": text}}

    def block(item: Any) -> Any:
        if not isinstance(item, Mapping) or item.get("id") not in cut:
            return item
        field_name = next((f for f in ("input", "args", "arguments") if f in item), None)
        return {**item, field_name: cut[item["id"]]} if field_name else item

    extra = dict(message.additional_kwargs)
    if isinstance(extra.get("tool_calls"), list):
        extra["tool_calls"] = [raw(c) for c in extra["tool_calls"]]
    update = {
        "tool_calls": [{**c, "args": cut[c["id"]]} if c.get("id") in cut else c for c in message.tool_calls],
        "invalid_tool_calls": [
            {**c, "args": cut[c["id"]]} if c.get("id") in cut else c for c in message.invalid_tool_calls
        ],
        "additional_kwargs": extra,
        "usage_metadata": None,
    }
    if isinstance(message.content, list):
        update["content"] = [block(item) for item in message.content]
    return message.model_copy(update=update)


def cut_call_args(
    message: AIMessage, answered: set[str], limit: int, task_id: str, taken: Callable[[str], bool] = lambda key: False
) -> tuple[AIMessage, dict[str, str]]:
    """``(message, whole arguments to keep by key)``: the arguments of each ``answered`` call (by id) over
    ``limit`` characters cut (`cut_args`), the whole kept under ``{call id}-args``; the call stays a valid
    record of what was sent, and its notes say how to read the rest (``read_output``)."""
    cut: dict[str, Any] = {}
    kept: dict[str, str] = {}
    for call in [*message.tool_calls, *message.invalid_tool_calls]:
        call_id = call.get("id") or ""
        if call_id not in answered:
            continue
        args = call.get("args")
        if len(args_text(args)) <= limit:
            continue
        key = unique_key(f"{call_id}-args", lambda k: taken(k) or k in kept)
        cut[call_id], kept[key] = cut_args(args, limit, output_id(task_id, key))
    return (with_cut_args(message, cut) if cut else message), kept


def cut_answered_args(
    task_id: str,
    window: Sequence[AnyMessage],
    replies: Sequence[ToolMessage],
    limit: int,
    taken: Callable[[str], bool],
    cut: dict[str, str],
) -> list[AnyMessage]:
    """``window`` with the arguments of its last turn's answered calls that are longer than
    ``limit`` characters cut, like long outputs (`cut_call_args`); their whole text goes to ``cut``
    (``taken``: whether a key holds kept text, ``cut``'s included)."""
    window = list(window)
    at = next((i for i in range(len(window) - 1, -1, -1) if isinstance(window[i], AIMessage)), None)
    if at is None:
        return window
    answered = {r.tool_call_id for r in replies}
    window[at], whole = cut_call_args(window[at], answered, limit, task_id, taken)
    cut.update(whole)
    return window


def schema_tools(schema: Any) -> list[dict]:
    """A structured-output schema as the tool the model is bound to, for counting."""
    return [convert_to_openai_tool(schema)]


def fit_request(
    parts: Mapping[str, str],
    build: Callable[[Mapping[str, str]], list[AnyMessage]],
    outputs: Mapping[str, str],
    monitor: ContextMonitor,
    *,
    tools: list[dict] | None = None,
    budget: int | None = None,
) -> Fitted[list[AnyMessage]]:
    """``build(parts)`` within ``budget`` tokens (default: the monitor's), the largest cuttable part
    shown as an excerpt with a note saying it is kept under ``outputs[name]``."""
    tools = tools or []
    limit = monitor.budget if budget is None else budget
    return fit_parts(parts, build, lambda request: monitor.fits(request, tools, limit), outputs, readable=False)


SUBTASK_TEMPLATE = """\
Overall goal: {goal}

Your subtask ({task_id}): {content}"""


DEPENDENCIES_HEADER = "Results of the subtasks this one builds on:"


def subtask_text(
    goal: str,
    task_id: str,
    content: str,
    dependencies: Sequence[tuple[str, str, str]],
    notes: Sequence[str] = (),
) -> str:
    """The human message that opens a subtask window. ``dependencies``: (id, content, result); ``notes``: what
    features add at its end (`replangraph.features.Feature.opening_note`)."""
    text = SUBTASK_TEMPLATE.format(goal=goal, task_id=task_id, content=content)
    if dependencies:
        lines = [f"- {dep_id} ({dep_content}):\n{result}" for dep_id, dep_content, result in dependencies]
        text += "\n\n" + DEPENDENCIES_HEADER + "\n" + "\n".join(lines)
    return "\n\n".join([text, *notes])


READ_OUTPUT_MENTION = "read_output(output_id="


OPENING_SHARE = 0.5
"""Most of the request budget an opening window may take when its inputs must be cut: the rest is room to work."""


def opening_window(
    system: str,
    payload: Mapping[str, Any],
    tokens: Callable[[list[AnyMessage]], int],
    budget: int,
) -> Fitted[list[AnyMessage]]:
    """The ``system`` prompt (the executor's: its agent type's prompt and the rules, see
    ``replangraph.nodes.execution.prompts``), then the goal, the subtask, its dependencies' results and the
    features' notes (the payload's ``notes``).

    When the opening is over ``budget`` tokens, the largest of the goal and the
    dependency results are shown as excerpts, whose notes say how to read the rest
    (``read_output``), until it takes at most `OPENING_SHARE` of the budget (or, when
    that cannot be reached, the whole budget). The system prompt, the subtask's own
    instructions and the features' notes are never cut.
    """
    task = payload["task"]
    dependencies = list(payload.get("dependencies") or [])
    notes = [note for note in payload.get("notes") or [] if note]
    parts = {GOAL_ID: payload.get("goal", "")}
    outputs = {GOAL_ID: GOAL_ID}
    for dep in dependencies:
        parts[f"dep:{dep['id']}"] = dep.get("result") or ""
        outputs[f"dep:{dep['id']}"] = result_id(dep["id"])
    system_message = SystemMessage(system)

    def build(shown: Mapping[str, str]) -> list[AnyMessage]:
        inputs = [(d["id"], d["content"], shown[f"dep:{d['id']}"]) for d in dependencies]
        return [system_message, HumanMessage(subtask_text(shown[GOAL_ID], task["id"], task["content"], inputs, notes))]

    full = build(parts)
    if tokens(full) <= budget:
        return Fitted(full)
    roomy = fit_parts(parts, build, lambda w: tokens(w) <= budget * OPENING_SHARE, outputs)
    return roomy if roomy.fits else fit_parts(parts, build, lambda w: tokens(w) <= budget, outputs)


def mentions_read_output(window: Sequence[AnyMessage]) -> bool:
    """Whether anything in the window points at kept text (so the agent needs ``read_output``): a
    message's text, or the arguments of a tool call cut in the window (their values' text)."""
    return any(READ_OUTPUT_MENTION in message_text(m) or READ_OUTPUT_MENTION in cut_args_text(m) for m in window)


def cut_args_text(message: AnyMessage) -> str:
    """The text values of an AI message's tool-call arguments (where a cut call's notes are), or ""."""
    if not isinstance(message, AIMessage):
        return ""
    found = [c["args"] for c in message.invalid_tool_calls if isinstance(c.get("args"), str)]
    found += [v for c in message.tool_calls if isinstance(c.get("args"), dict) for v in c["args"].values()]
    return "\n".join(v for v in found if isinstance(v, str))
