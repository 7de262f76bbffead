"""The context benchmark's world and its scripted model: one long job whose history outgrows the window.

- `InventoryWorld`: "read all N items, K per call, and list every item code". Each
  item page carries a unique code (``IC-7KQ2MX``) and about 430 tokens of filler, so
  a page of 5 is about 2.2k tokens, N = 60 items about 26k tokens of tool output and N = 300 about 130k.
- `FaithfulModel`: a scripted stand-in for a faithful model, the same for every agent.
  It decides from the request alone (its messages and bound tools) and knows nothing
  of the items beyond what the request shows:

  - worker (``read_items`` bound): pages forward until the tool says there is no next
    page, then answers with every item code it can see anywhere in its request; before
    answering it follows every ``read_output`` note it has not followed yet, when
    ``read_output`` is bound;
  - summarizer (replangraph's summary and merge requests, whose system prompt says
    "compress the working memory", and SummarizationMiddleware's prompt, "Context
    Extraction Assistant"): lists every item code in its input, and where the paging
    got to;
  - replangraph's planner: one subtask for the whole job; its replanner: no new plan;
    its verifier: complete;
  - anything else (replangraph's finalizer): follows unread ``read_output`` notes when
    it can, then lists every item code it sees.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from replangraph.llm.reading import message_text
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

from .worlds import World, found_names

TOOL = "read_items"
READ_OUTPUT = "read_output"
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE = re.compile(r"\bIC-[A-Z2-9]{6}\b")
NEXT = re.compile(rf"{TOOL}\(start=(\d+)\)")
LAST_PAGE = "This was the last page"
NOTE = re.compile(r'read_output\(output_id="([^"]+)", offset=(\d+)\)')
"""The pointer a cut text carries: ``[… output "ID": characters A-B of T are not shown here; read them with
read_output(output_id="ID", offset=A) …]``."""
PAGE_HEADER = re.compile(r'output "([^"]+)", characters (\d+)-\d+ of \d+:')
"""The header of a page ``read_output`` returned."""
FILLER = (
    "Stock note: the item sits on a labelled shelf in aisle seven, packed in a grey carton with a "
    "paper insert, two foam corners and a printed leaflet. The supplier ships it from the northern "
    "depot on weekdays; returns go back to the same depot within thirty days. Last audit found the "
    "carton intact, the seal unbroken and the leaflet in three languages. Handling: keep dry, keep "
    "upright, no more than six cartons high. The listing repeats the dimensions, the weight, the "
    "care instructions and the warranty terms, and a long paragraph on the history of the maker, "
    "its workshop by the river, the apprentices it trains each spring and the fair where it first "
    "sold its goods. Reviews praise the finish and the packaging; a few mention slow delivery in "
    "winter. The page ends with related listings, a size chart and a note on recycling the carton, "
    "then the same shipping table shown on every page of this inventory, row after row of regions. "
    "Shipping table: north and east within two days, south within three, the islands within five; "
    "bulky orders by freight on Tuesdays only; a signature is needed above a set value, and parcels "
    "left at a pickup point wait there for ten days before they are sent back to the depot at the "
    "sender's cost. Questions and answers: yes, it fits the standard shelf; no, the carton is not "
    "waterproof; the leaflet lists spare parts, which the workshop sells for five years after sale."
)
ROLES = ("planner", "worker", "summarizer", "finalizer", "replanner", "verifier")
DROPPED_SUMMARY = "Previous conversation was too long to summarize."
"""What SummarizationMiddleware puts in place of the history when its trimmed input is empty (no model call)."""


def item_code(index: int) -> str:
    """The unique code of item ``index`` (1-based): ``IC-`` and six characters derived from the index."""
    digest = int.from_bytes(hashlib.sha256(f"inventory-item-{index}".encode()).digest()[:8], "big")
    chars = []
    for _ in range(6):
        digest, rest = divmod(digest, len(CODE_ALPHABET))
        chars.append(CODE_ALPHABET[rest])
    return "IC-" + "".join(chars)


def codes_in(text: str) -> list[str]:
    """Item codes in ``text``, each once, in order of first appearance."""
    return list(dict.fromkeys(CODE.findall(text)))


class InventoryWorld(World):
    """Read all N inventory items, K per call (default 5), and list every item code."""

    def __init__(self, size: int, batch: int = 5):
        super().__init__(size=size, batch=batch, noun="items")
        self.codes = [item_code(i) for i in range(1, size + 1)]
        if len(set(self.codes)) != size:
            raise ValueError(f"item codes collide for {size} items")
        description = (
            f"Read up to {batch} item pages of the inventory, beginning at item `start` (1-based). "
            "The last line says where the next page starts."
        )
        self.tools = [self.items_tool(description)]

    @property
    def goal(self) -> str:
        return (
            f"Read all {self.size} items of the inventory ({self.batch} per call with {TOOL}) and list "
            "every item code (IC-...) in your final answer."
        )

    def names(self) -> list[str]:
        return list(self.codes)

    def score(self, answer: str) -> int:
        return found_names(answer, self.codes)

    def range_task(self, first: int, last: int) -> str:
        return f"Read items {first}-{last} of the inventory and list their item codes."

    def page(self, index: int) -> str:
        return f"Item {index} of {self.size}: code {self.codes[index - 1]}. {FILLER}"

    def footer(self, first: int, last: int) -> str:
        where = (
            f"Next page: {TOOL}(start={last + 1})." if last < self.size else f"{LAST_PAGE}; there are no more items."
        )
        return f"Items {first}-{last} of {self.size}. {where}"

    def read(self, start: int) -> str:
        if start < 1:
            raise ValueError("start must be at least 1")
        if start > self.size:
            return f"There are only {self.size} items. {LAST_PAGE}; there are no more items."
        last = min(start + self.batch - 1, self.size)
        return "\n".join([*(self.page(i) for i in range(start, last + 1)), self.footer(start, last)])

    def items_tool(self, description: str):
        from langchain_core.tools import StructuredTool

        def read_items(start: int) -> str:
            return self.read(start)

        return StructuredTool.from_function(read_items, name=TOOL, description=description)


def request_text(request: ScriptedRequest) -> str:
    """Every message's text, in order (tool call arguments are not text)."""
    return "\n".join(message_text(m) for m in request.messages)


def progress(text: str) -> int | None:
    """Where the paging got to: the furthest next page named in ``text``, 0 when the last page was
    read, None when ``text`` shows no paging at all. The worker pages forward only, so the furthest
    page it has seen is where it stands, whatever order the request shows them in."""
    if LAST_PAGE in text:
        return 0
    starts = [int(s) for s in NEXT.findall(text)]
    return max(starts) if starts else None


def followed_notes(request: ScriptedRequest) -> set[tuple[str, int]]:
    """``(output_id, offset)`` pages already requested or shown in the request."""
    seen = set()
    for message in request.messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["name"] == READ_OUTPUT:
                    args = call.get("args") or {}
                    seen.add((str(args.get("output_id", "")), int(args.get("offset") or 0)))
        if isinstance(message, ToolMessage):
            found = PAGE_HEADER.search(message_text(message))
            if found:
                seen.add((found.group(1), int(found.group(2))))
    return seen


def unread_note(request: ScriptedRequest) -> tuple[str, int] | None:
    """The first ``read_output`` note whose page the request has not asked for yet."""
    if READ_OUTPUT not in request.tool_names:
        return None
    seen = followed_notes(request)
    for found in NOTE.finditer(request_text(request)):
        key = (found.group(1), int(found.group(2)))
        if key not in seen:
            return key
    return None


def code_list(codes: list[str], header: str) -> str:
    return f"{header} ({len(codes)}): " + ", ".join(codes) if codes else f"{header}: none yet."


def is_summary_request(request: ScriptedRequest) -> bool:
    """replangraph's summary and merge requests, or SummarizationMiddleware's default prompt."""
    return "compress the working memory" in request.system or "Context Extraction Assistant" in request.prompt


class FaithfulModel:
    """The responder (see the module docstring); ``calls`` counts the requests it answered, by role, and
    ``dropped`` the distinct summary messages it saw that replaced the history with `DROPPED_SUMMARY`."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.dropped_ids: set[str] = set()
        self.lock = threading.Lock()

    @property
    def dropped(self) -> int:
        return len(self.dropped_ids)

    def model(self) -> ScriptedChatModel:
        return ScriptedChatModel(respond=self)

    def count(self, role: str) -> None:
        with self.lock:
            self.calls[role] += 1

    def __call__(self, request: ScriptedRequest):
        self.watch(request)
        if is_summary_request(request):
            self.count("summarizer")
            return self.summarize(request)
        if "Plan" in request.tool_names:
            if "replanner" in request.system:
                self.count("replanner")
                return tool_call("Plan", {"tasks": []})
            self.count("planner")
            return tool_call("Plan", {"tasks": [{"id": "1", "content": message_text(request.messages[-1])}]})
        if "Verdict" in request.tool_names:
            self.count("verifier")
            return tool_call("Verdict", {"complete": True, "reason": "every item was read", "remaining_tasks": []})
        if TOOL in request.tool_names:
            self.count("worker")
            return self.work(request)
        self.count("finalizer")
        return self.answer(request)

    def watch(self, request: ScriptedRequest) -> None:
        """Note the summaries that stand for history without a summary of it (measurement only)."""
        for message in request.messages:
            if isinstance(message, HumanMessage) and DROPPED_SUMMARY in message_text(message):
                with self.lock:
                    self.dropped_ids.add(str(message.id or message_text(message)))

    def summarize(self, request: ScriptedRequest) -> str:
        text = request_text(request)
        summary = code_list(codes_in(text), "Item codes found")
        where = progress(text)
        if where == 0:
            summary += f"\nPaging: {LAST_PAGE}; every page was read."
        elif where is not None:
            summary += f"\nPaging: read the next page with {TOOL}(start={where})."
        return summary

    def work(self, request: ScriptedRequest):
        where = progress(request_text(request))
        if where is None:
            return tool_call(TOOL, {"start": 1})
        if where > 0:
            return tool_call(TOOL, {"start": where})
        return self.answer(request)

    def answer(self, request: ScriptedRequest):
        note = unread_note(request)
        if note is not None:
            return tool_call(READ_OUTPUT, {"output_id": note[0], "offset": note[1]})
        return code_list(codes_in(request_text(request)), "Item codes")
