"""What every lenient reader of model output shares: the error a reader raises (`UnreadableInput`, `CutOff` for JSON
cut off before it closes), any value as text (`as_text`), a yes or no (`truthy`), a name matched loosely
(`match_name`) and the limits readers keep (`check_nesting`). Used by `replangraph.llm.reading` and
`replangraph.llm.formats`, which import it; it imports neither. Pure; no LangGraph here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

MAX_NESTING = 20
LIST_KEYS = ("tasks", "subtasks", "follow_up_tasks", "items", "steps", "plan", "remaining_tasks")
BULLET = re.compile(r"^\s*(?:(?:[-*•+]|\d+[.)]|\[[ xX]?\])\s+)+")


class UnreadableInput(ValueError):
    """Input no reading can make sense of; the message says what was expected."""


class CutOff(UnreadableInput):
    """An answer that ends before its JSON does: cut by the output limit, never to be read as a smaller value."""


CUT_OFF = (
    "not valid JSON: it ends before its brackets close, so the answer was cut off (by the output limit, most "
    "likely); answer again, shorter (fewer or shorter items), with nothing around the JSON"
)


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
