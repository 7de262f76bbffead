"""Reading what models send, leniently. No LangGraph here.

Real models vary: they wrap JSON in markdown fences, send a JSON array where the schema says "JSON
string", answer in content blocks, call a field ``task`` or ``description`` instead of ``content``, write
ids as numbers, or write a tool call's arguments as broken JSON. Everything here accepts those variations
and raises `UnreadableInput`, with a message the model can act on, for the rest. The message helpers
(`message_text`, the tool calls of a window, their repair) read LangChain messages the same way.

Three rules hold everywhere: tool calls written as text, in any format open-weight models use, are read
by one parser (`read_text_calls`); reasoning (``<think>``, reasoning blocks) is never an answer
(`answer_text`, `split_reasoning`); and JSON cut off before it closes is refused (`CutOff`), never read
as the smaller value its first inner object would be.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
)
from pydantic import AliasChoices, Field, WithJsonSchema

from replangraph.names import ASK_USER

MAX_NESTING = 20
MAX_STARTS = 50
"""Opening brackets tried when looking for JSON inside prose."""
MAX_LITERAL_CHARS = 100_000
"""Longest text read as a Python literal (``ast.literal_eval`` is slow on huge input)."""
CONTENT_KEYS = ("content", "task", "description", "instruction", "instructions", "prompt", "query", "text", "title")
AGENT_KEYS = ("agent_type", "agentType", "agent", "type")
LIST_KEYS = ("tasks", "subtasks", "follow_up_tasks", "items", "steps", "plan", "remaining_tasks")
TOOLS_KEYS = ("required_tools", "requiredTools", "tools", "tools_needed", "needed_tools", "required_tool", "tool")
FENCED = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n?(.*?)```", re.S)
THINKING = re.compile(r"<(think|thinking|reasoning)>(.*?)</\1>", re.I | re.S)
THINKING_END = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
THINKING_START = re.compile(r"<(?:think|thinking|reasoning)>", re.I)
JSON_START = re.compile(r"""[\[{]\s*(?:["'{\[\]}\d-]|true\b|false\b|null\b)""")
"""An opening bracket that begins a JSON value (not prose in brackets such as "[see below]")."""
BRACKETS = re.compile(r"""["'\\{}\[\]]""")
BULLET = re.compile(r"^\s*(?:(?:[-*•+]|\d+[.)]|\[[ xX]?\])\s+)+")


class UnreadableInput(ValueError):
    """Input no reading can make sense of; the message says what was expected."""


class CutOff(UnreadableInput):
    """An answer that ends before its JSON does: cut by the output limit, never to be read as a smaller value."""


CUT_OFF = (
    "not valid JSON: it ends before its brackets close, so the answer was cut off (by the output limit, most "
    "likely); answer again, shorter (fewer or shorter items), with nothing around the JSON"
)


def strip_fences(text: str) -> str:
    """The inside of the first markdown code fence that holds JSON, else of the first one, else the text."""
    blocks = [block.strip() for block in FENCED.findall(text)]
    json_like = [block for block in blocks if block[:1] in ("[", "{")]
    return (json_like or blocks or [text.strip()])[0]


def check_nesting(value: Any, limit: int = MAX_NESTING) -> None:
    """UnreadableInput if lists/dicts nest deeper than ``limit`` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth > limit:
                raise UnreadableInput(f"the value nests more than {limit} levels deep; send a flat list")
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)


def load_json(text: str) -> Any:
    """JSON from ``text``: fences stripped, prose around it ignored, and as a last resort a Python
    literal (single quotes, trailing commas: what models write when they think in Python).
    UnreadableInput if nothing parses."""
    body = strip_fences(text)
    error = "no JSON found"
    try:
        return _checked(json.loads(body))
    except json.JSONDecodeError as exc:
        error = str(exc)
    except RecursionError:
        raise UnreadableInput(f"the JSON nests more than {MAX_NESTING} levels deep; send a flat list") from None
    starts = [i for i, char in enumerate(body) if char in "[{"][:MAX_STARTS]
    first = JSON_START.search(body)
    if first and closing_end(body, first.start()) is None:
        raise CutOff(CUT_OFF)
    decoder = json.JSONDecoder()
    for start in starts:  # the first complete JSON value inside prose
        try:
            return _checked(decoder.raw_decode(body, start)[0])
        except (json.JSONDecodeError, RecursionError):
            continue
    if starts and len(body) <= MAX_LITERAL_CHARS:
        end = max(body.rfind("]"), body.rfind("}"))
        try:
            return _checked(ast.literal_eval(body[starts[0] : end + 1]))
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            pass
    raise UnreadableInput(f"not valid JSON ({error})")


def _checked(value: Any) -> Any:
    check_nesting(value)
    return value


def closing_end(text: str, start: int) -> int | None:
    """The index just past the bracket that closes the one at ``start`` (strings in double or single
    quotes skipped), or None when the text ends first: a value cut off."""
    depth, quote, escaped = 0, "", -1
    for found in BRACKETS.finditer(text, start):
        char, at = found.group(), found.start()
        if at == escaped:  # the character after a backslash in a string
            continue
        if quote:
            if char == "\\":
                escaped = at + 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth <= 0:
                return found.end()
    return None


def as_text(value: Any) -> str:
    """A string from whatever a model sent for a text field: a string, content blocks,
    a list of lines, a number or an object (as JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, Mapping):
        if value.get("type") == "text" and isinstance(value.get("text"), str):
            return value["text"]  # one content block (whatever else it carries: citations, cache_control...)
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, list | tuple):
        return "\n".join(part for part in (as_text(item) for item in value) if part)
    return str(value)


def text_lines(text: str) -> list[str]:
    """The items of a list written as text: its bulleted or numbered lines (a heading such as
    "Remaining tasks:" is not an item), or every non-empty line when none is bulleted."""
    lines = [raw for raw in text.splitlines() if raw.strip()]
    bulleted = [raw for raw in lines if BULLET.match(raw)]
    return [BULLET.sub("", raw).strip() for raw in bulleted or lines if BULLET.sub("", raw).strip()]


def list_from(value: Any, what: str, lines: bool = True) -> list:
    """The list a model meant: a list, a JSON (or fenced JSON) string, an object wrapping a list,
    one object, or (when ``lines``) plain text with one item per line."""
    check_nesting(value)
    if isinstance(value, str):
        body = strip_fences(value)
        if body[:1] in ("[", "{"):
            value = load_json(body)
        else:
            embedded = _embedded_task_json(body)
            if embedded is None and not lines:
                raise UnreadableInput(f"`{what}` must be a JSON list of task objects, got plain text")
            if embedded is None:
                items = text_lines(body)
                if not items:
                    raise UnreadableInput(f"`{what}` is empty; give at least one task")
                return items
            value = embedded
    if isinstance(value, Mapping):
        for key in LIST_KEYS:
            if key in value:
                return list_from(value[key], what, lines)
        return [value]
    if isinstance(value, list | tuple):
        return list(value)
    raise UnreadableInput(f"`{what}` must be a list of tasks, got {type(value).__name__}")


def _embedded_task_json(text: str) -> Any:
    """A task list written inside prose ("Here are the tasks: [...]"), or None."""
    try:
        value = load_json(text)
    except UnreadableInput:
        return None
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return value
    if isinstance(value, Mapping) and any(k in value for k in LIST_KEYS):
        return value
    return None


def content_of(item: Mapping[str, Any]) -> str:
    """The instruction of a task object, under whichever usual key the model chose."""
    for key in CONTENT_KEYS:
        text = as_text(item.get(key)).strip()
        if text:
            return text
    return ""


def agent_of(item: Mapping[str, Any]) -> str | None:
    """The agent type a task object asks for, if any."""
    for key in AGENT_KEYS:
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def id_list(value: Any) -> list[str]:
    """Dependency ids from a list, a single id, or a comma-separated string; numbers become strings."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        if value.strip().lower() in ("none", "null", "[]", "-"):
            return []
        if value.strip().startswith("["):
            return id_list(load_json(value))
        return [part.strip() for part in re.split(r"[,;]|\band\b", value) if part.strip()]
    if isinstance(value, list | tuple):
        return [as_text(v).strip() for v in value if as_text(v).strip()]
    return [as_text(value).strip()]


_TOOL_NAME_KEYS = ("name", "tool_name", "toolName", "tool", "function")


def name_list(value: Any) -> list[str]:
    """Names, each once, from a list (each item one name), an object, or one string split on commas,
    lines and ``and`` between spaces (``search-and-replace`` stays one name). Quotes, backticks, a
    trailing ``()``, a ``functions.`` prefix and objects naming a tool (``{"name": ...}``, ``{"tool": ...}``,
    ``{"type": "function", "function": {"name": ...}}``) are read as the name; an object of names
    (``{"read_file": true}``) gives its names. Never raises: what is no name is left out."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = load_json(value)
        except UnreadableInput:
            value = value.strip().strip("[]")
    if isinstance(value, str):
        parts = re.split(r"[,;\n]|\s+and\s+", value)
    elif isinstance(value, Mapping):
        parts = [_tool_name(value)] if any(k in value for k in _TOOL_NAME_KEYS) else _names_in(value)
    else:
        parts = [_tool_name(item) for item in (value if isinstance(value, list | tuple) else [value])]
    names: list[str] = []
    for part in parts:
        name = BULLET.sub("", part).strip().strip("`'\"").strip()
        name = name.removeprefix("functions.").removesuffix("()").strip()
        if name and name.lower() not in ("none", "null", "[]") and name not in names:
            names.append(name)
    return names


def _tool_name(item: Any) -> str:
    """The tool name an item gives: its text, or the name an object holds under a `_TOOL_NAME_KEYS` key."""
    if not isinstance(item, Mapping):
        return as_text(item)
    for key in _TOOL_NAME_KEYS:
        inner = item.get(key)
        if isinstance(inner, Mapping):
            return _tool_name(inner)
        if isinstance(inner, str) and inner.strip():
            return inner
    return ""


def _names_in(mapping: Mapping[str, Any]) -> list[str]:
    """The names an object of names gives: its keys whose value is not a no (``{"read_file": true}``),
    and the names in its list values (``{"required": ["read_file"]}``)."""
    names: list[str] = []
    for key, value in mapping.items():
        if isinstance(value, list | tuple):
            names.extend(name_list(value))
        elif truthy(value) is not False and value is not None:
            names.append(str(key))
    return names


def task_specs(value: Any, what: str = "tasks") -> list[dict[str, Any]]:
    """``[{content, agent_type}]`` from a follow-up task list in any usual shape."""
    specs = []
    for i, item in enumerate(list_from(value, what)):
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, Mapping):
            raise UnreadableInput(f"task {i} must be an object with 'content' or a string, got {type(item).__name__}")
        content = content_of(item)
        if not content:
            keys = ", ".join(map(str, item)) or "none"
            raise UnreadableInput(f"task {i} has no 'content' (keys given: {keys})")
        specs.append({"content": content, "agent_type": agent_of(item)})
    if not specs:
        raise UnreadableInput(f"`{what}` is an empty list; give at least one task")
    return specs


def plan_specs(value: Any) -> list[dict[str, Any]]:
    """``[{id, content, agent_type, depends_on}]`` from a plan in any usual shape; missing ids are numbered.
    A task that names tools (``required_tools``, ``tools``...: see `name_list`) has ``required_tools`` too."""
    specs = []
    for i, item in enumerate(list_from(value, "tasks", lines=False)):
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, Mapping):
            raise UnreadableInput(f"task {i} must be an object, got {type(item).__name__}")
        task_id = as_text(item.get("id", item.get("task_id"))).strip() or str(i + 1)
        depends = next((item[k] for k in ("depends_on", "dependencies", "dependsOn", "depends") if k in item), None)
        spec = {
            "id": task_id,
            "content": content_of(item),
            "agent_type": agent_of(item),
            "depends_on": id_list(depends),
        }
        tools = next((item[k] for k in TOOLS_KEYS if k in item), None)
        if tools is not None:
            spec["required_tools"] = name_list(tools)
        specs.append(spec)
    return specs


def truthy(value: Any) -> bool | None:
    """A yes/no from a bool, a number or words like "yes", "complete", "false"; None if unclear."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    word = as_text(value).strip().lower().strip(".!")
    if word in ("true", "yes", "y", "complete", "completed", "done", "1"):
        return True
    if word in ("false", "no", "n", "incomplete", "not complete", "partial", "partially", "unfinished", "0"):
        return False
    return None


def normalized_name(name: str) -> str:
    """Lower case without spaces, dashes or underscores, for loose name matching."""
    return re.sub(r"[\s_-]+", "", name.lower())


def match_name(name: str, known: Sequence[str]) -> str | None:
    """``name`` itself or the known name it loosely matches (case, spaces, dashes), else None."""
    if name in known:
        return name
    wanted = normalized_name(name)
    return next((k for k in known if normalized_name(k) == wanted), None)


def text_field(description: str, names: tuple[str, ...] = ()) -> Any:
    """A pydantic field shown to the model as a string but accepting any value (lists, blocks, objects)
    under any of ``names``; read it with `as_text`."""
    alias = AliasChoices(*names) if names else None
    return Annotated[Any, WithJsonSchema({"type": "string"}), Field(description=description, validation_alias=alias)]


def parted_thinking(text: str) -> tuple[str, str]:
    """``(answer, reasoning)``: a reasoning model's ``<think>…</think>`` blocks taken out of ``text``. A block
    missing its opening tag ends at ``</think>``; one never closed runs to the end."""
    thoughts: list[str] = []

    def take(found: re.Match) -> str:
        thoughts.append(found.group(2).strip())
        return ""

    answer = THINKING.sub(take, text)
    ends = list(THINKING_END.finditer(answer))
    if ends:
        thoughts.insert(0, answer[: ends[-1].start()].strip())
        answer = answer[ends[-1].end() :]
    opened = THINKING_START.search(answer)
    if opened:
        thoughts.append(answer[opened.end() :].strip())
        answer = answer[: opened.start()]
    return answer.strip(), "\n\n".join(t for t in thoughts if t)


def without_thinking(answer: Any) -> str:
    """The answer without a reasoning model's ``<think>…</think>`` blocks (see `parted_thinking`)."""
    return parted_thinking(as_text(answer))[0]


# --------------------------------------------------------------------------- messages


def message_text(message: BaseMessage) -> str:
    """The text of a message, whether its content is a string or a list of content blocks.

    Like ``BaseMessage.text``, but it also survives odd list items (tool outputs may hold any).
    """
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def answer_text(message: BaseMessage) -> str:
    """What a reply answers: its text (`message_text`: reasoning content blocks are no text) without
    ``<think>`` blocks, stripped. Reasoning is never a result, a summary or a final answer."""
    return without_thinking(message_text(message))


def with_text(content: Any, text: str) -> Any:
    """``content`` with its text replaced by ``text``: a string, or the blocks that are not text plus one text block."""
    if isinstance(content, str):
        return text
    kept = [b for b in content if not isinstance(b, str) and not (isinstance(b, Mapping) and b.get("type") == "text")]
    return [*kept, {"type": "text", "text": text}] if text else kept


def split_reasoning(reply: AIMessage) -> AIMessage:
    """``reply`` with its ``<think>`` blocks out of its text; the removed reasoning goes to
    ``additional_kwargs["reasoning_content"]`` unless the provider put some there already.
    Reasoning content blocks (``{"type": "reasoning"}``, ``"thinking"``) stay where they are: they are no text."""
    text = message_text(reply)
    if not THINKING_START.search(text) and not THINKING_END.search(text):
        return reply
    answer, reasoning = parted_thinking(text)
    kwargs = dict(reply.additional_kwargs)
    if reasoning and not kwargs.get("reasoning_content"):
        kwargs["reasoning_content"] = reasoning
    return reply.model_copy(update={"content": with_text(reply.content, answer), "additional_kwargs": kwargs})


LIMIT_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})
"""Finish reasons that mean the output limit ended the reply (OpenAI, vLLM, llama.cpp, Ollama; Anthropic; Gemini)."""


def cut_by_limit(message: Any) -> bool:
    """Whether the provider says the output limit ended ``message`` (``finish_reason: length`` and kin)."""
    metadata = getattr(message, "response_metadata", None) or {}
    reasons = (metadata.get(k) for k in ("finish_reason", "stop_reason", "done_reason"))
    return any(isinstance(r, str) and r.lower() in LIMIT_REASONS for r in reasons)


def resolve_goal(state: Mapping[str, Any]) -> tuple[str, bool]:
    """The run's goal and whether it came from ``goal`` rather than the messages.

    The last message wins when it is a human message (a new turn of a chat);
    otherwise the ``goal`` key; otherwise the latest human message.
    """
    messages: Sequence[AnyMessage] = convert_to_messages(state.get("messages") or [])
    if messages and isinstance(messages[-1], HumanMessage) and message_text(messages[-1]).strip():
        return message_text(messages[-1]).strip(), False
    goal = str(state.get("goal") or "").strip()
    if goal:
        return goal, True
    for message in reversed(messages):
        if isinstance(message, HumanMessage) and message_text(message).strip():
            return message_text(message).strip(), False
    raise ValueError("replangraph needs a goal: pass a human message in `messages` or a `goal` string")


def all_tool_calls(message: AIMessage) -> list[dict]:
    """A reply's tool calls, unreadable ones included (``type: invalid_tool_call``, ``error``):
    providers count those as calls too, and each needs an answer."""
    return [*message.tool_calls, *message.invalid_tool_calls]


def pending_tool_calls(window: Sequence[AnyMessage]) -> list[dict]:
    """Tool calls of the window's last AI message that no ToolMessage after it answers yet
    (the ask_user calls of a turn wait for the user while its other calls are answered)."""
    answered: set[str] = set()
    for message in reversed(window):
        if isinstance(message, AIMessage):
            return [c for c in all_tool_calls(message) if (c.get("id") or "") not in answered]
        if not isinstance(message, ToolMessage):
            return []
        answered.add(message.tool_call_id)
    return []


def waiting_questions(window: Sequence[AnyMessage]) -> list[dict]:
    """The window's ask_user calls that have no answer yet."""
    return [c for c in pending_tool_calls(window) if c.get("name") == ASK_USER]


def calls_to_run(window: Sequence[AnyMessage]) -> list[dict]:
    """The window's unanswered tool calls that the tools node runs (all but the questions)."""
    return [c for c in pending_tool_calls(window) if c.get("name") != ASK_USER]


def repair_tool_calls(reply: AIMessage, tool_names: Sequence[str]) -> AIMessage:
    """``reply`` with the tool calls a model meant but did not send cleanly.

    Arguments nested absurdly deep are removed (the call is answered with an error).
    Arguments a provider could not parse (fenced JSON, prose around the JSON) are read
    leniently, unless they were cut off. A reply the output limit ended (`cut_by_limit`)
    has its last call marked cut: a streamed call's arguments may have been closed by
    a partial parse. A reply without calls whose text writes them (`read_text_calls`:
    the formats of local servers without a tool parser) gets those calls; the rest of
    its text stays its content. Anything else is left as it was.
    """
    calls, invalid = [], []
    for call in reply.tool_calls:
        try:
            check_nesting(call.get("args"))
            calls.append(call)
        except UnreadableInput as exc:  # kept as it was, the reply could not even be sent back to the model
            invalid.append(invalid_call(call.get("name"), "(removed: nested too deeply)", call.get("id"), str(exc)))
    for bad in reply.invalid_tool_calls:
        try:
            args = load_json(bad.get("args") or "")
        except CutOff:
            invalid.append({**bad, "error": cut_call_error(bad.get("name"))})
            continue
        except UnreadableInput:
            args = None
        if isinstance(args, dict) and bad.get("name"):
            calls.append({"name": bad["name"], "args": args, "id": bad.get("id"), "type": "tool_call"})
        else:
            invalid.append(bad)
    if calls and cut_by_limit(reply):
        last = calls.pop()
        invalid.append(invalid_call(last.get("name"), json.dumps(last.get("args"), default=str), last.get("id")))
    calls = [named_as_known(call, tool_names) for call in calls]
    content = reply.content
    if not calls and not invalid:
        written = read_text_calls(message_text(reply), tool_names)
        if written.calls or written.cut:
            calls, invalid, content = written.calls, written.cut, with_text(content, written.rest)
    calls, invalid = with_ids(calls), with_ids(invalid)
    if calls == reply.tool_calls and invalid == reply.invalid_tool_calls:
        return reply
    return reply.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid, "content": content})


def invalid_call(name: Any, args: str, call_id: Any = None, error: str | None = None) -> dict:
    """An ``invalid_tool_call``; without ``error``, one cut off by the output limit (`cut_call_error`)."""
    error = error or cut_call_error(name)
    return {"name": name, "args": args, "id": call_id, "error": error, "type": "invalid_tool_call"}


CUT_CALL = "cut off by the output limit"


def cut_call_error(name: Any) -> str:
    """The error of a tool call the output limit cut: what the agent reads in the call's error reply."""
    return (
        f"the arguments of this {name or 'tool'} call could not be read: they end before their JSON closes, "
        f"so the call was {CUT_CALL}, most likely. Call it again with shorter arguments (fewer items per "
        "call; split the work over several calls)"
    )


def named_as_known(call: dict, tool_names: Sequence[str]) -> dict:
    """``call`` under the known tool name it spells loosely (``AskUser``, ``ask-user`` for ``ask_user``)."""
    known = match_name(call.get("name") or "", tool_names)
    return call if known in (None, call.get("name")) else {**call, "name": known}


def with_ids(calls: list[dict]) -> list[dict]:
    """Tool calls, each with an id (some local servers send none): the reply must name the call it answers."""
    return [call if call.get("id") else {**call, "id": f"call_{uuid.uuid4().hex[:24]}"} for call in calls]


# --------------------------------------------------------------------------- tool calls written as text

CALL_OPEN = re.compile(
    r"<tool_calls?>|<\|tool_call\|>|<function=(?P<function>[\w.-]+)>|\[TOOL_CALLS\]|<\|python_tag\|>", re.I
)
"""Where a call written as text starts: Qwen/Hermes ``<tool_call>``, Granite/Phi ``<|tool_call|>``, Llama 3.1's
custom ``<function=name>``, Mistral's ``[TOOL_CALLS]``, Llama 3.x's ``<|python_tag|>``."""
CALL_CLOSE = re.compile(r"</tool_calls?>|<\|/tool_call\|>|</function>|<\|eom_id\|>|<\|eot_id\|>|<\|im_end\|>", re.I)
MISTRAL_NAMED = re.compile(r"\s*(?P<name>[\w.-]+)\s*(?:\[CALL_ID\]\s*\S+?\s*)?(?:\[ARGS\])?\s*(?=\{)")
"""Mistral's v11+ form: ``[TOOL_CALLS]name{...}``, or ``name[ARGS]{...}`` when special tokens are kept (a
``[CALL_ID]`` between, sometimes)."""
CODE_FENCE = re.compile(r"```[ \t]*(?:tool_code|tool_call|python|py)[ \t]*\n(?P<body>.*?)```", re.S)
"""A fenced block of Python calls, as Gemma writes them (``tool_code``)."""
EMPTY_FENCE = re.compile(r"```[\w+-]*\s*```")
SEPARATORS = re.compile(r"[\s;,]*")
CALL_HEAD = re.compile(r'[\[{]\s*\{?\s*"(?:name|function)"\s*:\s*(?:\{\s*"name"\s*:\s*)?"(?P<name>[^"]+)"')
"""The start of a JSON tool call, its name read even when the rest was cut off."""
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


@dataclass
class TextCalls:
    """What `read_text_calls` found in a reply's text."""

    calls: list[dict] = field(default_factory=list)
    """The calls of known tools, as LangChain tool calls (ids derived from name, arguments and place)."""
    cut: list[dict] = field(default_factory=list)
    """Calls the text ends inside of, as ``invalid_tool_call``s with a `cut_call_error`."""
    rest: str = ""
    """The text around the calls, stripped."""


def read_text_calls(text: str, tool_names: Sequence[str]) -> TextCalls:
    """The tool calls ``text`` writes, in every format open-weight models use when no server-side parser
    reads them: ``<tool_call>{...}</tool_call>`` (Qwen, Hermes), ``<|tool_call|>``, ``[TOOL_CALLS] [...]`` and
    ``[TOOL_CALLS]name{...}`` (Mistral), ``<|python_tag|>{...}`` (Llama 3.x), ``<function=name>{...}</function>``
    (Llama 3.1), Python calls (``[name(a=1)]``, Llama 3.2; a ``tool_code`` fence, Gemma), and fenced or bare JSON
    objects ``{"name": ..., "arguments"|"parameters": {...}}`` (one, a list, or several). Only names among
    ``tool_names`` (matched loosely) make calls; other text is the `TextCalls.rest`. A call the text ends
    inside of is `TextCalls.cut`, never read as a smaller value. Pure: reasoning must be taken out first."""
    found, spans = TextCalls(), []
    marks = list(CALL_OPEN.finditer(text))
    for i, mark in enumerate(marks):
        if spans and mark.start() < spans[-1][1]:
            continue
        limit = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        close = CALL_CLOSE.search(text, mark.end(), limit)
        start, end = mark.end(), close.start() if close else limit
        name = mark.group("function")
        named = MISTRAL_NAMED.match(text, start, end) if mark.group().upper() == "[TOOL_CALLS]" else None
        if named:
            name, start = named.group("name"), named.end()
        calls, cut, used = _calls_in(text[start:end], tool_names, name)
        if calls or cut is not None:
            spans.append((mark.start(), close.end() if close else start + used))
            _add(found, calls, cut)
    gaps = [(a, b) for (_, a), (b, _) in zip([(0, 0), *spans], [*spans, (len(text), 0)], strict=True)]
    for gap_start, gap_end in gaps:
        spans.extend(_written_in_gap(text, gap_start, gap_end, tool_names, found))
    spans.sort()
    rest = "".join(text[a:b] for (_, a), (b, _) in zip([(0, 0), *spans], [*spans, (len(text), 0)], strict=True))
    found.rest = EMPTY_FENCE.sub("", rest).strip()
    return found


def _written_in_gap(text: str, start: int, end: int, names: Sequence[str], found: TextCalls) -> list[tuple[int, int]]:
    """The spans of the calls written without a marker in ``text[start:end]``: Python calls (the whole text,
    or a ``tool_code`` fence), then JSON objects naming known tools (fenced or bare); added to ``found``."""
    spans: list[tuple[int, int]] = []
    gap = text[start:end]
    whole = _python_calls(strip_fences(gap), names) if gap.strip()[:1] not in ("{", "") else []
    if whole:
        _add(found, whole)
        return [(start, end)]
    for fence in CODE_FENCE.finditer(gap):
        calls = _python_calls(fence.group("body"), names)
        if calls:
            _add(found, calls)
            spans.append((start + fence.start(), start + fence.end()))
    position, tried = 0, 0
    while tried < MAX_STARTS and (opening := JSON_START.search(gap, position)):
        at, tried = opening.start(), tried + 1
        if any(a <= start + at < b for a, b in spans):
            position = at + 1
            continue
        stop = closing_end(gap, at)
        if stop is None:  # the text ends inside it: a cut call when it names a known tool
            head = CALL_HEAD.match(gap, at)
            if head and match_name(head.group("name"), names):
                _add(found, [], head.group("name"))
                spans.append((start + at, end))
                break
            position = at + 1
            continue
        try:
            value = load_json(gap[at:stop])
        except CutOff:
            head = CALL_HEAD.match(gap, at)
            if head and match_name(head.group("name"), names):
                _add(found, [], head.group("name"))
                spans.append((start + at, start + stop))
            value = None
        except UnreadableInput:
            position = at + 1
            continue
        try:
            calls = _call_items(value, names, need_args=True)
        except UnreadableInput:
            calls = None
        if calls:
            _add(found, calls)
            spans.append((start + at, start + stop))
        position = stop  # a whole value, call or not: nothing inside it is read as a call of its own
    return spans


def _calls_in(body: str, names: Sequence[str], name: str | None) -> tuple[list[tuple[str, dict]], str | None, int]:
    """``(calls, cut, characters used)`` of the text after a call marker: with ``name`` (``<function=name>``,
    ``[TOOL_CALLS]name[ARGS]``) its arguments object; else JSON calls (one, a list, several separated by
    ``;``/``,``) or Python calls. ``cut``: the name (maybe "") of a call the body ends inside of, else None."""
    calls: list[tuple[str, dict]] = []
    position = SEPARATORS.match(body).end()
    if name is not None:
        known = match_name(name, names)
        if known is None:
            return [], None, 0
        if position == len(body):
            return [(known, {})], None, len(body)
        stop = closing_end(body, position) if body[position] == "{" else position
        if stop is None:
            return [], known, len(body)
        try:
            args = load_json(body[position:stop])
        except CutOff:
            return [], known, len(body)
        except UnreadableInput:
            return [], None, 0
        return ([(known, dict(args))], None, stop) if isinstance(args, Mapping) else ([], None, 0)
    while position < len(body) and body[position] in "[{":
        stop = closing_end(body, position)
        head = CALL_HEAD.match(body, position)
        cut_name = (match_name(head.group("name"), names) or head.group("name")) if head else ""
        if stop is None:
            return calls, cut_name, len(body)
        try:
            items = _call_items(load_json(body[position:stop]), names, need_args=False)
        except CutOff:
            return calls, cut_name, len(body)
        except UnreadableInput:
            items = None
        if not items:
            break
        calls.extend(items)
        position = SEPARATORS.match(body, stop).end()
    if not calls and (python := _python_calls(body.strip(), names)):
        return python, None, len(body)
    return calls, None, position


def _call_items(value: Any, names: Sequence[str], need_args: bool) -> list[tuple[str, dict]] | None:
    """``[(name, arguments)]`` when ``value`` is a call of a known tool or a list of them, else None.
    ``{"name", "arguments"|"parameters"|"args"|"input"}``, and ``{"function": {...}}`` around it; arguments
    may be a JSON string. ``need_args``: an object without arguments is no call (bare JSON in prose)."""
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        if not isinstance(item, Mapping):
            return None
        inner = item["function"] if isinstance(item.get("function"), Mapping) else item
        name = inner.get("name")
        key = next((k for k in ARGUMENT_KEYS if k in inner), None)
        known = match_name(name.strip(), names) if isinstance(name, str) else None
        if known is None or (key is None and need_args):
            return None
        args = inner[key] if key else {}
        if isinstance(args, str):
            args = load_json(args) if args.strip() else {}
        if not isinstance(args, Mapping | None):
            return None
        calls.append((known, dict(args or {})))
    return calls or None


def _python_calls(text: str, names: Sequence[str]) -> list[tuple[str, dict]]:
    """``[(name, arguments)]`` from Python calls with keyword arguments: ``name(a=1)``, ``[f(a=1), g(b=2)]``,
    ``name.call(a=1)`` (Llama's built-in tools); [] unless every call names a known tool."""
    if not text or len(text) > MAX_LITERAL_CHARS or "(" not in text:
        return []
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    calls = []
    for node in tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]:
        if not isinstance(node, ast.Call) or node.args:
            return []
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "call" and isinstance(func.value, ast.Name):
            func = func.value
        known = match_name(func.id, names) if isinstance(func, ast.Name) else None
        try:
            args = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            return []
        if known is None:
            return []
        calls.append((known, args))
    return calls


def _add(found: TextCalls, calls: list[tuple[str, dict]], cut: str | None = None) -> None:
    """Adds ``calls`` (and the ``cut`` one) to ``found``, with ids derived from name, arguments and place."""
    for name, args in calls:
        place = len(found.calls) + len(found.cut)
        digest = hashlib.sha1(json.dumps([name, args, place], sort_keys=True, default=str).encode()).hexdigest()[:12]
        found.calls.append({"name": name, "args": args, "id": f"call_text_{digest}", "type": "tool_call"})
    if cut is not None:
        digest = hashlib.sha1(f"{cut}:{len(found.calls) + len(found.cut)}".encode()).hexdigest()[:12]
        found.cut.append(invalid_call(cut, "(cut off)", f"call_cut_{digest}"))


def calls_written_as_text(text: str, tool_names: Sequence[str]) -> list[dict]:
    """The calls of known tools ``text`` writes (see `read_text_calls`), else []."""
    return read_text_calls(text, tool_names).calls


def ends_with_answer(window: Sequence[AnyMessage] | None) -> bool:
    """Whether a window ends with a model reply that calls no tool: a final answer."""
    last = window[-1] if window else None
    return isinstance(last, AIMessage) and not all_tool_calls(last)


def answers_waiting(tasks: Mapping[str, Any], windows: Mapping[str, Sequence[AnyMessage]]) -> list[str]:
    """Ids of running subtasks whose window ends with a final answer waiting for the completion check."""
    return [
        tid
        for tid, window in windows.items()
        if tid in tasks and tasks[tid]["status"] == "in_progress" and ends_with_answer(window)
    ]
