"""read_output: lets an agent page through text that was kept out of its window.

Long tool outputs, folded history, cut messages, dependency results and a long
goal are saved under an output id; the window shows a note naming the id and the
omitted range. This tool returns one page of the saved text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import AliasChoices, BaseModel, BeforeValidator, Field, WithJsonSchema

from replangraph.context.excerpts import PAGE, note
from replangraph.context.output_ids import read_saved, saved_keys
from replangraph.llm.reading import as_text
from replangraph.names import READ_OUTPUT

READ_OUTPUT_DESCRIPTION = (
    "Read text that was kept out of your context: a long tool output, earlier messages, or another "
    'subtask\'s result. Use the output_id and offset named in a note such as [… output "3/call_1": '
    "characters 4000-90000 of 90000 are not shown here …]. Returns one page; the page says where the next one starts."
)

READ_OUTPUT_ID_DESCRIPTION = 'The id from the note, e.g. "3/call_1" or "goal".'

READ_OUTPUT_OFFSET_DESCRIPTION = "First character to read (default 0)."

READ_OUTPUT_LIMIT_DESCRIPTION = "How many characters to read."


def _first_text(value: Any) -> Any:
    if isinstance(value, list | tuple) and value:
        return _first_text(value[0])
    return as_text(value).strip().strip("'\"`") if not isinstance(value, str) else value.strip().strip("'\"`")


def _whole_number(value: Any) -> Any:
    if value is None or value == "":
        return None
    if isinstance(value, str):  # "6,000", "6000.0", or the range a note shows ("6000-90000")
        found = re.search(r"-?\d[\d,_]*(?:\.\d+)?", value)
        return int(float(found.group().replace(",", "").replace("_", ""))) if found else value
    if isinstance(value, float):
        return int(value)
    return value


class ReadOutputArgs(BaseModel):
    output_id: Annotated[
        Any,
        BeforeValidator(_first_text),
        WithJsonSchema({"type": "string"}),
        Field(
            description=READ_OUTPUT_ID_DESCRIPTION,
            validation_alias=AliasChoices("output_id", "id", "output", "key", "outputId"),
        ),
    ]
    offset: Annotated[
        int | None,
        BeforeValidator(_whole_number),
        Field(
            None,
            description=READ_OUTPUT_OFFSET_DESCRIPTION,
            validation_alias=AliasChoices("offset", "start", "from", "position", "begin"),
        ),
    ]
    limit: Annotated[
        int | None,
        BeforeValidator(_whole_number),
        Field(
            None,
            description=READ_OUTPUT_LIMIT_DESCRIPTION,
            validation_alias=AliasChoices("limit", "length", "max_chars", "count", "size", "chars"),
        ),
    ]


def page(ident: str, text: str, offset: int, limit: int, max_chars: int | None = None) -> str:
    """One page of ``text``: a header naming the range, the characters, and where the next page starts.

    With ``max_chars`` the whole page, header and note included, stays within it.
    """
    offset = min(max(offset, 0), len(text))
    total = len(text)
    if max_chars is not None:
        markup = len(PAGE.format(id=ident, start=total, end=total, total=total)) + len(note(ident, total, total, total))
        limit = min(limit, max(max_chars - markup - 1, 1))
    end = min(offset + max(limit, 1), total)
    body = PAGE.format(id=ident, start=offset, end=end, total=total) + text[offset:end]
    if end < total:
        body += "\n" + note(ident, end, total, total)
    return body


def read_output_tool(lookup: Callable[[str], str | None], known: Callable[[], list[str]], page_chars: int) -> BaseTool:
    """The tool, reading through ``lookup(output_id)``; pages hold at most ``page_chars`` characters
    (so a page is never cut from the window again)."""

    def read_output(output_id: Any, offset: int | None = None, limit: int | None = None) -> str:
        ident = str(output_id or "")
        text = lookup(ident)
        if text is None:
            names = known()
            hint = f" Known ids: {', '.join(names[:20])}." if names else ""
            raise ToolException(f"no kept output named {ident!r}.{hint} Use the id exactly as the note writes it.")
        start = offset or 0
        if start < 0:
            start = max(len(text) + start, 0)  # a negative offset counts from the end
        if start >= len(text) and text:
            raise ToolException(f"output {ident!r} has {len(text)} characters; offset must be below that")
        return page(ident, text, start, limit or page_chars, max_chars=page_chars)

    return StructuredTool.from_function(
        read_output,
        name=READ_OUTPUT,
        description=READ_OUTPUT_DESCRIPTION,
        args_schema=ReadOutputArgs,
        handle_tool_error=True,
        handle_validation_error=lambda e: (
            f"Error: invalid arguments ({e.errors()[0]['msg']}); send output_id "
            "as the note writes it, and offset/limit as whole numbers."
        ),
    )


def subtask_reader(tasks: Any, goal: str, task_id: str, page_chars: int) -> BaseTool:
    """``read_output`` for one running subtask: its kept text and its dependencies' results (``tasks``: the queue)."""
    return read_output_tool(
        lambda ident: read_saved(ident, tasks, goal, task_id),
        lambda: saved_keys(tasks, task_id),
        page_chars,
    )
