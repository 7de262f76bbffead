"""Text models write where structure was expected: tool calls written as text, in the formats open-weight models
use when no server-side parser reads them, and JSON, lists and tool names written as text.

One parser, `read_text_calls`, used by the executor's tool-call repair (`replangraph.llm.reading.repair_tool_calls`)
and by the structured-output loop (`replangraph.llm.answers.read_arguments`). `load_json` reads JSON from text:
fenced, inside prose, a Python literal, refused when cut off (`CutOff`). The lenient readers of
`replangraph.llm.reading` come here only when a value arrives as text. Pure; no LangGraph here.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from replangraph.llm.lenient import (
    BULLET,
    CUT_OFF,
    LIST_KEYS,
    MAX_NESTING,
    CutOff,
    UnreadableInput,
    as_text,
    check_nesting,
    match_name,
    truthy,
)

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


# --------------------------------------------------------------------------- JSON, lists and names written as text


MAX_STARTS = 50
"""Opening brackets tried when looking for JSON inside prose."""


MAX_LITERAL_CHARS = 100_000
"""Longest text read as a Python literal (``ast.literal_eval`` is slow on huge input)."""


FENCED = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n?(.*?)```", re.S)


JSON_START = re.compile(r"""[\[{]\s*(?:["'{\[\]}\d-]|true\b|false\b|null\b)""")
"""An opening bracket that begins a JSON value (not prose in brackets such as "[see below]")."""


BRACKETS = re.compile(r"""["'\\{}\[\]]""")


def strip_fences(text: str) -> str:
    """The inside of the first markdown code fence that holds JSON, else of the first one, else the text."""
    blocks = [block.strip() for block in FENCED.findall(text)]
    json_like = [block for block in blocks if block[:1] in ("[", "{")]
    return (json_like or blocks or [text.strip()])[0]


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


def text_lines(text: str) -> list[str]:
    """The items of a list written as text: its bulleted or numbered lines (a heading such as
    "Remaining tasks:" is not an item), or every non-empty line when none is bulleted."""
    lines = [raw for raw in text.splitlines() if raw.strip()]
    bulleted = [raw for raw in lines if BULLET.match(raw)]
    return [BULLET.sub("", raw).strip() for raw in bulleted or lines if BULLET.sub("", raw).strip()]


def embedded_task_json(text: str) -> Any:
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
