"""The final answer as a chat shows it: Markdown that keeps the lines as written (`chat_markdown`)."""

from __future__ import annotations

import re


def line_kind(line: str) -> str:
    """What a line is to Markdown: ``list`` (an item), ``more`` (indented: more of an item), ``table``,
    ``quote``, ``heading``, ``fence`` or ``text``."""
    if line.lstrip().startswith(("```", "~~~")):  # a fence, also one indented inside a list item
        return "fence"
    if re.match(r"\s{0,3}(?:[-*+]|\d{1,9}[.)])\s", line):
        return "list"
    if line[:1] in (" ", "\t"):
        return "more"
    kinds = {"|": "table", ">": "quote", "#": "heading"}
    return next((kind for mark, kind in kinds.items() if line.startswith(mark)), "text")


KEPT_BREAKS = {("list", "list"), ("more", "list"), ("table", "table"), ("quote", "quote"), ("heading", "list")}
"""Line breaks Markdown keeps as they are: within a list, a table or a quote, and after a heading."""


def chat_markdown(text: str) -> str:
    """``text`` as Markdown that shows its lines as written (Markdown joins the lines of a paragraph): a
    line break between lines of prose becomes a paragraph break, one before an indented line a hard
    line break (the line stays in its list item). Fenced code, blank lines and the lines of a list,
    table or quote are left as they are."""
    lines = text.split("\n")
    out: list[str] = []
    fenced = False
    for line, after in zip(lines, [*lines[1:], None], strict=True):
        kind = line_kind(line)
        fenced = fenced != (kind == "fence")
        out.append(line)
        if fenced or after is None or not line.strip() or not after.strip():
            continue
        following = line_kind(after)
        if following == "more" and kind in ("list", "more", "text"):
            out[-1] = line.rstrip() + "  "  # a hard line break
        elif (kind, following) not in KEPT_BREAKS:
            out.append("")
    return "\n".join(out)
