"""Personas for the worlds that are not addressed by numbered item ranges (`benchmarks.unnumbered_worlds`).

Each persona decides from the request alone (its messages and bound tools, never call order), told apart as in
`benchmarks.structure_worlds`: "Plan" bound is the planner (the replanner when its system prompt says so), the
replan toolkit bound is a worker, "Verdict" bound is a completion check (the goal-level check when the request has
a "Goal:" line and no "Subtask (" line), the world's own tool bound without the toolkit is a plain ReAct agent,
anything else the final answer. Every persona plans the goal as one subtask and writes its results under a header
that names what they hold ("Categories Audio; Lighting:", "Surnames C-F:", "Products 41-80 of the catalog:",
"Products priced from 100 to 200 dollars: 31 found.", "Orders from cursor c4f... to cursor c9a... (50 orders; the
log holds 1000):"), so that a review's 160-character previews show where the work stands. A worker reads one
batch (at most ``batch_size`` items, as its rules say: as many segments as the goal lets it estimate fit, the
world's tool called once per segment, all in one turn; cursors one call a turn, since each needs the one before),
reviews the plan in the same turn when more is left, then hands the rest off.

Where a line says "Seen", it names where real models were seen doing it; where it says "ours", we found nothing.

- compliant: the correct lazy hand-off: one batch, then the rest handed off in the world's own words (the
  categories by name, letter ranges, product numbers of whole pages, price bands, the next cursor). Its checks
  queue what a result lacks; its final answer lists every item the request shows. The rules followed to the letter
  by a model that does one batch and no more (GPT-4's late-2023 "laziness",
  https://ai-fails.lol/blog/gpt-4-stopped-finishing-its-work-in-late-2023-openai-blamed-an-unintentional-upd).
- skips: a hand-off leaves out one segment of the rest (the second: a page, letter, category or band); in the
  cursor world, where the rest is one token, its hand-off summary leaves out the items of the second page it read.
  In ReAct it never reads the goal's second segment (the cursor world: its answer leaves out the second page).
  Seen: an agent that reads a full first page as the last one and "never requests page_index=1"
  (https://github.com/cuga-project/cuga-agent/issues/750); "6 of 16 action types never seen" after paginating
  (https://github.com/jordigilh/kubernaut/issues/688); "leave gaps" (Anthropic's multi-agent research system,
  https://www.anthropic.com/engineering/multi-agent-research-system).
- misspells: copies the second name of every list of names it writes (the calls of one turn, a hand-off's
  follow-ups, a check's missing work) with one letter dropped ("Kitchen & Dinng"), and every cursor it writes into
  a hand-off with one character changed; the tool refuses those, and it answers with what it has, never trying the
  name again. Single names and the calls right after a tool output are copied right. Only where names or tokens
  are copied: the categories, stock and cursor worlds. Seen: a model that "misstypes the name of the tool"
  (`scgetall-tool`, https://github.com/openbraininstitute/neuroagent/issues/243); a tool call that "typoed the
  `max_keyword_difficulty` input field" (https://github.com/Significant-Gravitas/AutoGPT/issues/11010); an
  invalid cursor a client "truncated" (https://github.com/rmosolgo/graphql-ruby/issues/3735).
- single-call: one tool call a turn, never reviews or hands off, reads its whole subtask to the end, then answers
  with every item; a continuation (instructions listing the "tool calls so far", the latest 20 of them) goes on
  after the last segment the listed calls read (the cursor world: it calls the last listed cursor again, to learn
  the next one). Seen: Llama models served by
  vLLM do not make parallel tool calls (https://github.com/vllm-project/vllm/issues/11592).
- restarts: single-call that, in a continuation, ignores the listed calls and starts its subtask again from its
  beginning. Sized so that its subtask outlasts the engine's ``max_step_iterations`` (15 turns): it reads the
  smallest step its tool allows, one order a call in the cursor world (``limit`` 1), one category, letter, page or
  price page a call elsewhere (24 categories and 26 letters outlast 15 turns at every N; pages and price bands only
  at N = 1,000, see docs/benchmarks.md). Seen: "After compaction, agents lose task context and restart instead of
  continuing" (https://github.com/openclaw/openclaw/pull/82513); "As soon as it condense the context, its starts
  over" (https://github.com/bmad-code-org/BMAD-METHOD/issues/885); compaction that "repeats completed work"
  (https://github.com/openai/codex/issues/35935).
- relative: hands off the rest as the same relative words several times ("List every product ... in the next 11
  categories of the store's list.", "Extract every product on the next 2 pages of the catalog.", "List the next
  50 orders ..."); a relative subtask reviews the plan first and goes on after the last segment the completed
  results' headers show (as the structure benchmark's next-5 persona goes on after the highest rank), skipping one
  batch for each waiting relative subtask whose id comes before its own; its checks word missing work the same
  way. Seen: "without detailed task descriptions, agents might duplicate work, leave gaps" (Anthropic, above); the
  "next 5" wording is ours, as in the structure benchmark's next-5 world.
- over-critical: as the completion check and the goal check, always incomplete, asking for the overall goal again
  (the checked subtask without a goal line). Seen: a judge that "predicted FAIL on 75% of traces"
  (https://github.com/Azure/azureml-assets/pull/4978).
- cut-final: every final answer stops after 10 items with "... and N more." (the stock world: it lists 10
  categories' subtotals, "... and N more.", and never states the total). Seen: GPT-4's placeholders, as above;
  the wording is ours.

In a plain ReAct agent every persona reads the goal's segments in order, a batch a turn (cursors one call a
turn; single-call and restarts one call a turn), then answers with every item (the stock world: the total).
"""

from __future__ import annotations

import math
import re

from replangraph.testing import ScriptedRequest, tool_call
from replangraph.tools import REVIEW_TOOL

from .personas import (
    NOT_EVERYTHING,
    PLAN,
    SHOWN_IN_FULL,
    TAKE_OVER,
    ClientRetrying,
    batch_size,
    calls_so_far,
    checked,
    verdict_call,
)
from .structure_worlds import (
    DEFAULT_BATCH,
    LISTED,
    PER_PAGE,
    SEARCHED,
    PricesPersona,
    StructurePersona,
    completed_part,
    goal_line,
    money,
)
from .unnumbered_worlds import (
    CATEGORIES,
    CURSOR_PAGE,
    CategoriesWorld,
    CursorWorld,
    LettersWorld,
    PagedCatalogWorld,
    PriceBandsWorld,
    SegmentWorld,
    StockWorld,
    misspelt,
)
from .worlds import World

PERSONAS = ("compliant", "skips", "misspells", "single-call", "restarts", "relative", "over-critical", "cut-final")
ONE_A_TURN = frozenset({"single-call", "restarts"})
NAMED = frozenset({"cursor", "categories", "stock"})
"""Worlds where a model copies names or tokens: the only ones the misspells persona runs in."""


def personas_of(world: str) -> tuple[str, ...]:
    """The personas that apply to ``world`` (misspells only where names or tokens are copied)."""
    return tuple(p for p in PERSONAS if p != "misspells" or world in NAMED)


def id_key(task_id: str) -> list:
    """A task id sorted as people read it: "1_dyn_10" after "1_dyn_9"."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", task_id)]


def waiting_before(review: str, task_id: str, instruction: str) -> int:
    """How many waiting subtasks in ``review`` (pending or running) have the same ``instruction`` and an id that
    comes before ``task_id``."""
    waiting = review.split("\nPending (", 1)[-1] if "\nPending (" in review else ""
    same = [
        found.group(1)
        for found in re.finditer(r"^\[[ >]\] (\S+): (.*)$", waiting, flags=re.MULTILINE)
        if found.group(2).startswith(instruction[:150])
    ]
    return sum(1 for other in same if id_key(other) < id_key(task_id))


def cut(items: list[str], head: str) -> str:
    """``head`` and the first `SHOWN_IN_FULL` of ``items``, then "... and N more."."""
    shown = items[:SHOWN_IN_FULL]
    more = [f"... and {len(items) - SHOWN_IN_FULL} more."] if len(items) > SHOWN_IN_FULL else []
    return "\n".join([head, *shown, *more])


class Persona(StructurePersona):
    """What every persona of these worlds shares: the plan, the over-critical check, the final answer's cut."""

    def __init__(self, name: str, world: World, pages_per_turn: int | None = None):
        if name not in PERSONAS:
            raise ValueError(f"unknown persona {name!r}; known: {', '.join(PERSONAS)}")
        super().__init__(world)
        self.name = name
        self.pages_per_turn = pages_per_turn

    def model(self, client_retries: int = 0) -> ClientRetrying:
        return ClientRetrying(respond=self.respond, client_retries=client_retries)

    def respond(self, request: ScriptedRequest):
        if "Verdict" in request.tool_names and self.name == "over-critical":
            with self.lock:
                self.requests += 1
            return self.never_complete(request)
        return super().respond(request)

    def never_complete(self, request: ScriptedRequest):
        goal = goal_line(request)
        if goal and not re.search(r"^Subtask \(", request.prompt, flags=re.MULTILINE):
            return verdict_call(NOT_EVERYTHING, [goal])
        instruction, _ = checked(request)
        overall = re.search(r"^Overall goal: (.*)$", request.prompt, flags=re.MULTILINE)
        return verdict_call(NOT_EVERYTHING, [overall.group(1) if overall else instruction])

    def plan(self, request: ScriptedRequest):
        return tool_call(PLAN, {"tasks": [{"id": "1", "content": self.world.goal, "depends_on": []}]})

    def outputs(self, request: ScriptedRequest) -> list[str]:
        """The texts the world's tool returned in this request, oldest first."""
        names = {t.name for t in self.world.tools}
        return [str(m.content) for m in request.tool_results if request.tool_name(m) in names]

    def listing(self, items: dict[int, str]) -> str:
        return "\n".join(items[i] for i in sorted(items))

    def final(self, request: ScriptedRequest) -> str:
        items = self.world.items_in(request.prompt)
        head = f"{len(items)} {self.world.noun}:"
        if self.name == "cut-final":
            return cut([items[i] for i in sorted(items)], head)
        return head + "\n" + self.listing(items)

    def review_done(self, request: ScriptedRequest) -> str:
        """The completed part of the latest review, "" before one."""
        return completed_part(request.last_result(REVIEW_TOOL) or "")


# --------------------------------------------------------------------------- segments: categories, letters, pages


class SegmentPersona(Persona):
    world: SegmentWorld

    def per_batch(self, request: ScriptedRequest | None) -> int:
        size = batch_size(request, DEFAULT_BATCH) if request is not None else DEFAULT_BATCH
        return max(1, int(size // max(1.0, self.world.nominal())))

    def read(self, request: ScriptedRequest) -> dict[str, str]:
        """``{segment: tool output}`` of every segment read (or refused) in this request."""
        found: dict[str, str] = {}
        for text in self.outputs(request):
            key = self.world.key_of_output(text)
            if key is not None:
                found[key] = text
        return found

    def listed(self, text: str) -> list[str]:
        """The segments of the calls a continuation lists ("tool calls so far")."""
        tool = self.world.tools[0].name
        return [k for args in calls_so_far(text, tool) if (k := self.world.key_of_call(args))]

    def calls(self, keys: list[str]) -> list[dict]:
        """The calls that read ``keys``, in one turn (misspells: the second of two or more copied wrong)."""
        if self.name == "misspells" and len(keys) >= 2:
            keys = [keys[0], misspelt(keys[1]), *keys[2:]]
        return [tool_call(*self.world.call(k)) for k in keys]

    def attempted(self, read: dict[str, str]) -> set[str]:
        """The segments read, a misspelt one counted as the segment it meant (misspells never tries it again)."""
        meant = {misspelt(k): k for k in self.world.segments()} if self.name == "misspells" else {}
        return {meant.get(k, k) for k in read}

    def groups(self, keys: list[str], size: int) -> list[list[str]]:
        """``keys`` in runs of at most ``size`` that are adjacent in the goal's order."""
        order = {k: n for n, k in enumerate(self.world.segments())}
        out: list[list[str]] = []
        for key in keys:
            if out and len(out[-1]) < size and order.get(key, -9) == order.get(out[-1][-1], -9) + 1:
                out[-1].append(key)
            else:
                out.append([key])
        return out

    def tasks(self, keys: list[str], size: int) -> list[str]:
        """The instructions for ``keys``, in batches of ``size`` segments (misspells: the second of two or more
        lists its first name wrong; relative: "the next N" once per batch)."""
        if self.name == "relative":
            return [self.world.relative_task(size)] * math.ceil(len(keys) / size)
        groups = self.groups(keys, size)
        if self.name == "misspells" and len(keys) >= 2:
            at = 0 if len(groups[0]) >= 2 else 1
            spot = 1 if at == 0 else 0
            groups[at] = [*groups[at][:spot], misspelt(groups[at][spot]), *groups[at][spot + 1 :]]
        return [self.world.task(g) for g in groups]

    def result(self, read: dict[str, str]) -> str:
        """A subtask's answer or hand-off summary: the header naming the segments read, their items (a refused
        segment: the tool's words)."""
        order = {k: n for n, k in enumerate(self.world.segments())}
        keys = sorted(read, key=lambda k: order.get(k, len(order)))
        if not keys:
            return f"Nothing to read: the earlier calls read every one of its {self.world.units}."
        lines = [self.world.header(keys)]
        for key in keys:
            items = self.world.items_in(read[key])
            lines += [items[i] for i in sorted(items)] if items else [read[key].splitlines()[0]]
        return "\n".join(lines)

    def relative_keys(self, request: ScriptedRequest, task_id: str, instruction: str, count: int) -> list[str]:
        """The segments a relative subtask takes: after the last segment the completed results' headers show, one
        batch on for every waiting relative subtask before it."""
        done = set(self.world.header_keys(self.review_done(request)))
        order = self.world.segments()
        first = 1 + max((n for n, k in enumerate(order) if k in done), default=-1)
        start = first + count * waiting_before(request.last_result(REVIEW_TOOL) or "", task_id, instruction)
        return order[start : start + count]

    def work(self, request: ScriptedRequest, task_id: str, instruction: str):
        world = self.world
        if instruction.startswith(TAKE_OVER):
            return self.take_over(request)
        count = world.relative_count(instruction)
        if count:
            if not request.called(REVIEW_TOOL):
                return tool_call(REVIEW_TOOL, {})
            wanted = self.relative_keys(request, task_id, instruction, count)
            if not wanted:
                return f"Nothing left: the completed results hold every one of the {world.units}."
        else:
            wanted = world.keys_in(instruction) or world.segments()
        read = self.read(request)
        listed = [] if self.name == "restarts" else self.listed(request.prompt)
        after = max((wanted.index(k) for k in listed if k in wanted), default=-1)
        todo = wanted[after + 1 :]  # a continuation goes on after the last segment its listed calls read
        tried = self.attempted(read)
        if self.name in ONE_A_TURN:
            left = [k for k in todo if k not in tried]
            return self.calls(left[:1]) if left else self.result(read)
        size = self.per_batch(request)
        batch, rest = todo[:size], todo[size:]
        unread = [k for k in batch if k not in tried]
        if unread:
            turn = unread[: self.pages_per_turn or len(unread)]
            review = rest and len(turn) == len(unread) and not request.called(REVIEW_TOOL)
            return [*self.calls(turn), *([tool_call(REVIEW_TOOL, {})] if review else [])]
        if not rest:
            return self.result(read)
        if not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        if self.name == "skips" and len(rest) >= 2:
            rest = [rest[0], *rest[2:]]
        return self.hand_off(task_id, self.result(read), self.tasks(rest, size), len(request.tool_results))

    def take_over(self, request: ScriptedRequest):
        """The single-agent fallback: read the segments whose items neither the attached results nor this window
        show, a batch a turn (one call a turn for single-call and restarts), then answer with every item."""
        shown = self.world.items_in(request.prompt)
        covered = set(self.world.header_keys(request.prompt)) | {self.world.key_of_item(i) for i in shown}
        read = self.read(request)
        left = [k for k in self.world.segments() if k not in covered and k not in self.attempted(read)]
        if not left:
            return self.final_from(request.prompt + "\n" + "\n".join(read.values()))
        turn = 1 if self.name in ONE_A_TURN else (self.pages_per_turn or self.per_batch(request))
        return self.calls(left[:turn])

    def final_from(self, text: str) -> str:
        items = self.world.items_in(text)
        return f"{len(items)} {self.world.noun}:\n" + self.listing(items)

    def missing(self, text: str, wanted: list[str], kept: set[str] = frozenset()) -> list[str]:
        covered = set(self.world.header_keys(text)) | {self.world.key_of_item(i) for i in self.world.items_in(text)}
        return [k for k in wanted if k not in covered and k not in kept]

    def verdict(self, request: ScriptedRequest):
        instruction, result = checked(request)
        if self.world.relative_count(instruction):
            return verdict_call("the subtask's segments are there")
        wanted = self.world.keys_in(instruction)
        if wanted is None:
            return verdict_call("nothing to count")
        listed = self.listed(request.prompt.partition("\nResult:")[0])
        after = max((wanted.index(k) for k in listed if k in wanted), default=-1)
        missing = self.missing(result, wanted[after + 1 :])  # the calls a continuation lists are kept
        if not missing:
            return verdict_call(f"every one of its {self.world.units} is there")
        size = self.per_batch(request)
        return verdict_call(f"{len(missing)} {self.world.units} missing", self.tasks(missing, size))

    def goal_verdict(self, request: ScriptedRequest):
        wanted = self.world.keys_in(goal_line(request)) or self.world.segments()
        missing = self.missing(request.prompt, wanted)
        if not missing:
            return verdict_call(f"every one of the goal's {self.world.units} is there")
        size = self.per_batch(request)
        return verdict_call(f"{len(missing)} of the goal's {self.world.units} missing", self.tasks(missing, size))

    def react(self, request: ScriptedRequest):
        read = self.read(request)
        order = self.world.segments()
        skipped = {order[1]} if self.name == "skips" and len(order) > 1 else set()
        left = [k for k in order if k not in self.attempted(read) and k not in skipped]
        if not left:
            return self.react_answer(read)
        turn = 1 if self.name in ONE_A_TURN else (self.pages_per_turn or self.per_batch(None))
        return self.calls(left[:turn])

    def react_answer(self, read: dict[str, str]) -> str:
        items: dict[int, str] = {}
        for text in read.values():
            items.update(self.world.items_in(text))
        head = f"{len(items)} {self.world.noun}:"
        if self.name == "cut-final":
            return cut([items[i] for i in sorted(items)], head)
        return head + "\n" + self.listing(items)


# --------------------------------------------------------------------------- one number: the stock world

SUBTOTAL = re.compile(r"^(.+?): (\d+) products?, ([\d,]+) units in stock$", re.MULTILINE)


class StockPersona(SegmentPersona):
    """The categories persona asked for one number: its results are a subtotal a category, its final answer the
    total of the subtotals the request shows (a category without one: the sum of its products the request shows)."""

    world: StockWorld

    def subtotals(self, text: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for name, _, units in SUBTOTAL.findall(text):
            if name.strip() in CATEGORIES:
                found.setdefault(name.strip(), int(units.replace(",", "")))
        by_products: dict[str, int] = {}
        for line in self.world.items_in(text).values():
            parts = line.split(" | ")
            by_products[parts[1]] = by_products.get(parts[1], 0) + int(parts[3].split()[0])
        return {**by_products, **found}

    def result(self, read: dict[str, str]) -> str:
        order = {k: n for n, k in enumerate(self.world.segments())}
        keys = sorted(read, key=lambda k: order.get(k, len(order)))
        lines = [self.world.header(keys)]
        for key in keys:
            items = self.world.items_in(read[key])
            if key not in CATEGORIES:
                lines.append(read[key].splitlines()[0])
                continue
            units = sum(int(line.split(" | ")[3].split()[0]) for line in items.values())
            lines.append(f"{key}: {len(items)} products, {units:,} units in stock")
        return "\n".join(lines)

    def missing(self, text: str, wanted: list[str], kept: set[str] = frozenset()) -> list[str]:
        covered = set(self.world.header_keys(text)) | set(self.subtotals(text))
        return [k for k in wanted if k not in covered and k not in kept]

    def answer(self, totals: dict[str, int]) -> str:
        if self.name == "cut-final":
            parts = [f"{name}: {units:,} units" for name, units in totals.items()]
            return cut(parts, "Stock by category:")
        return f"Total stock: {sum(totals.values()):,} units."

    def final(self, request: ScriptedRequest) -> str:
        return self.answer(self.subtotals(request.prompt))

    def final_from(self, text: str) -> str:
        return self.answer(self.subtotals(text))

    def react_answer(self, read: dict[str, str]) -> str:
        return self.answer(self.subtotals("\n".join(read.values())))


# --------------------------------------------------------------------------- cursors


class CursorPersona(Persona):
    world: CursorWorld

    def pages(self, request: ScriptedRequest) -> list[tuple[dict[int, str], str | None, str]]:
        """``(items, next cursor, text)`` of every page read in this request (next cursor None: refused)."""
        found = []
        for text in self.outputs(request):
            head = re.search(r"next_cursor: (\S+)", text)
            found.append((self.world.items_in(text), head.group(1) if head else None, text))
        return found

    def read_call(self, cursor: str) -> dict:
        return tool_call("list_orders", {"cursor": cursor, "limit": 1 if self.name == "restarts" else CURSOR_PAGE})

    def result(self, start: str, pages: list, skip_second: bool = False) -> str:
        items: dict[int, str] = {}
        for n, (found, _, _) in enumerate(pages):
            if not (skip_second and n == 1):
                items.update(found)
        refused = pages[-1][1] is None
        if refused and not items:
            return f"The order log refused the cursor: {pages[-1][2].splitlines()[0]}"
        end = pages[-2][1] if refused else pages[-1][1]
        head = self.world.header(start, end or "none", len(items), self.world.size)
        if refused:
            head += "\n" + pages[-1][2].splitlines()[0]
        return head + ("\n" + self.listing(items) if items else "")

    def chain_end(self, text: str) -> str | None:
        """Where the results' headers leave off: the last header's end cursor ("none": the end of the log; None:
        no header)."""
        heads = self.world.HEADER.findall(text)
        if not heads:
            return None
        return heads[-1][1] or "none"

    def work(self, request: ScriptedRequest, task_id: str, instruction: str):
        world = self.world
        count = world.relative_count(instruction)
        if count:
            if not request.called(REVIEW_TOOL):
                return tool_call(REVIEW_TOOL, {})
            end = self.chain_end(self.review_done(request))
            if end == "none":
                return "Nothing left: the completed results reach the end of the order log."
            start, quota = end or "", count
        else:
            start, quota = world.cursor_in(instruction) or "", batch_size(request, DEFAULT_BATCH)
        listed = calls_so_far(request.prompt, "list_orders")
        if listed and self.name != "restarts":
            start = str(listed[-1].get("cursor", ""))  # read the last listed page again, to learn where to go on
        pages = self.pages(request)
        if not pages:
            return self.read_call(start)
        following = pages[-1][1]
        if following is None or following == "none":
            return self.result(start, pages)
        read = sum(len(found) for found, _, _ in pages)
        if self.name in ONE_A_TURN or read < quota:
            return self.read_call(following)
        if not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        if self.name == "relative":
            rest = [world.relative_task(quota)]
        else:
            rest = [world.task_from(misspelt(following) if self.name == "misspells" else following)]
        summary = self.result(start, pages, skip_second=self.name == "skips")
        return self.hand_off(task_id, summary, rest, len(request.tool_results))

    def verdict(self, request: ScriptedRequest):
        instruction, result = checked(request)
        end = self.chain_end(result)
        if self.world.relative_count(instruction):
            return verdict_call("the next orders are listed" if end else "no orders listed")
        if end == "none":
            return verdict_call("the orders reach the end of the log")
        missing = [self.world.task_from(end)] if end else [instruction]
        return verdict_call("the orders stop before the end of the log", missing)

    def goal_verdict(self, request: ScriptedRequest):
        prompt = request.prompt
        heads = self.world.HEADER.findall(prompt)
        have = self.world.items_in(prompt)
        total = max((int(h[3]) for h in heads), default=0)
        if heads and len(have) >= total:
            return verdict_call("every order of the log is there")
        end = self.chain_end(prompt)
        if self.name == "relative":
            rest = [self.world.relative_task(DEFAULT_BATCH)] * max(1, math.ceil((total - len(have)) / DEFAULT_BATCH))
        elif end and end != "none":
            rest = [self.world.task_from(end)]
        else:
            rest = ["Read the store's order log again from the start and list every order the results lack."]
        return verdict_call(f"{max(total - len(have), 0)} orders of the log are missing", rest)

    def react(self, request: ScriptedRequest):
        pages = self.pages(request)
        if not pages:
            return self.read_call("")
        following = pages[-1][1]
        if following is not None and following != "none":
            return self.read_call(following)
        items: dict[int, str] = {}
        for n, (found, _, _) in enumerate(pages):
            if not (self.name == "skips" and n == 1):
                items.update(found)
        head = f"{len(items)} orders:"
        if self.name == "cut-final":
            return cut([items[i] for i in sorted(items)], head)
        return head + "\n" + self.listing(items)


# --------------------------------------------------------------------------- price bands


class BandPersona(Persona, PricesPersona):
    """The prices persona of the structure benchmark (`PricesPersona`), bending its rules as the persona says."""

    world: PriceBandsWorld

    def relative_task(self, width: float) -> str:
        return f"List every product in the next price band of {money(width)} dollars"

    @staticmethod
    def relative_width(text: str) -> float | None:
        found = re.search(r"\bthe next price band of ([\d,.]+) dollars", text)
        return float(found.group(1).replace(",", "")) if found else None

    def covered(self, text: str, low: float) -> float:
        """How far from ``low`` the bands the text lists reach without a gap (whole-dollar bands adjacent)."""
        listed = sorted((float(a.replace(",", "")), float(b.replace(",", ""))) for a, b, _ in LISTED.findall(text))
        reach = low
        for a, b in listed:
            if a > reach + 1:
                break
            reach = max(reach, b)
        return reach

    def band_of(self, request: ScriptedRequest, task_id: str, instruction: str) -> tuple[float, float] | None:
        width = self.relative_width(instruction)
        if width is None:
            return self.world.band(instruction) or (0.0, 1_000.0)
        listed = LISTED.findall(self.review_done(request))
        reach = max((float(b.replace(",", "")) for _, b, _ in listed), default=0.0)  # after the last band shown
        low = reach + width * waiting_before(request.last_result(REVIEW_TOOL) or "", task_id, instruction)
        return None if low >= 1_000 else (low, min(low + width, 1_000.0))

    def work(self, request: ScriptedRequest, task_id: str, instruction: str):
        if self.relative_width(instruction) and not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        band = self.band_of(request, task_id, instruction)
        if band is None:
            return "Nothing left: the completed results cover every price up to 1,000 dollars."
        tool = self.world.tools[0].name
        searched = self.searches(request)
        if self.name in ONE_A_TURN:
            done = set() if self.name == "restarts" else self.listed_pages(request.prompt, band)
            seen = {page for _, page, _ in searched} | set(range(1, max(done, default=0) + 1))
            pages = searched[0][2] if searched else None
            nxt = next((p for p in range(1, (pages or 1) + 1) if p not in seen), None)
            if nxt is None and pages is None:
                nxt = 1
            if nxt is not None:
                return tool_call(tool, {"min_price": band[0], "max_price": band[1], "page": nxt})
            return self.band_result(band, searched[0][0], request)
        if not searched:
            return tool_call(tool, {"min_price": band[0], "max_price": band[1], "page": 1})
        count, _, pages = searched[0]
        size = batch_size(request, DEFAULT_BATCH)
        if count <= size or band[1] - band[0] <= 1:
            seen = {page for _, page, _ in searched}
            left = [p for p in range(1, pages + 1) if p not in seen][: self.pages_per_turn or pages]
            if left:
                return [tool_call(tool, {"min_price": band[0], "max_price": band[1], "page": p}) for p in left]
            return self.band_result(band, count, request)
        if not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        bands = self.narrower(band, count)
        if self.name == "skips" and len(bands) >= 2:
            bands = [bands[0], *bands[2:]]
        if self.name == "relative":
            rest = [self.relative_task(bands[0][1] - bands[0][0])] * len(bands)
        else:
            rest = [self.world.band_task(*b) for b in bands]
        summary = (
            f"{count} products are priced from {money(band[0])} to {money(band[1])} dollars, more than {size}: "
            f"handed off as {len(bands)} narrower bands."
        )
        return self.hand_off(task_id, summary, rest, len(request.tool_results))

    def listed_pages(self, text: str, band: tuple[float, float]) -> set[int]:
        return {
            int(args.get("page", 1))
            for args in calls_so_far(text, self.world.tools[0].name)
            if (float(args.get("min_price", -1)), float(args.get("max_price", -1))) == band
        }

    def band_result(self, band: tuple[float, float], count: int, request: ScriptedRequest) -> str:
        items = self.read_results(request)
        head = f"Products priced from {money(band[0])} to {money(band[1])} dollars: {count} found."
        return head + "\n" + self.listing(items)

    def verdict(self, request: ScriptedRequest):
        instruction, _ = checked(request)
        if self.relative_width(instruction):
            return verdict_call("the band's products are listed")
        return PricesPersona.verdict(self, request)

    def goal_verdict(self, request: ScriptedRequest):
        judged = PricesPersona.goal_verdict(self, request)
        if self.name != "relative" or judged["args"]["complete"]:
            return judged
        reach = self.covered(request.prompt, 0.0)
        width = 100.0
        rest = [self.relative_task(width)] * math.ceil((1_000 - reach) / width)
        return verdict_call("some prices are not listed", rest)

    def react(self, request: ScriptedRequest):
        band = self.world.band(request.prompt) or (0.0, 1_000.0)
        tool = self.world.tools[0].name
        searched = self.searches(request)
        if not searched:
            return tool_call(tool, {"min_price": band[0], "max_price": band[1], "page": 1})
        pages = searched[0][2]
        seen = {page for _, page, _ in searched}
        if self.name == "skips":
            seen.add(2)
        turn = 1 if self.name in ONE_A_TURN else max(1, DEFAULT_BATCH // PER_PAGE)
        left = [p for p in range(1, pages + 1) if p not in seen][:turn]
        if left:
            return [tool_call(tool, {"min_price": band[0], "max_price": band[1], "page": p}) for p in left]
        items = self.read_results(request)
        head = f"{len(items)} products:"
        if self.name == "cut-final":
            return cut([items[i] for i in sorted(items)], head)
        return head + "\n" + self.listing(items)


PERSONA_CLASSES: dict[type[World], type[Persona]] = {
    CursorWorld: CursorPersona,
    CategoriesWorld: SegmentPersona,
    StockWorld: StockPersona,
    LettersWorld: SegmentPersona,
    PagedCatalogWorld: SegmentPersona,
    PriceBandsWorld: BandPersona,
}


def persona(name: str, world: World, pages_per_turn: int | None = None) -> Persona:
    """Persona ``name`` answering for ``world`` (at most ``pages_per_turn`` tool calls a turn; None: a batch)."""
    return PERSONA_CLASSES[type(world)](name, world, pages_per_turn)


__all__ = ["PERSONAS", "SEARCHED", "persona", "personas_of"]
