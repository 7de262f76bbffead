"""Worlds of the persona matrix that are not addressed by numbered item ranges (issue 40).

Every world is generated from its size alone, names its items uniquely (up to 1,000) and records which items its
tools served (`ServedWorld.served`), so the matrix can tell a run that lost items it read from one that never read
them. Each world's work comes in **segments** a model addresses in the world's own words:

- `CursorWorld`: an order log read through opaque cursors (``list_orders(cursor, limit)``, 10 orders a call by
  default, a ``next_cursor`` token to go on, as Stripe's ``starting_after`` or GraphQL's ``after`` do). A hand-off
  names where to go on by its token ("from cursor c4f9a0e1b2 on"); nothing numbers the orders.
- `CategoriesWorld`: a store's products in 24 named categories (``list_category(category)``), the goal naming
  them all; a follow-up names its categories.
- `LettersWorld`: a club's member directory by surname initial (``list_members(letter)``); follow-ups name letter
  ranges ("surnames C-F").
- `PagedCatalogWorld`: `benchmarks.structure_worlds.PagesWorld` with a last page that may be short (N = 19, 100,
  1,000): the goal counts pages ("pages 1-5"), the tool and the hand-offs number products ("products 41-80").
- `PriceBandsWorld`: `benchmarks.structure_worlds.PricesWorld` (price bands, prices with cents) with its tool's
  outputs recorded.
- `StockWorld`: the categories world asked an aggregate question with a one-number answer ("What is the total
  stock ...? Answer with one number."); its score is all or nothing: the answer states the right total.
"""

from __future__ import annotations

import hashlib
import math
import re

from langchain_core.tools import StructuredTool

from .structure_worlds import PER_PAGE, PRODUCT, PagesWorld, PricesWorld, price, product_line
from .worlds import World, found_names, product_name


class ServedWorld(World):
    """A world whose tools record the items they returned, and that tells item lines apart in an answer."""

    served: set[int]

    def record(self, indexes) -> None:
        self.served.update(indexes)

    def read_everything(self) -> bool:
        """Whether the tools returned every item at some point of the run."""
        return len(self.served) >= self.size

    def line_name(self, line: str) -> str | None:
        """The item name an item line of an answer gives (None: not an item line)."""
        items = self.items_in(line)
        if not items:
            return None
        [(index, _)] = list(items.items())[:1]
        return self.name_in(line, index)

    def name_in(self, line: str, index: int) -> str | None:
        raise NotImplementedError


# --------------------------------------------------------------------------- segment worlds


class SegmentWorld(ServedWorld):
    """Items in an ordered list of segments (categories, letters, pages), each read by one call of the world's tool.

    What a persona needs: the goal's segments (`keys`), the segments an instruction names (`keys_in`), the
    instruction for some segments (`task`), a relative instruction ("the next 2 categories", `relative_task`), the
    call that reads a segment (`call`), which segment a tool output or a call is (`key_of_output`,
    `key_of_call`), the segment of an item (`key_of_item`), and a header that names the segments a result holds
    (`header`, read back by `header_keys`)."""

    unit = "segment"
    units = "segments"

    def segments(self) -> list[str]:
        raise NotImplementedError

    def keys_in(self, text: str) -> list[str] | None:
        raise NotImplementedError

    def task(self, keys: list[str]) -> str:
        raise NotImplementedError

    def relative_task(self, count: int) -> str:
        return f"{self.verb} the next {count} {self.units if count > 1 else self.unit} of the {self.where}."

    verb = "List every item of"
    where = "list"

    def relative_count(self, text: str) -> int | None:
        found = re.search(rf"\bthe next (\d+) (?:{self.units}|{self.unit})\b", text)
        return int(found.group(1)) if found else None

    def call(self, key: str) -> tuple[str, dict]:
        raise NotImplementedError

    def key_of_call(self, args: dict) -> str | None:
        raise NotImplementedError

    def key_of_output(self, text: str) -> str | None:
        raise NotImplementedError

    def key_of_item(self, index: int) -> str:
        raise NotImplementedError

    def segment_items(self, key: str) -> list[int]:
        return [i for i in range(1, self.size + 1) if self.key_of_item(i) == key]

    def nominal(self) -> float:
        """Items per segment, as the goal lets a model estimate it."""
        return self.size / len(self.segments())

    def header(self, keys: list[str]) -> str:
        raise NotImplementedError

    def header_keys(self, text: str) -> list[str]:
        raise NotImplementedError


CATEGORIES = (
    "Garden & Outdoor",
    "Kitchen & Dining",
    "Home Office",
    "Pet Supplies",
    "Bath & Body",
    "Camping Gear",
    "Craft Supplies",
    "Baby & Toddler",
    "Board Games",
    "Cycling",
    "Tea & Coffee",
    "Lighting",
    "Storage & Shelving",
    "Audio",
    "Stationery",
    "Footwear",
    "Outerwear",
    "Luggage",
    "Fitness",
    "Bedding",
    "Cleaning",
    "Hardware",
    "Party Supplies",
    "Musical Instruments",
)


def stock(index: int) -> int:
    """Units of product ``index`` in stock (0 to 96)."""
    return (index * 37) % 97


def category_line(index: int) -> str:
    category = CATEGORIES[(index - 1) % len(CATEGORIES)]
    return f"{product_name(index)} | {category} | ${price(index):,.2f} | {stock(index)} in stock | SKU P-{index:04d}"


CATEGORY_ITEM = re.compile(r"([A-Z]\w+ [A-Z]\w+) \| ([^|\n]+?) \| \$([\d,]+\.\d\d) \| (\d+) in stock \| SKU P-(\d+)")
CATEGORY_HEAD = re.compile(r"^Category (.+?): (\d+) products?", re.MULTILINE)


class CategoriesWorld(SegmentWorld):
    """N products in 24 named categories (product i in category (i - 1) mod 24), read a category a call."""

    unit, units = "category", "categories"

    def __init__(self, size: int):
        if size > 1_000:
            raise ValueError("at most 1,000 products (the distinct names)")
        super().__init__(size=size, batch=50, noun="products")
        self.served = set()

        def list_category(category: str) -> str:
            name = category.strip()
            if name not in CATEGORIES:
                return f"No category named {name!r}."
            found = [i for i in range(1, self.size + 1) if self.key_of_item(i) == name]
            self.record(found)
            return "\n".join([f"Category {name}: {len(found)} products", *(category_line(i) for i in found)])

        description = "List every product of one category of the store (its exact name), with price and stock."
        self.tools = [StructuredTool.from_function(list_category, description=description)]

    @property
    def goal(self) -> str:
        return (
            f"List every product, with its price, in the store's {len(CATEGORIES)} categories: "
            + "; ".join(CATEGORIES)
            + "."
        )

    verb = "List every product, with its price, in"
    where = "store's category list"

    def relative_task(self, count: int) -> str:
        return f"List every product, with its price, in the next {count} categories of the store's list."

    def names(self) -> list[str]:
        return [product_name(i) for i in range(1, self.size + 1)]

    def segments(self) -> list[str]:
        return list(CATEGORIES)

    def keys_in(self, text: str) -> list[str] | None:
        found = re.search(r"categor(?:y|ies): (.+?)\.?$", text, flags=re.MULTILINE)
        if not found:
            return None
        return [k.strip() for k in found.group(1).split(";") if k.strip()]

    def task(self, keys: list[str]) -> str:
        noun = "this category" if len(keys) == 1 else "these categories"
        return f"List every product, with its price, in {noun}: " + "; ".join(keys) + "."

    def call(self, key: str) -> tuple[str, dict]:
        return "list_category", {"category": key}

    def key_of_call(self, args: dict) -> str | None:
        return str(args.get("category", "")).strip() or None

    def key_of_output(self, text: str) -> str | None:
        found = CATEGORY_HEAD.search(text) or re.search(r"No category named '(.+?)'", text)
        return found.group(1) if found else None

    def key_of_item(self, index: int) -> str:
        return CATEGORIES[(index - 1) % len(CATEGORIES)]

    def items_in(self, text: str) -> dict[int, str]:
        return {int(m.group(5)): m.group(0) for m in CATEGORY_ITEM.finditer(text)}

    def name_in(self, line: str, index: int) -> str | None:
        found = CATEGORY_ITEM.search(line)
        return found.group(1) if found else None

    def header(self, keys: list[str]) -> str:
        return "Categories " + "; ".join(keys) + ":"

    def header_keys(self, text: str) -> list[str]:
        """The categories the headers in ``text`` name, a header cut short (a review's preview) read as far as it
        goes."""
        found = re.findall(r"\bCategories ([^:\n]+)", text)
        keys = [k.strip().rstrip("…").strip() for line in found for k in line.split(";")]
        return [k for k in keys if k in CATEGORIES] + [m.group(1) for m in CATEGORY_HEAD.finditer(text)]


class StockWorld(CategoriesWorld):
    """The categories world asked for one number: the total stock of every product. Scored all or nothing: an
    answer that states the right total recovers all N, any other none."""

    @property
    def goal(self) -> str:
        return (
            f"What is the total stock, in units, of every product in the store's {len(CATEGORIES)} categories: "
            + "; ".join(CATEGORIES)
            + "? Answer with one number."
        )

    def keys_in(self, text: str) -> list[str] | None:
        found = re.search(r"categor(?:y|ies): (.+?)[.?]?(?: Answer with one number\.)?$", text, flags=re.MULTILINE)
        if not found:
            return None
        return [k.strip() for k in found.group(1).split(";") if k.strip()]

    def task(self, keys: list[str]) -> str:
        noun = "this category" if len(keys) == 1 else "these categories"
        return f"Add up the stock, in units, of every product in {noun}: " + "; ".join(keys) + "."

    def relative_task(self, count: int) -> str:
        return f"Add up the stock, in units, of every product in the next {count} categories of the store's list."

    def total(self) -> int:
        return sum(stock(i) for i in range(1, self.size + 1))

    def score(self, answer: str) -> int:
        numbers = {int(n.replace(",", "")) for n in re.findall(r"(?<![$\d,.])\d[\d,]*(?![\d.,]*\.\d)", answer)}
        return self.size if self.total() in numbers else 0

    def line_name(self, line: str) -> str | None:
        return None


LETTERS = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
STEMS = ("ardell", "ostrom", "elling", "umbry", "arrow", "inley", "ossett", "averly", "ethring", "olbeck")
GIVEN = ("Amara", "Jonas", "Priya", "Tomas")
CITIES = ("Lisbon", "Tampere", "Leeds", "Graz", "Porto", "Aarhus", "Ghent", "Brno")


def member_name(index: int) -> str:
    """``Surname, Given`` of member ``index`` (1-based; unique up to 1,040): surnames by initial, A to Z in turn."""
    i = index - 1
    surname = LETTERS[i % 26] + STEMS[(i // 26) % len(STEMS)]
    return f"{surname}, {GIVEN[(i // (26 * len(STEMS))) % len(GIVEN)]}"


MEMBER = re.compile(r"([A-Z][a-z]+, [A-Z][a-z]+) \| member since (\d{4}) \| ([A-Z][a-z]+) \| no\. M-(\d+)")
LETTER_HEAD = re.compile(r"^Surnames starting with ([A-Z]): (\d+) members?", re.MULTILINE)


class LettersWorld(SegmentWorld):
    """A club's directory of N members, listed by the initial of their surname (about N/26 a letter)."""

    unit, units = "letter", "letters"

    def __init__(self, size: int):
        if size > 1_000:
            raise ValueError("at most 1,000 members (the distinct names)")
        super().__init__(size=size, batch=50, noun="members")
        self.served = set()

        def list_members(letter: str) -> str:
            key = letter.strip().upper()[:1]
            if key not in LETTERS:
                return f"No such letter: {letter!r}."
            found = self.segment_items(key)
            self.record(found)
            return "\n".join([f"Surnames starting with {key}: {len(found)} members", *(self.page(i) for i in found)])

        description = "List every member of the club's directory whose surname starts with `letter` (A-Z)."
        self.tools = [StructuredTool.from_function(list_members, description=description)]

    @property
    def goal(self) -> str:
        return "List every member of the club's directory, surnames A-Z: name, year joined and city."

    def relative_task(self, count: int) -> str:
        return f"List every member of the directory under the next {count} letters of the alphabet."

    def relative_count(self, text: str) -> int | None:
        found = re.search(r"\bthe next (\d+) letters?\b", text)
        return int(found.group(1)) if found else None

    def names(self) -> list[str]:
        return [member_name(i) for i in range(1, self.size + 1)]

    def page(self, index: int) -> str:
        city = CITIES[index % len(CITIES)]
        return f"{member_name(index)} | member since {1990 + index * 7 % 35} | {city} | no. M-{index}"

    def segments(self) -> list[str]:
        return list(LETTERS)

    def keys_in(self, text: str) -> list[str] | None:
        found = re.search(r"\bsurnames? (?:starts? with |starting with )?([A-Z])(?:\s*(?:-|–|to)\s*([A-Z]))?\b", text)
        if not found:
            return None
        first, last = found.group(1), found.group(2) or found.group(1)
        return [k for k in LETTERS if first <= k <= last]

    def task(self, keys: list[str]) -> str:
        if len(keys) == 1:
            return f"List every member of the directory whose surname starts with {keys[0]}."
        return f"List every member of the directory with surnames {keys[0]}-{keys[-1]}."

    def call(self, key: str) -> tuple[str, dict]:
        return "list_members", {"letter": key}

    def key_of_call(self, args: dict) -> str | None:
        return str(args.get("letter", "")).strip().upper()[:1] or None

    def key_of_output(self, text: str) -> str | None:
        found = LETTER_HEAD.search(text)
        return found.group(1) if found else None

    def key_of_item(self, index: int) -> str:
        return LETTERS[(index - 1) % 26]

    def segment_items(self, key: str) -> list[int]:
        return list(range(LETTERS.index(key) + 1, self.size + 1, 26))

    def items_in(self, text: str) -> dict[int, str]:
        return {int(m.group(4)): m.group(0) for m in MEMBER.finditer(text)}

    def name_in(self, line: str, index: int) -> str | None:
        found = MEMBER.search(line)
        return found.group(1) if found else None

    def header(self, keys: list[str]) -> str:
        return f"Surnames {keys[0]}-{keys[-1]}:" if len(keys) > 1 else f"Surnames {keys[0]}:"

    def header_keys(self, text: str) -> list[str]:
        keys: list[str] = []
        for first, last in re.findall(r"\bSurnames ([A-Z])(?:-([A-Z]))?:", text):
            keys += [k for k in LETTERS if first <= k <= (last or first)]
        return keys + [m.group(1) for m in LETTER_HEAD.finditer(text)]


class PagedCatalogWorld(PagesWorld, SegmentWorld):
    """The pages world of the structure benchmark at any N (the last page may be short): the goal counts pages, the
    tool numbers products across pages, and hand-offs name product numbers of whole pages ("products 41-80")."""

    unit, units = "page", "pages"

    def __init__(self, size: int):
        if size > 1_000:
            raise ValueError("at most 1,000 products (the distinct names)")
        World.__init__(self, size=size, batch=PER_PAGE, noun="products")
        self.pages = math.ceil(size / PER_PAGE)
        self.served = set()

        def read_catalog_page(page: int) -> str:
            if not 1 <= page <= self.pages:
                return f"There is no page {page}: the catalog has pages 1 to {self.pages}."
            first = (page - 1) * PER_PAGE + 1
            last = min(first + PER_PAGE - 1, self.size)
            self.record(range(first, last + 1))
            head = f"Catalog page {page} of {self.pages} (products {first} to {last} of {self.size}):"
            return "\n".join([head, *(product_line(i) for i in range(first, last + 1))])

        description = f"Read one page of the store's catalog ({PER_PAGE} products a page, numbered across pages)."
        self.tools = [StructuredTool.from_function(read_catalog_page, description=description)]

    @property
    def goal(self) -> str:
        if self.pages == 1:
            return "Extract every product on page 1 of the catalog"
        return f"Extract every product on pages 1-{self.pages} of the catalog"

    def relative_task(self, count: int) -> str:
        return f"Extract every product on the next {count} pages of the catalog."

    def segments(self) -> list[str]:
        return [str(p) for p in range(1, self.pages + 1)]

    def keys_in(self, text: str) -> list[str] | None:
        span = self.span(text)
        if span is None:
            return None
        first, last = (span[0] - 1) // PER_PAGE + 1, min((span[1] - 1) // PER_PAGE + 1, self.pages)
        return [str(p) for p in range(first, last + 1)]

    def task(self, keys: list[str]) -> str:
        first, last = int(keys[0]), int(keys[-1])
        return self.products_task((first - 1) * PER_PAGE + 1, min(last * PER_PAGE, self.size))

    def call(self, key: str) -> tuple[str, dict]:
        return "read_catalog_page", {"page": int(key)}

    def key_of_call(self, args: dict) -> str | None:
        try:
            return str(int(args.get("page")))
        except (TypeError, ValueError):
            return None

    def key_of_output(self, text: str) -> str | None:
        found = re.search(r"^Catalog page (\d+) of", text, flags=re.MULTILINE)
        return found.group(1) if found else None

    def key_of_item(self, index: int) -> str:
        return str((index - 1) // PER_PAGE + 1)

    def segment_items(self, key: str) -> list[int]:
        first = (int(key) - 1) * PER_PAGE + 1
        return list(range(first, min(first + PER_PAGE - 1, self.size) + 1))

    def nominal(self) -> float:
        return PER_PAGE

    def name_in(self, line: str, index: int) -> str | None:
        found = PRODUCT.search(line)
        return found.group(2) if found else None

    def header(self, keys: list[str]) -> str:
        first, last = int(keys[0]), int(keys[-1])
        return f"Products {(first - 1) * PER_PAGE + 1}-{min(last * PER_PAGE, self.size)} of the catalog:"

    def header_keys(self, text: str) -> list[str]:
        keys: list[str] = []
        for first, last in re.findall(r"\bProducts (\d+)-(\d+) of the catalog:", text):
            keys += [str(p) for p in range((int(first) - 1) // PER_PAGE + 1, (int(last) - 1) // PER_PAGE + 2)]
        return keys


class PriceBandsWorld(PricesWorld, ServedWorld):
    """The prices world of the structure benchmark, its search recording the products it returned."""

    def __init__(self, size: int):
        super().__init__(size)
        self.served = set()
        search = self.tools[0]
        inner = search.func

        def search_products(min_price: float, max_price: float, page: int = 1) -> str:
            text = inner(min_price, max_price, page)
            self.record(self.items_in(text))
            return text

        self.tools = [StructuredTool.from_function(search_products, description=search.description)]

    def name_in(self, line: str, index: int) -> str | None:
        found = PRODUCT.search(line)
        return found.group(2) if found else None


# --------------------------------------------------------------------------- cursors


def token(after: int) -> str:
    """The opaque cursor that goes on after order ``after`` (1-based; 0: the start)."""
    return "c" + hashlib.sha1(f"order-log:{after}".encode()).hexdigest()[:10]


def order_id(index: int) -> str:
    return "ORD-" + hashlib.sha1(f"order:{index}".encode()).hexdigest()[:7].upper()


ORDER = re.compile(r"(ORD-[0-9A-F]{7}) \| ([A-Z]\w+ [A-Z]\w+) × (\d+) \| \$([\d,]+\.\d\d) \| (\d{4}-\d\d-\d\d)")
LISTED_ORDERS = re.compile(r"(\d+) orders? \(the log holds (\d+)\); next_cursor: (\S+)")
CURSOR_LIMIT = 20
CURSOR_PAGE = 10


class CursorWorld(ServedWorld):
    """An order log of N orders read through opaque cursors: ``list_orders(cursor="", limit=10)`` returns up to
    ``limit`` orders (at most 20) after ``cursor`` and the ``next_cursor`` to go on ("none" at the end). A cursor
    that is not one the log issued is refused ("Invalid cursor ...: fetch a new one and try again.", the words of
    GraphQL-Pro's error)."""

    def __init__(self, size: int):
        if size > 1_000:
            raise ValueError("at most 1,000 orders")
        super().__init__(size=size, batch=CURSOR_PAGE, noun="orders")
        self.served = set()
        self.cursors = {token(k): k for k in range(size)}
        self.ids = {order_id(k): k for k in range(1, size + 1)}
        assert len(self.ids) == size, "order ids collide"

        def list_orders(cursor: str = "", limit: int = CURSOR_PAGE) -> str:
            cursor = cursor.strip()
            after = self.cursors.get(cursor) if cursor else 0
            if after is None:
                return f"Invalid cursor {cursor!r}: fetch a new one and try again."
            limit = max(1, min(int(limit), CURSOR_LIMIT))
            found = list(range(after + 1, min(after + limit, self.size) + 1))
            self.record(found)
            last = found[-1] if found else after
            following = token(last) if last < self.size else "none"
            head = f"{len(found)} orders (the log holds {self.size}); next_cursor: {following}"
            return "\n".join([head, *(self.page(i) for i in found)])

        description = (
            f"List orders of the store's order log, oldest first: up to `limit` (default {CURSOR_PAGE}, at most "
            f"{CURSOR_LIMIT}) after `cursor` (empty: from the start), and the next_cursor to go on."
        )
        self.tools = [StructuredTool.from_function(list_orders, description=description)]

    @property
    def goal(self) -> str:
        return "List every order in the store's order log: ID, item, quantity and amount."

    def names(self) -> list[str]:
        return [order_id(i) for i in range(1, self.size + 1)]

    def score(self, answer: str) -> int:
        return len(set(re.findall(r"ORD-[0-9A-F]{7}", answer)) & set(self.ids))

    def page(self, index: int) -> str:
        quantity = 1 + index % 4
        day = f"2026-{1 + index % 12:02d}-{1 + index * 7 % 28:02d}"
        return f"{order_id(index)} | {product_name(index)} × {quantity} | ${price(index) * quantity:,.2f} | {day}"

    def items_in(self, text: str) -> dict[int, str]:
        return {self.ids[m.group(1)]: m.group(0) for m in ORDER.finditer(text) if m.group(1) in self.ids}

    def line_name(self, line: str) -> str | None:
        found = ORDER.search(line)
        return found.group(1) if found else None

    def task_from(self, cursor: str) -> str:
        return f"List every order of the store's order log from cursor {cursor} on: ID, item, quantity and amount."

    def relative_task(self, count: int) -> str:
        return f"List the next {count} orders of the store's order log: ID, item, quantity and amount."

    @staticmethod
    def cursor_in(text: str) -> str | None:
        found = re.search(r"from cursor (\S+) on", text)
        return found.group(1) if found else None

    @staticmethod
    def relative_count(text: str) -> int | None:
        found = re.search(r"\bthe next (\d+) orders\b", text)
        return int(found.group(1)) if found else None

    @staticmethod
    def header(start: str, end: str, count: int, total: int) -> str:
        where = f"cursor {start}" if start else "the start"
        to = f"cursor {end}" if end != "none" else "the end of the log"
        return f"Orders from {where} to {to} ({count} orders; the log holds {total}):"

    HEADER = re.compile(
        r"Orders from (?:cursor (\S+)|the start) to (?:cursor (\S+)|the end of the log) "
        r"\((\d+) orders?; the log holds (\d+)\):"
    )


def misspelt(text: str) -> str:
    """``text`` with one letter dropped from its longest word, or one character of an opaque token changed: a copy
    slip, as models make."""
    if re.fullmatch(r"c[0-9a-f]{10}", text):
        swapped = "0" if text[5] != "0" else "1"
        return text[:5] + swapped + text[6:]
    words = text.split(" ")
    longest = max(range(len(words)), key=lambda k: len(words[k]))
    word = words[longest]
    words[longest] = word[:2] + word[3:] if len(word) > 3 else word + word[-1]
    return " ".join(words)


def line_name_of(world: World, line: str) -> str | None:
    """The item name an answer line gives, in any world (the old worlds' compact lines included)."""
    if isinstance(world, ServedWorld):
        return world.line_name(line)
    found = re.search(r"#\d+ ([A-Z]\w+ [A-Z]\w+)(?: \||:)", line) or re.search(r"City \d+: ([A-Z]\w+)", line)
    return found.group(1) if found else None


def answer_figures(world: World, answer: str) -> tuple[float | None, int]:
    """``(precision, duplicate lines)`` of ``answer``: the share of its item lines that name an item of the world
    (None without item lines), and how many item lines repeat an item an earlier line named."""
    names = set(world.names())
    seen: set[str] = set()
    lines = real = duplicates = 0
    for line in answer.splitlines():
        name = line_name_of(world, line)
        if name is None:
            continue
        lines += 1
        real += name in names
        duplicates += name in seen
        seen.add(name)
    return (real / lines if lines else None), duplicates


__all__ = [
    "CategoriesWorld",
    "CursorWorld",
    "LettersWorld",
    "PagedCatalogWorld",
    "PriceBandsWorld",
    "SegmentWorld",
    "ServedWorld",
    "StockWorld",
    "answer_figures",
    "found_names",
    "misspelt",
]
