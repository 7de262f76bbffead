"""The worlds and scripted personas of the structure benchmark (`benchmarks.structure`, issue 40).

Each world addresses its work in a way the engine's range heuristics (`replangraph.queue.scopes`) may misread:

- `ParallelWorld`: a plan of independent one-item tasks ("Answer question 0." ... "Answer question 31."), each
  served by a tool that takes 200 ms: what matters is that they run side by side.
- `PagesWorld`: a catalog read by page (20 products a page), a goal in pages ("pages 1-15") and hand-offs in
  product numbers ("products 41-90"): two lists that share their words.
- `PricesWorld`: products searched by price band ("from 100 to 200 dollars"), prices with cents ($99.99): the
  bands are intervals of prices, not lists of whole numbers.
- `NextWorld`: the bestseller ranking of `benchmarks.worlds.CatalogWorld`, handed off in relative words ("Extract
  the next 5 products of the ranking.", the same words every time): each subtask finds where to go on by
  reviewing the plan.

Every persona here behaves like a correct model: it reads what the tools return, decides from the request alone
(its messages and bound tools, never call order: parallel branches stay deterministic) and follows replangraph's
rules (one batch of at most ``batch_size`` items, reviewing the plan in the same turn, then a hand-off of the
rest). Requests are told apart as in `benchmarks.personas`: "Plan" bound is the planner (the replanner when its
system prompt says so), the replan toolkit bound is a worker, "Verdict" bound is a completion check (the
goal-level check when the request has a "Goal:" line and no "Subtask (" line), the world's own tool bound
(without the toolkit) is a plain ReAct agent, else the final answer (or the compressor's summary).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable

from langchain_core.tools import StructuredTool

from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call
from replangraph.tools import REVIEW_TOOL, SPLIT_TOOL

from .personas import PLAN, VERDICT, batch_size, checked, members, runs, subtask, verdict_call
from .worlds import CatalogWorld, World, city_name, product_name

DEFAULT_BATCH = 50
"""The batch size a persona assumes when its instructions give none (a ReAct agent): AgentConfig's default."""


def numbers_in(text: str) -> list[int]:
    """The item numbers a phrase such as "0-31", "3, 7-9 and 12" or "5 to 8" names, in order, without repeats."""
    found: list[int] = []
    for lo, hi, one in re.findall(r"(\d+)\s*(?:-|–|—|\bto\b|\bthrough\b)\s*(\d+)|(\d+)", text):
        found += range(int(lo), int(hi) + 1) if lo else [int(one)]
    return list(dict.fromkeys(found))


def joined_json(contents: list[str]) -> list[dict]:
    """The hand-off's ``tasks`` as the schema reads them."""
    return [{"content": c} for c in contents]


def goal_line(request: ScriptedRequest) -> str:
    """The goal a check request judges against ("Goal: ..."), else ""."""
    found = re.search(r"^Goal: (.*)$", request.prompt, flags=re.MULTILINE)
    return found.group(1) if found else ""


def is_goal_check(request: ScriptedRequest) -> bool:
    return bool(goal_line(request)) and not re.search(r"^Subtask \(", request.prompt, flags=re.MULTILINE)


class StructurePersona:
    """The dispatch shared by the personas below; each world's persona answers the requests its way."""

    def __init__(self, world: World):
        self.world = world
        self.lock = threading.Lock()
        self.requests = 0

    def model(self) -> ScriptedChatModel:
        return ScriptedChatModel(respond=self.respond)

    def respond(self, request: ScriptedRequest):
        with self.lock:
            self.requests += 1
        names = request.tool_names
        if VERDICT in names:
            return self.goal_verdict(request) if is_goal_check(request) else self.verdict(request)
        if PLAN in names:
            return self.replan(request) if "replanner" in request.system else self.plan(request)
        if SPLIT_TOOL in names:
            task_id, instruction = subtask(request)
            return self.work(request, task_id, instruction)
        if set(names) & {t.name for t in self.world.tools}:
            return self.react(request)
        if "compress the working memory" in request.system:
            return "Facts so far:\n" + self.listing(self.world.items_in(request.prompt))
        return self.final(request)

    # what every world does alike

    def listing(self, items: dict[int, str]) -> str:
        return "\n".join(items[i] for i in sorted(items))

    def final(self, request: ScriptedRequest) -> str:
        """The final answer: every item the results show, in order."""
        items = self.world.items_in(request.prompt)
        return f"{len(items)} {self.world.noun}:\n" + self.listing(items)

    def replan(self, request: ScriptedRequest):
        """The replanner: the flagged subtasks' instructions again, then the pending steps (none of these worlds'
        subtasks depend on another)."""
        flagged = request.prompt.split("Needs a new plan:", 1)[-1]
        again = re.findall(r"^- \S+ \(\w+\): (.*)$", flagged, flags=re.MULTILINE)
        pending = re.findall(r"^\[ \] \S+: (.*)$", request.prompt, flags=re.MULTILINE)
        contents = list(dict.fromkeys([*again, *pending]))
        return tool_call(PLAN, {"tasks": [{"id": f"r{n}", "content": c} for n, c in enumerate(contents, 1)]})

    def read_results(self, request: ScriptedRequest) -> dict[int, str]:
        """The items the world's tool returned in this request."""
        names = {t.name for t in self.world.tools}
        found: dict[int, str] = {}
        for message in request.tool_results:
            if request.tool_name(message) in names:
                found.update(self.world.items_in(str(message.content)))
        return found

    def hand_off(self, task_id: str, summary: str, contents: list[str], turn: int) -> dict:
        return tool_call(
            SPLIT_TOOL, {"summary": summary, "tasks": joined_json(contents)}, call_id=f"split_{task_id}_{turn}"
        )

    def plan(self, request: ScriptedRequest):
        raise NotImplementedError

    def work(self, request: ScriptedRequest, task_id: str, instruction: str):
        raise NotImplementedError

    def verdict(self, request: ScriptedRequest):
        raise NotImplementedError

    def goal_verdict(self, request: ScriptedRequest):
        raise NotImplementedError

    def react(self, request: ScriptedRequest):
        raise NotImplementedError


# --------------------------------------------------------------------------- a parallel plan


class ParallelWorld(World):
    """``size`` independent items, numbered from 0, each looked up by one call of a tool that takes `DELAY_S`:
    quiz questions ("Answer question 7.") or archive documents ("Read document 7.")."""

    DELAY_S = 0.2
    KINDS = {
        # kind: (noun, verb, the goal's collection, the tool, what the tool says of an item)
        "questions": ("question", "Answer", "of the quiz", "answer_question", "the answer is"),
        "reads": ("document", "Read", "of the archive", "read_document", "it is signed by"),
    }

    def __init__(self, size: int, kind: str = "questions"):
        if size > 250:
            raise ValueError("at most 250 items (the distinct answers)")
        self.kind = kind
        self.single, self.verb, self.where, tool_name, self.says = self.KINDS[kind]
        super().__init__(size=size, batch=1, noun=f"{self.single}s")

        def look_up(number: int) -> str:
            if not 0 <= number < self.size:
                return f"There is no {self.single} {number}: they are numbered 0 to {self.size - 1}."
            time.sleep(self.DELAY_S)
            return self.line(number)

        description = (
            f"Look up {self.single} `number` {self.where} (numbered from 0); one call per {self.single}, "
            f"about {self.DELAY_S * 1000:.0f} ms each."
        )
        self.tools = [StructuredTool.from_function(look_up, name=tool_name, description=description)]

    @property
    def goal(self) -> str:
        return f"{self.verb} all {self.size} {self.noun} {self.where}, numbered from 0."

    def answer(self, number: int) -> str:
        return city_name(number + 1)

    def line(self, number: int) -> str:
        return f"{self.single.capitalize()} {number}: {self.says} {self.answer(number)}."

    def names(self) -> list[str]:
        return [self.answer(k) for k in range(self.size)]

    def item_task(self, number: int) -> str:
        return f"{self.verb} {self.single} {number}."

    def items_in(self, text: str) -> dict[int, str]:
        pattern = rf"{self.single.capitalize()} (\d+): {self.says} ([A-Z]\w+)\."
        return {int(m.group(1)): m.group(0) for m in re.finditer(pattern, text)}

    def asked(self, instruction: str) -> list[int]:
        """The items an instruction names ("question 7", "question 0-31", "questions 3, 7-9"; a group's members'
        items, every line read)."""
        if listed := members(instruction):
            return list(dict.fromkeys(k for line in listed for k in self.asked(line)))
        found = re.search(rf"\b{self.single}s? ((?:\d+(?:\s*(?:-|–|—|,|and|to)\s*)?)+)", instruction)
        return [n for n in numbers_in(found.group(1)) if 0 <= n < self.size] if found else []

    def size_in_goal(self, text: str) -> int | None:
        found = re.search(rf"all (\d+) {self.noun}", text)
        return int(found.group(1)) if found else None


class ParallelPersona(StructurePersona):
    """Plans one subtask per item; a worker looks up every item its instructions name, all in one turn (parallel
    tool calls, at most a batch), and answers with what the tool said."""

    world: ParallelWorld

    def plan(self, request: ScriptedRequest):
        size = self.world.size_in_goal(request.prompt) or self.world.size
        tasks = [{"id": str(k + 1), "content": self.world.item_task(k), "depends_on": []} for k in range(size)]
        return tool_call(PLAN, {"tasks": tasks})

    def work(self, request: ScriptedRequest, task_id: str, instruction: str):
        wanted = self.world.asked(instruction) or list(range(self.world.size_in_goal(instruction) or 0))
        have = self.read_results(request)
        missing = [k for k in wanted if k not in have]
        if not missing:
            return self.listing(have) or f"No {self.world.single} to look up."
        size = batch_size(request, DEFAULT_BATCH)
        tool = self.world.tools[0].name
        if len(have) + len(missing) <= size or not have:
            calls = [tool_call(tool, {"number": k}) for k in missing[:size]]
            return [*calls, tool_call(REVIEW_TOOL, {})] if len(missing) > size else calls
        rest = [f"{self.world.verb} {self.world.single} {k}." for k in missing]
        return self.hand_off(task_id, self.listing(have), rest, len(request.tool_results))

    def verdict(self, request: ScriptedRequest):
        instruction, result = checked(request)
        have = self.world.items_in(result)
        missing = [k for k in self.world.asked(instruction) if k not in have]
        if not missing:
            return verdict_call("every item is there")
        return verdict_call(f"{len(missing)} missing", [self.world.item_task(k) for k in missing])

    def goal_verdict(self, request: ScriptedRequest):
        size = self.world.size_in_goal(goal_line(request)) or self.world.size
        have = self.world.items_in(request.prompt)
        missing = [k for k in range(size) if k not in have]
        if not missing:
            return verdict_call("every item of the goal is there")
        return verdict_call(f"{len(missing)} of {size} missing", [self.world.item_task(k) for k in missing])

    def react(self, request: ScriptedRequest):
        size = self.world.size_in_goal(request.prompt) or self.world.size
        have = self.read_results(request)
        missing = [k for k in range(size) if k not in have]
        if not missing:
            return self.final_text(have)
        return [tool_call(self.world.tools[0].name, {"number": k}) for k in missing[:DEFAULT_BATCH]]

    def final_text(self, items: dict[int, str]) -> str:
        return f"{len(items)} {self.world.noun}:\n" + self.listing(items)


# --------------------------------------------------------------------------- the catalog: pages and prices

PER_PAGE = 20
CHARM = (99.99, 199.99, 399.99, 49.99, 299.99, 24.99)
"""Charm prices just under a round number, as real catalogs have many: every 50th product (from the 7th) has one."""


def price(index: int) -> float:
    """The price of product ``index`` (1-based), from $0.49 to $999.99: most products cheap (the square of a
    spread-out fraction), cents .99, .95, .49 or .00, and charm prices (`CHARM`) here and there."""
    if index % 50 == 7:
        return CHARM[(index // 50) % len(CHARM)]
    fraction = (index * 0.6180339887498949) % 1
    dollars = int(999 * fraction**2)
    cents = (99, 99, 95, 49, 0)[index % 5]
    value = dollars + cents / 100
    return value if value >= 0.49 else 0.49


def product_line(index: int) -> str:
    """A product as the catalog tools show it (the answers keep the whole line)."""
    return f"#{index} {product_name(index)} | ${price(index):,.2f} | SKU P-{index:04d}"


PRODUCT = re.compile(r"#(\d+) ([A-Z]\w+ [A-Z]\w+) \| \$([\d,]+\.\d\d) \| SKU P-\d+")


class ProductWorld(World):
    """What the pages and prices worlds share: N products with names (unique up to 1,000) and prices."""

    def __init__(self, size: int):
        if size > 1_000:
            raise ValueError("at most 1,000 products (the distinct names)")
        super().__init__(size=size, batch=PER_PAGE, noun="products")

    def names(self) -> list[str]:
        return [product_name(i) for i in range(1, self.size + 1)]

    def items_in(self, text: str) -> dict[int, str]:
        return {int(m.group(1)): m.group(0) for m in PRODUCT.finditer(text)}

    def page(self, index: int) -> str:
        return product_line(index)

    def missing(self, answer: str) -> list[int]:
        """The products ``answer`` does not name."""
        named = set(re.findall(r"[A-Z]\w+ [A-Z]\w+", answer))
        return [i for i in range(1, self.size + 1) if product_name(i) not in named]


class PagesWorld(ProductWorld):
    """A catalog of N products, 20 to a page, read by page number: a store's listing pages, and what the page
    parameter of catalog APIs such as WooCommerce's and BigCommerce's REST APIs (``page``, a fixed page size here)
    returns. The goal asks for every product of every page, in pages ("pages 1-15"); the products are numbered
    1..N across the pages, and the tool shows each product's number."""

    def __init__(self, size: int):
        if size % PER_PAGE:
            raise ValueError(f"N must be a multiple of {PER_PAGE}")
        super().__init__(size)
        self.pages = size // PER_PAGE

        def read_catalog_page(page: int) -> str:
            if not 1 <= page <= self.pages:
                return f"There is no page {page}: the catalog has pages 1 to {self.pages}."
            first = (page - 1) * PER_PAGE + 1
            last = first + PER_PAGE - 1
            head = f"Catalog page {page} of {self.pages} (products {first} to {last} of {self.size}):"
            return "\n".join([head, *(product_line(i) for i in range(first, last + 1))])

        description = f"Read one page of the store's catalog ({PER_PAGE} products a page, numbered across pages)."
        self.tools = [StructuredTool.from_function(read_catalog_page, description=description)]

    @property
    def goal(self) -> str:
        return f"Extract every product on pages 1-{self.pages} of the catalog"

    def products_task(self, first: int, last: int) -> str:
        return f"Extract products {first}-{last} of the catalog"

    def pages_task(self, first: int, last: int) -> str:
        if first == last:
            return f"Extract every product on page {first} of the catalog"
        return f"Extract every product on pages {first}-{last} of the catalog"

    def span(self, instruction: str) -> tuple[int, int] | None:
        """The products an instruction asks for: by product numbers, by pages, or all of a goal's pages."""
        dash = r"\s*(?:-|–|—|\bto\b|\bthrough\b)\s*"
        found = re.search(rf"\bproducts? (\d+)(?:{dash}(\d+))?", instruction)
        if found:
            first = int(found.group(1))
            return first, int(found.group(2) or first)
        found = re.search(rf"\bpages? (\d+)(?:{dash}(\d+))?", instruction)
        if found:
            first, last = int(found.group(1)), int(found.group(2) or found.group(1))
            return (first - 1) * PER_PAGE + 1, last * PER_PAGE
        return None


def page_of(product: int) -> int:
    return (product - 1) // PER_PAGE + 1


class PagesPersona(StructurePersona):
    """Plans the goal as one subtask. A worker reads the whole pages that hold its first products, as many as fit in
    its batch (2 pages of 20 in a batch of 50), and hands off the rest by product numbers in batches ("Extract
    products 41-90 of the catalog"); a subtask of at most a batch reads the pages that hold its products, all in
    one turn, and answers with its products. The goal check names missing whole pages in the goal's own words
    (pages, at most a batch of products a task) and other missing products by number."""

    world: PagesWorld

    def plan(self, request: ScriptedRequest):
        return tool_call(PLAN, {"tasks": [{"id": "1", "content": self.world.goal, "depends_on": []}]})

    def work(self, request: ScriptedRequest, task_id: str, instruction: str):
        span = self.world.span(instruction)
        if span is None:
            span = (1, self.world.size)
        first, last = span[0], min(span[1], self.world.size)
        size = batch_size(request, DEFAULT_BATCH)
        read = {i: line for i, line in self.read_results(request).items() if first <= i <= last}
        tool = self.world.tools[0].name
        if not read:
            own_last = last if last - first + 1 <= size else self.whole_pages_end(first, last, size)
            calls = [tool_call(tool, {"page": p}) for p in range(page_of(first), page_of(own_last) + 1)]
            return [*calls, tool_call(REVIEW_TOOL, {})] if own_last < last else calls
        done = max(read)
        if done >= last:
            return self.listing(read)
        if not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        rest = [self.world.products_task(lo, hi) for lo, hi in runs(list(range(done + 1, last + 1)), size)]
        return self.hand_off(task_id, self.listing(read), rest, len(request.tool_results))

    @staticmethod
    def whole_pages_end(first: int, last: int, size: int) -> int:
        """The last product of the whole pages, from ``first``'s page on, that fit in a batch (one page at least)."""
        end = page_of(first) * PER_PAGE
        while end + PER_PAGE - first + 1 <= size and end + PER_PAGE <= last:
            end += PER_PAGE
        return min(end, last)

    def verdict(self, request: ScriptedRequest):
        instruction, result = checked(request)
        span = self.world.span(instruction)
        if span is None:
            return verdict_call("nothing to count")
        have = self.world.items_in(result)
        missing = [i for i in range(span[0], min(span[1], self.world.size) + 1) if i not in have]
        if not missing:
            return verdict_call("every product is there")
        rest = [self.world.products_task(lo, hi) for lo, hi in runs(missing, batch_size(request, DEFAULT_BATCH))]
        return verdict_call(f"{len(missing)} products are missing", rest)

    def goal_verdict(self, request: ScriptedRequest):
        goal = goal_line(request)
        span = self.world.span(goal) or (1, self.world.size)
        have = self.world.items_in(request.prompt)
        missing = [i for i in range(span[0], min(span[1], self.world.size) + 1) if i not in have]
        if not missing:
            return verdict_call("every product of the goal's pages is there")
        size = batch_size(request, DEFAULT_BATCH)
        gone = set(missing)
        whole = [p for p in sorted({page_of(i) for i in missing}) if all(i in gone for i in self.page_items(p))]
        rest = [self.world.pages_task(lo, hi) for lo, hi in runs(whole, max(1, size // PER_PAGE))]
        partly = [i for i in missing if page_of(i) not in set(whole)]
        rest += [self.world.products_task(lo, hi) for lo, hi in runs(partly, size)]
        return verdict_call(f"{len(missing)} products of the goal's pages are missing", rest)

    def page_items(self, page: int) -> range:
        return range((page - 1) * PER_PAGE + 1, page * PER_PAGE + 1)

    def react(self, request: ScriptedRequest):
        """Page after page, as many whole pages a turn as fit in a batch, then every product."""
        span = self.world.span(request.prompt) or (1, self.world.size)
        read = self.read_results(request)
        done = max(read, default=span[0] - 1)
        if done >= span[1]:
            return f"{len(read)} products:\n" + self.listing(read)
        start = page_of(done + 1)
        pages = range(start, min(page_of(span[1]), start + DEFAULT_BATCH // PER_PAGE - 1) + 1)
        return [tool_call(self.world.tools[0].name, {"page": p}) for p in pages]


def money(value: float) -> str:
    """A price bound as instructions write it: "1,000", "99.5"."""
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}".rstrip("0")


NICE_WIDTHS = (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500)
"""Band widths in dollars a shopper's price filter uses."""


class PricesWorld(ProductWorld):
    """N products searched by price band: ``search_products(min_price, max_price, page)`` returns the products
    priced from ``min_price`` to ``max_price`` dollars, both included, cheapest first, 20 a page, with their
    count, as the price filters of catalog APIs do (WooCommerce's ``min_price``/``max_price``, Shopify's price
    filter). Every price is below $1,000, so the goal "from 0 to 1,000 dollars" asks for every product."""

    def __init__(self, size: int):
        super().__init__(size)
        by_price = sorted(range(1, size + 1), key=lambda i: (price(i), i))
        self.by_price = by_price

        def search_products(min_price: float, max_price: float, page: int = 1) -> str:
            found = [i for i in by_price if min_price <= price(i) <= max_price]
            pages = max(1, math.ceil(len(found) / PER_PAGE))
            head = (
                f"{len(found)} products priced from ${min_price:,.2f} to ${max_price:,.2f}, cheapest first; "
                f"page {page} of {pages} ({PER_PAGE} a page):"
            )
            shown = found[(page - 1) * PER_PAGE : page * PER_PAGE]
            return "\n".join([head, *(product_line(i) for i in shown)])

        description = (
            "Search the catalog by price: the products priced from `min_price` to `max_price` dollars (both "
            f"included), cheapest first, {PER_PAGE} a page (`page` from 1), with how many there are."
        )
        self.tools = [StructuredTool.from_function(search_products, description=description)]

    @property
    def goal(self) -> str:
        return "List every product priced from 0 to 1,000 dollars"

    @staticmethod
    def band_task(low: float, high: float) -> str:
        return f"List every product priced from {money(low)} to {money(high)} dollars"

    @staticmethod
    def band(text: str) -> tuple[float, float] | None:
        found = re.search(r"from \$?([\d,]+(?:\.\d+)?) to \$?([\d,]+(?:\.\d+)?) dollars", text)
        return (float(found.group(1).replace(",", "")), float(found.group(2).replace(",", ""))) if found else None

    def lost(self, answer: str) -> list[str]:
        """The prices of the products ``answer`` does not name, cheapest first: "$99.99"."""
        return [f"${price(i):,.2f}" for i in sorted(self.missing(answer), key=price)]


SEARCHED = re.compile(r"(\d+) products priced from \$([\d,.]+) to \$([\d,.]+), cheapest first; page (\d+) of (\d+)")
LISTED = re.compile(r"Products priced from ([\d,.]+) to ([\d,.]+) dollars: (\d+) found")


class PricesPersona(StructurePersona):
    """Plans the goal as one subtask. A worker searches its band: when the band holds at most a batch it reads the
    band's other pages in one turn and answers with every product, under a line "Products priced from A to B
    dollars: N found."; when it holds more, it reviews the plan and hands the band off as narrower bands of a
    round width (about 40 products a band if prices were spread evenly: "from 100 to 200 dollars", "from 200 to 300
    dollars"), each starting where the one before ends, as shoppers' price filters do. The checks compare the
    count the search reported with the products listed; the goal check also reads the bands the results list and
    asks for any stretch of the goal's band none of them names, reading "from 0 to 100" and "from 101 to 200" as
    adjacent, as people read whole-dollar bands."""

    world: PricesWorld

    def plan(self, request: ScriptedRequest):
        return tool_call(PLAN, {"tasks": [{"id": "1", "content": self.world.goal, "depends_on": []}]})

    def searches(self, request: ScriptedRequest) -> list[tuple[int, int, int]]:
        """``(count, page, pages)`` of each search result in the request."""
        tool = self.world.tools[0].name
        found = []
        for message in request.tool_results:
            if request.tool_name(message) == tool and (m := SEARCHED.search(str(message.content))):
                found.append((int(m.group(1)), int(m.group(4)), int(m.group(5))))
        return found

    def work(self, request: ScriptedRequest, task_id: str, instruction: str):
        band = self.world.band(instruction) or (0.0, 1_000.0)
        tool = self.world.tools[0].name
        searched = self.searches(request)
        if not searched:
            return tool_call(tool, {"min_price": band[0], "max_price": band[1], "page": 1})
        count, _, pages = searched[0]
        size = batch_size(request, DEFAULT_BATCH)
        if count <= size or band[1] - band[0] <= 1:
            seen = {page for _, page, _ in searched}
            left = [p for p in range(1, pages + 1) if p not in seen]
            if left:
                return [tool_call(tool, {"min_price": band[0], "max_price": band[1], "page": p}) for p in left]
            items = self.read_results(request)
            head = f"Products priced from {money(band[0])} to {money(band[1])} dollars: {count} found."
            return head + "\n" + self.listing(items)
        if not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        bands = self.narrower(band, count)
        summary = (
            f"{count} products are priced from {money(band[0])} to {money(band[1])} dollars, more than {size}: "
            f"handed off as {len(bands)} narrower bands."
        )
        return self.hand_off(task_id, summary, [self.world.band_task(*b) for b in bands], len(request.tool_results))

    @staticmethod
    def narrower(band: tuple[float, float], count: int) -> list[tuple[float, float]]:
        """Bands of a round width covering ``band``, about 40 products each if prices were spread evenly."""
        low, high = band
        wanted = max(2, math.ceil(count / 40))
        width = max([w for w in NICE_WIDTHS if w <= (high - low) / wanted] or [NICE_WIDTHS[0]])
        edges = [low]
        while edges[-1] + width < high:
            edges.append(edges[-1] + width)
        edges.append(high)
        return list(zip(edges, edges[1:], strict=False))

    def verdict(self, request: ScriptedRequest):
        instruction, result = checked(request)
        listed = LISTED.search(result)
        if not listed:
            return verdict_call("nothing to count")
        have = len(self.world.items_in(result))
        if have >= int(listed.group(3)):
            return verdict_call("every product the search found is listed")
        return verdict_call(f"{have} of {listed.group(3)} listed", [instruction])

    def goal_verdict(self, request: ScriptedRequest):
        goal = self.world.band(goal_line(request)) or (0.0, 1_000.0)
        prompt = request.prompt
        listed = [(float(a.replace(",", "")), float(b.replace(",", ""))) for a, b, _ in LISTED.findall(prompt)]
        gaps, reach = [], goal[0]
        for low, high in sorted(listed):
            if low > reach + 1:
                gaps.append((reach, low))
            reach = max(reach, high)
        if reach < goal[1]:
            gaps.append((reach, goal[1]))
        if not gaps:
            return verdict_call("the listed bands cover the goal's prices")
        return verdict_call("some prices are not listed", [self.world.band_task(*g) for g in gaps])

    def react(self, request: ScriptedRequest):
        """One search of the goal's band, then its other pages, a batch of pages a turn, then every product."""
        band = self.world.band(request.prompt) or (0.0, 1_000.0)
        tool = self.world.tools[0].name
        searched = self.searches(request)
        if not searched:
            return tool_call(tool, {"min_price": band[0], "max_price": band[1], "page": 1})
        pages = searched[0][2]
        seen = {page for _, page, _ in searched}
        left = [p for p in range(1, pages + 1) if p not in seen][: max(1, DEFAULT_BATCH // PER_PAGE)]
        if left:
            return [tool_call(tool, {"min_price": band[0], "max_price": band[1], "page": p}) for p in left]
        items = self.read_results(request)
        return f"{len(items)} products:\n" + self.listing(items)


# --------------------------------------------------------------------------- relative follow-ups

NEXT = 5
NEXT_TASK = f"Extract the next {NEXT} products of the ranking."
HAND_OFF_AT_ONCE = 4
"""The most "next 5" follow-ups one hand-off names."""
RANKS = re.compile(r"Ranks (\d+)-(\d+) of the bestseller ranking")


class NextWorld(CatalogWorld):
    """The bestseller ranking of `CatalogWorld` (top N, read 5 per call), worked through in relative steps."""


class NextPersona(StructurePersona):
    """Plans the goal as one subtask; every subtask reads 5 products and hands off what is left as "Extract the
    next 5 products of the ranking." (the same words every time, up to `HAND_OFF_AT_ONCE` in one hand-off). A
    "next 5" subtask first reviews the plan: it goes on after the highest rank the completed results show
    ("Ranks 6-10 of the bestseller ranking: ..."), after the "next 5" subtasks running beside it, and hands off
    more only for what the pending "next 5" subtasks leave. Its checks word missing work the same way."""

    world: NextWorld

    def plan(self, request: ScriptedRequest):
        return tool_call(PLAN, {"tasks": [{"id": "1", "content": self.world.goal, "depends_on": []}]})

    def size(self, text: str) -> int:
        return self.world.size_in_goal(text) or self.world.size

    def ranks_text(self, items: dict[int, str]) -> str:
        return f"Ranks {min(items)}-{max(items)} of the bestseller ranking:\n" + self.listing(items)

    def review_text(self, request: ScriptedRequest) -> str:
        return request.last_result(REVIEW_TOOL) or ""

    def work(self, request: ScriptedRequest, task_id: str, instruction: str):
        relative = instruction.startswith(NEXT_TASK.split(" products")[0])
        read = self.read_results(request)
        if relative and not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        review = self.review_text(request)
        total = self.size(review if relative else instruction)
        if relative:
            done = max((int(b) for _, b in RANKS.findall(completed_part(review))), default=0)
            beside = len(re.findall(rf"^\[>\] \S+: {re.escape(NEXT_TASK)}", review, flags=re.MULTILINE))
            start = done + 1 + NEXT * beside
        else:
            start = 1
        if start > total:
            return f"Nothing left: the top {total} are all taken by earlier subtasks."
        if not read:
            count = min(NEXT, total - start + 1)
            call = tool_call(self.world.tools[0].name, {"start": start, "count": count})
            return call if relative else [call, tool_call(REVIEW_TOOL, {})]
        last = max(read)
        waiting = len(re.findall(rf"^\[ \] \S+: {re.escape(NEXT_TASK)}", review, flags=re.MULTILINE))
        hidden = re.search(r"\(… (\d+) later pending subtasks not shown\)", review)
        waiting += int(hidden.group(1)) if hidden else 0
        left = total - last - NEXT * waiting
        if left <= 0:
            return self.ranks_text(read)
        more = min(HAND_OFF_AT_ONCE, math.ceil(left / NEXT))
        return self.hand_off(task_id, self.ranks_text(read), [NEXT_TASK] * more, len(request.tool_results))

    def verdict(self, request: ScriptedRequest):
        return verdict_call("the subtask's products are there")

    def goal_verdict(self, request: ScriptedRequest):
        total = self.size(goal_line(request))
        have = self.world.items_in(request.prompt)
        missing = [i for i in range(1, total + 1) if i not in have]
        if not missing:
            return verdict_call("every product of the goal is there")
        return verdict_call(f"{len(missing)} of {total} are missing", [NEXT_TASK] * math.ceil(len(missing) / NEXT))


def completed_part(review: str) -> str:
    """The "Completed" part of a review."""
    return review.split("Completed (", 1)[-1].split("\nPending (", 1)[0]


PERSONAS: dict[type[World], Callable[[World], StructurePersona]] = {
    ParallelWorld: ParallelPersona,
    PagesWorld: PagesPersona,
    PricesWorld: PricesPersona,
    NextWorld: NextPersona,
}


def persona_for(world: World) -> StructurePersona:
    return PERSONAS[type(world)](world)
