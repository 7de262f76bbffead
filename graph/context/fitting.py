"""Fitting requests to the model's window without losing text. No LangGraph here.

The context monitor counts a request's tokens against the window. Whatever is cut from a request is kept
elsewhere under an *output id*, and the cut text says so in a note that names the omitted range: agents read
it back with ``read_output``; one-shot requests (planner, replanner, verifier) only say where it is kept.
A subtask's opening window (its prompt, rules, goal and inputs) is fitted here too, its instructions never cut.
What each model's endpoint told about itself is kept here per model (`LearnedByModel`), and a tool call's long
arguments are cut here (`cut_args`); the cutting of text itself (excerpts, notes) is in
`replangraph.context.excerpts`, which runs only when something is too long."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_core.utils.pydantic import model_json_schema

from replangraph.config import AgentConfig
from replangraph.context.excerpts import (  # the cutting itself; fair_shares: importable here as before
    excerpt,
    fair_shares,
)
from replangraph.llm.bounds import endpoint_url
from replangraph.llm.errors import overflow_sizes
from replangraph.llm.reading import message_text
from replangraph.run_config import Configured

logger = logging.getLogger(__name__)

TokenCounter = Callable[[Sequence[AnyMessage], Sequence[Any]], int]
DEFAULT_CONTEXT_WINDOW = 200_000


def approximate_tokens(messages: Sequence[AnyMessage], tools: Sequence[BaseTool | dict] = ()) -> int:
    """Offline token estimate of a request: messages plus tool schemas (LangChain's
    ``count_tokens_approximately``, the same count, with each tool's schema measured once: `schema_chars`)."""
    tools = list(tools)
    if not tools:
        return count_tokens_approximately(messages)
    chars = [schema_chars(tool) for tool in tools]
    if None in chars:  # a kind of tool only LangChain measures
        return count_tokens_approximately(messages, tools=tools)
    return count_tokens_approximately(messages) + math.ceil(sum(chars) / CHARS_PER_TOKEN)  # type: ignore[arg-type]


CHARS_PER_TOKEN = 4.0
"""``count_tokens_approximately``'s default."""
_schema_chars: dict[int, tuple[Any, str, str | None, int]] = {}
"""By ``id`` of a tool's ``tool_call_schema`` class: that class (held, so the id stays its own), the tool's
name and description, and the length of the JSON LangChain counts for it."""
SCHEMA_CACHE_SIZE = 1_024


def schema_chars(tool: Any) -> int | None:
    """Characters ``count_tokens_approximately`` counts for one tool: the JSON of its name, description and
    parameters. A `BaseTool` is measured once per schema class (LangChain keeps that class until the tool's
    name, description or arguments change); a dict each time; None for anything else."""
    if isinstance(tool, dict):
        return len(json.dumps(tool))
    if not isinstance(tool, BaseTool):
        return None
    schema = tool.tool_call_schema
    if isinstance(schema, dict):  # built anew on each read
        return len(json.dumps(tool_schema_dict(tool, schema)))
    known = _schema_chars.get(id(schema))
    if known is not None and known[0] is schema and known[1] == tool.name and known[2] == tool.description:
        return known[3]
    chars = len(json.dumps(tool_schema_dict(tool, schema)))
    if len(_schema_chars) >= SCHEMA_CACHE_SIZE:
        _schema_chars.clear()
    _schema_chars[id(schema)] = (schema, tool.name, tool.description, chars)
    return chars


def tool_schema_dict(tool: BaseTool, schema: Any) -> dict[str, Any]:
    """The dict ``count_tokens_approximately`` measures for ``tool``: name, description, parameters (the
    schema's own title and description left out, as they repeat the tool's)."""
    parameters = dict(schema) if isinstance(schema, dict) else dict(model_json_schema(schema))
    parameters.pop("title", None)
    parameters.pop("description", None)
    return {"name": tool.name, "description": tool.description, "parameters": parameters}


CALIBRATION_TOLERANCE = 0.1
"""An approximate count within this share of the endpoint's own is left as it is."""
CALIBRATION_RANGE = (0.25, 4.0)
CALIBRATION_WEIGHT = 0.25
"""How far each new count moves the ratio toward its own (the first sets it): parallel replies that differ
a little (a different mix of code and prose) nudge it instead of throwing it away."""


@dataclass
class Learned:
    """What one model's endpoint told about itself. Updated under its lock, as parallel branches report."""

    window: int | None = None
    """The context window a provider's overflow error named (smaller than the configured one)."""
    ratio: float | None = None
    """The running ratio of the endpoint's token count over the approximate count of the same request."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def narrow(self, window: int) -> None:
        """Remember ``window`` unless a smaller one is already known."""
        with self.lock:
            self.window = min(self.window or window, window)

    def count(self, ratio: float) -> None:
        """Move the running ratio `CALIBRATION_WEIGHT` of the way toward ``ratio`` (kept in `CALIBRATION_RANGE`)."""
        low, high = CALIBRATION_RANGE
        ratio = min(max(ratio, low), high)
        with self.lock:
            self.ratio = ratio if self.ratio is None else self.ratio + (ratio - self.ratio) * CALIBRATION_WEIGHT

    @property
    def scale(self) -> float | None:
        """The ratio to scale approximate counts by; None while it is within `CALIBRATION_TOLERANCE` of 1."""
        ratio = self.ratio
        return None if ratio is None or abs(ratio - 1) <= CALIBRATION_TOLERANCE else ratio


def model_context_window(model: Any) -> int | None:
    """``max_input_tokens`` from a chat model's profile, if it has one."""
    profile = getattr(model, "profile", None) or {}
    value = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    return int(value) if value else None


def model_key(model: Any) -> tuple:
    """Which model an entry of `LearnedByModel` describes: its class, base URL and model name when it has a
    name, else the object itself (``id``)."""
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    if not isinstance(name, str) or not name:
        return ("object", id(model))
    url = endpoint_url(model) or str(getattr(model, "base_url", None) or "")
    return (type(model).__name__, url, name)


class LearnedByModel:
    """One `Learned` per model (`model_key`), for every monitor of a compiled graph.

    An entry describes a model's server, not anyone's data, so the graph's threads and runs share it: an
    overflow in one run narrows that model's window for the next. A model never sees another's entry."""

    def __init__(self) -> None:
        self.entries: dict[tuple, Learned] = {}
        self.lock = threading.Lock()

    def of(self, model: Any) -> Learned:
        """``model``'s entry, made on first use."""
        with self.lock:
            return self.entries.setdefault(model_key(model), Learned())


class ContextMonitor(Configured):
    """Counts request tokens against the effective window (context window minus reserved output).

    Every phase (planner, executor, compressor, summarizer, verifier, replanner,
    finalizer) measures its requests with the same counter; `for_model` gives a
    monitor for another model. The figures follow the run's settings, and what the
    model's endpoint said (`learn_overflow`, `observe`), kept per model in ``memory``:
    the window its overflow error named, and how its own token counts compare with
    the approximate counter's.
    """

    def __init__(
        self,
        config: AgentConfig,
        model: Any = None,
        counter: TokenCounter | None = None,
        memory: LearnedByModel | None = None,
    ):
        self.base_config = config
        self.model = model
        self.model_window = model_context_window(model)
        self.counter = counter or approximate_tokens
        self.memory = memory or LearnedByModel()
        self.learned = self.memory.of(model)

    @property
    def context_window(self) -> int:
        """Input tokens the model accepts: ``context_window``, else the model's profile, else 200,000; the
        window the model's overflow error named when that is smaller."""
        window = self.config.context_window or self.model_window or DEFAULT_CONTEXT_WINDOW
        learned = self.learned.window
        return min(window, learned) if learned else window

    def learn_overflow(self, exc: BaseException | str, estimated: int | None = None) -> bool:
        """Take what a provider's overflow error names: its window (remembered for this model for the rest of
        the graph's life), and the refused prompt's size by its count, against ``estimated`` (our count of
        it). Whether the window was learned."""
        window, refused = overflow_sizes(exc)
        if refused and estimated:
            self.calibrate(estimated, refused)
        if window and window < self.context_window:
            logger.info(
                "the provider's error names a context window of %d tokens (was %d)", window, self.context_window
            )
            self.learned.narrow(window)
            return True
        return False

    def calibrate(self, estimated: int, actual: int) -> None:
        """Count ``actual / estimated`` (the endpoint's count of a request over ours) into the model's running
        ratio (`Learned.count`); nothing for a counter of the user's."""
        if self.counter is not approximate_tokens or estimated <= 0 or actual <= 0:
            return
        self.learned.count(actual / estimated)

    def observe(self, messages: Sequence[AnyMessage], tools: Sequence[Any], reply: Any) -> None:
        """Calibrate from a reply's ``usage_metadata`` (``input_tokens``) to the request ``messages`` + ``tools``."""
        usage = getattr(reply, "usage_metadata", None) or {}
        if usage.get("input_tokens") and isinstance(messages, Sequence) and not isinstance(messages, str):
            self.calibrate(approximate_tokens(list(messages), tools), usage["input_tokens"])

    def approximate(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> int:
        """The approximate count, scaled by the calibration."""
        count = approximate_tokens(messages, tools)
        scale = self.learned.scale
        return round(count * scale) if scale else count

    @property
    def reserved_output(self) -> int:
        """Tokens kept for the answer; a small window keeps at least three quarters for the request."""
        return min(self.config.reserved_output, self.context_window // 4)

    @property
    def effective_window(self) -> int:
        return max(self.context_window - self.reserved_output, 1)

    @property
    def threshold(self) -> float:
        return self.config.compress_threshold

    def for_model(self, model: Any) -> ContextMonitor:
        """A monitor with this one's counter and memory for ``model``: its profile's window (``context_window``
        still wins) and what its endpoint said."""
        if model is None or model is self.model:
            return self
        return ContextMonitor(self.base_config, model, self.counter, self.memory)

    def tokens(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> int:
        """Tokens the request would use.

        With the default counter, the latest model reply's ``usage_metadata`` is
        preferred: its input and output tokens plus an estimate of what came after;
        estimates are scaled by the calibration (`calibrate`).
        """
        if self.counter is approximate_tokens:
            for index in range(len(messages) - 1, -1, -1):
                usage = getattr(messages[index], "usage_metadata", None)
                if usage and usage.get("input_tokens"):
                    later = self.approximate(messages[index + 1 :]) if index + 1 < len(messages) else 0
                    return usage["input_tokens"] + usage.get("output_tokens", 0) + later
            return self.approximate(messages, tools)
        return self.counter(messages, tools)

    def usage(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> float:
        """Tokens over the effective window."""
        return self.tokens(messages, tools) / self.effective_window

    def over_threshold(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> bool:
        """Whether the request would pass ``compress_threshold``."""
        return bool(messages) and self.usage(messages, tools) > self.threshold

    def fits(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = (), budget: int | None = None) -> bool:
        """Whether the request stays within ``budget`` (default: the compression threshold)."""
        return self.tokens(messages, tools) <= (self.budget if budget is None else budget)

    @property
    def budget(self) -> int:
        """Most tokens a request may use before compression."""
        return int(self.effective_window * self.threshold)


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
