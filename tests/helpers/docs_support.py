"""Helpers for tests/test_docs.py: reading the fenced blocks of a Markdown file, and the model that
answers a documentation block's requests when the block does not script one itself."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from replangraph.testing import Reply, ScriptedRequest, tool_call

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*$")
CONTINUES = "# (continues the block above)"
"""First line of a python block that runs in the namespace of the python block before it."""


@dataclass(frozen=True)
class Block:
    """One fenced block: its file, its index among the file's blocks (0-based), language, text and the
    paragraph line right above its opening fence."""

    path: Path
    index: int
    lang: str
    text: str
    line: int
    intro: str

    @property
    def continues(self) -> bool:
        return self.lang == "python" and self.text.startswith(CONTINUES)


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, in order; an indented fence is dedented by its indent."""
    found: list[Block] = []
    lines = path.read_text().splitlines()
    number = 0
    while number < len(lines):
        opening = FENCE.match(lines[number])
        if not opening:
            number += 1
            continue
        indent, start = opening.group("indent"), number
        body: list[str] = []
        number += 1
        while number < len(lines) and lines[number].strip() != "```":
            body.append(lines[number][len(indent) :] if lines[number].startswith(indent) else lines[number])
            number += 1
        if number == len(lines):
            raise AssertionError(f"{path.name}:{start + 1}: a fenced block is never closed")
        above = [line for line in lines[:start] if line.strip()]
        intro = above[-1].strip() if above else ""
        found.append(Block(path, len(found), opening.group("lang"), "\n".join(body) + "\n", start + 1, intro))
        number += 1
    return found


def chain(block: Block, all_blocks: list[Block]) -> list[Block]:
    """The python blocks that run, in order, to run ``block``: back to the nearest one that does not continue
    the block above it."""
    if not block.continues:
        return [block]
    earlier = [b for b in all_blocks[: block.index] if b.lang == "python"]
    if not earlier:
        raise AssertionError(f"{block.path.name} block {block.index} continues a block, but none is above it")
    return [*chain(earlier[-1], all_blocks), block]


def respond(request: ScriptedRequest) -> Reply:
    """A model for blocks that script none: one subtask holding the goal, answered in one turn; a completion
    check that finds it complete; a judge that picks candidate 1; any other request answered with text."""
    if "Plan" in request.tool_names:
        goal = request.prompt.strip().splitlines()[-1] if request.prompt.strip() else "the goal"
        return tool_call("Plan", {"tasks": [{"id": "1", "content": goal[:200]}]})
    if "Verdict" in request.tool_names:
        return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "all there"})
    return "Done: the answer, in one reply."
