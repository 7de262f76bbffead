"""Reading what models send, leniently. No LangGraph here.

Real models vary: they wrap JSON in markdown fences, send a JSON array where the schema says "JSON
string", answer in content blocks, call a field ``task`` or ``description`` instead of ``content``, write
ids as numbers, or write a tool call's arguments as broken JSON. Everything here accepts those variations
and raises `UnreadableInput`, with a message the model can act on, for the rest. The message helpers
(`message_text`, the tool calls of a window, their repair) read LangChain messages the same way.

Three rules hold everywhere: tool calls written as text, in any format open-weight models use, are read
by one parser (`replangraph.llm.formats.read_text_calls`); reasoning (``<think>``, reasoning blocks) is never an answer
(`answer_text`, `split_reasoning`); and JSON cut off before it closes is refused (`CutOff`), never read
as the smaller value its first inner object would be.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
)
from pydantic import AliasChoices, Field, ValidationError, WithJsonSchema

from replangraph.llm.formats import (
    JSON_START,
    cut_call_error,
    embedded_task_json,
    invalid_call,
    load_json,
    name_list,
    read_text_calls,
    strip_fences,
    text_lines,
)
from replangraph.llm.lenient import (  # the basics every reader shares, importable here as before
    LIST_KEYS,
    CutOff,
    UnreadableInput,
    as_text,
    check_nesting,
    match_name,
)
from replangraph.names import ASK_USER

CONTENT_KEYS = ("content", "task", "description", "instruction", "instructions", "prompt", "query", "text", "title")
AGENT_KEYS = ("agent_type", "agentType", "agent", "type")
TOOLS_KEYS = ("required_tools", "requiredTools", "tools", "tools_needed", "needed_tools", "required_tool", "tool")
THINKING = re.compile(r"<(think|thinking|reasoning)>(.*?)</\1>", re.I | re.S)
THINKING_END = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
THINKING_START = re.compile(r"<(?:think|thinking|reasoning)>", re.I)


def list_from(value: Any, what: str, lines: bool = True) -> list:
    """The list a model meant: a list, a JSON (or fenced JSON) string, an object wrapping a list,
    one object, or (when ``lines``) plain text with one item per line."""
    check_nesting(value)
    if isinstance(value, str):
        body = strip_fences(value)
        if body[:1] in ("[", "{"):
            value = load_json(body)
        else:
            embedded = embedded_task_json(body)
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


def task_specs(value: Any, what: str = "tasks", lines: bool = True) -> list[dict[str, Any]]:
    """``[{content, agent_type}]`` from a follow-up task list in any usual shape (plain text, one task a line,
    only with ``lines``: a reading of prose, the text policy's)."""
    specs = []
    for i, item in enumerate(list_from(value, what, lines)):
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


def text_field(description: str, names: tuple[str, ...] = ()) -> Any:
    """A pydantic field shown to the model as a string but accepting any value (lists, blocks, objects)
    under any of ``names``; read it with `as_text`."""
    alias = AliasChoices(*names) if names else None
    return Annotated[Any, WithJsonSchema({"type": "string"}), Field(description=description, validation_alias=alias)]


def bad_arguments(error: ValidationError) -> str:
    """The agent-facing message for arguments that do not match a tool's schema (the toolkit's, the file tools')."""
    problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors())
    return f"Error: invalid arguments ({problems}). Nothing was changed; call the tool again with valid arguments."


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

    Like ``BaseMessage.text``, but it also survives odd list items (tool outputs may hold any). The items of a
    tool output's list (a tool that returns ``["alpha", "beta"]``, an MCP tool's text blocks) are values of their
    own: they are joined as lines, never run together.
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
    return ("\n" if isinstance(message, ToolMessage) else "").join(parts)


def is_cut_json(text: str) -> bool:
    """Whether ``text`` is no answer but structured output cut off: JSON (fenced or not) that opens at its start and
    ends before its brackets close (`CutOff`). Prose, valid JSON and prose in brackets are not."""
    if text.lstrip()[:1] not in ("{", "[", "`"):  # prose: the parser's module stays unused (a rare path)
        return False
    body = strip_fences(text).lstrip()
    if not JSON_START.match(body):
        return False
    try:
        load_json(body)
    except CutOff:
        return True
    except UnreadableInput:
        return False
    return False


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


def may_write_calls(text: str) -> bool:
    """Whether ``text`` may write a tool call at all: every format needs a tag or marker (``<…>``,
    ``[TOOL_CALLS]``), a JSON object or a Python call. Plain prose skips the parser."""
    return any(mark in text for mark in ("{", "(", "<", "[TOOL_CALLS]"))


def repair_tool_calls(reply: AIMessage, tool_names: Sequence[str]) -> AIMessage:
    """``reply`` with the tool calls a model meant but did not send cleanly.

    Arguments nested absurdly deep are removed (the call is answered with an error).
    Arguments a provider could not parse (fenced JSON, prose around the JSON) are read
    leniently, unless they were cut off. A reply the output limit ended (`cut_by_limit`)
    has its last call marked cut: a streamed call's arguments may have been closed by
    a partial parse. A reply without calls whose text writes them (`read_text_calls`:
    the formats of local servers without a tool parser) gets those calls; the rest of
    its text stays its content. Calls that share an id get distinct ones (`distinct_ids`).
    Anything else is left as it was.
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
    text = message_text(reply)
    if not calls and not invalid and may_write_calls(text):
        written = read_text_calls(text, tool_names)
        if written.calls or written.cut:
            calls, invalid, content = written.calls, written.cut, with_text(content, written.rest)
    calls, invalid = distinct_ids(with_ids(calls), with_ids(invalid))
    if calls == reply.tool_calls and invalid == reply.invalid_tool_calls:
        return reply
    return reply.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid, "content": content})


def named_as_known(call: dict, tool_names: Sequence[str]) -> dict:
    """``call`` under the known tool name it spells loosely (``AskUser``, ``ask-user`` for ``ask_user``)."""
    known = match_name(call.get("name") or "", tool_names)
    return call if known in (None, call.get("name")) else {**call, "name": known}


def with_ids(calls: list[dict]) -> list[dict]:
    """Tool calls, each with an id (some local servers send none): the reply must name the call it answers."""
    return [call if call.get("id") else {**call, "id": f"call_{uuid.uuid4().hex[:24]}"} for call in calls]


def distinct_ids(calls: list[dict], invalid: list[dict]) -> tuple[list[dict], list[dict]]:
    """``(calls, invalid)`` with an id of their own each: a call whose id an earlier one holds (some
    OpenAI-compatible servers give every call of a reply one id) is ``{id}_2``, ``{id}_3``…, so each runs once and
    gets its own reply."""
    taken: set[str] = set()

    def own(call: dict) -> dict:
        ident = base = call.get("id") or ""
        n = 1
        while ident in taken:
            n += 1
            ident = f"{base}_{n}"
        taken.add(ident)
        return call if ident == call.get("id") else {**call, "id": ident}

    return [own(c) for c in calls], [own(c) for c in invalid]


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


INTENT = re.compile(
    r"\b(?:i'll|i will|i'm going to|i am going to|let me|let's|next,? i(?:'ll| will)?|now,? i(?:'ll| will)?|"
    r"i need to|i should|i'm now|i am now)\s+(?:now\s+|first\s+|then\s+|go ahead and\s+)?(?P<verb>[a-z]+)",
    re.IGNORECASE,
)
ACTIONS = frozenset(
    [
        "call",
        "use",
        "fetch",
        "read",
        "look",
        "search",
        "check",
        "get",
        "retrieve",
        "query",
        "run",
        "open",
        "request",
        "invoke",
        "continue",
        "proceed",
        "gather",
        "collect",
        "extract",
        "browse",
        "visit",
        "load",
        "download",
        "scrape",
        "start",
        "try",
    ]
)
"""Verbs that, after "I'll" or "Let me", announce an action with a tool."""
ANNOUNCEMENT_TAIL = 300
"""How much of the end of an answer is read for an announcement."""


def announces_call(text: str, tool_names: Sequence[str] = ()) -> bool:
    """Whether an answer only says what it will do next instead of doing it: its end states an intent to act
    ("I'll now call read_ranking to fetch products 51-55.", "Let me fetch the next page.") with an action verb
    or one of ``tool_names``. "Let me know …" and "Let me summarize …" are no announcement."""
    tail = text.strip()[-ANNOUNCEMENT_TAIL:]
    for match in INTENT.finditer(tail):
        verb = match.group("verb").lower()
        if verb in ACTIONS or any(name and name in tail[match.start() :] for name in tool_names):
            return True
    return False
