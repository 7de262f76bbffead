"""Scripted worlds for the benchmarks: data sources an agent reads through tools, and a score.

Every world is generated from its size alone (no files, no network), so a run is
the same on every machine and against a real model.

- `CatalogWorld`: extract the top N products of a bestseller ranking, read 5 per call.
- `ReportWorld`: look up K cities (4 per call), compare their rainfall, write a
  report ranking every city: three subtasks that depend on each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from langchain_core.messages import ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool, StructuredTool


def words(text: str) -> list[str]:
    """The words of ``text``."""
    return text.split()


ADJECTIVES = words(
    "Amber Basalt Cedar Dune Ember Fjord Glint Harbor Iris Juniper Kestrel Lumen Meridian Nimbus Onyx "
    "Pebble Quill Ridge Sable Tundra Umber Vale Willow Xeno Yarrow Zephyr Aspen Birch Cobalt Delta Echo "
    "Flint Garnet Hazel Indigo Jade Krill Lotus Maple Nova"
)
NOUNS = words(
    "Lamp Bottle Mouse Backpack Kettle Blanket Stand Jacket Organizer Mat Cap Light Notebook Pillow Knife "
    "Speaker Pen Socks Wallet Thermos Mug Pot Towel Cable Sampler"
)
CITY_STEMS = words(
    "Ash Bel Cor Dal Eld Fen Gar Hol Ivo Jun Kel Lor Mar Nor Ost Pra Quen Ros Sel Tor Ulm Var Wes Yor Zan"
)
CITY_ENDS = words("ford haven mouth port wick bury stead dale field holm")
FILLER = (
    "Customers mention the sturdy build, the quiet finish and the fair price; the listing shows several "
    "photos, a size chart, shipping times for three regions and a short note from the maker."
)


def product_name(rank: int) -> str:
    """The name of the product at ``rank`` (1-based; unique up to 1,000 products, then repeating)."""
    i = rank - 1
    return f"{ADJECTIVES[i % len(ADJECTIVES)]} {NOUNS[(i // len(ADJECTIVES)) % len(NOUNS)]}"


def city_name(index: int) -> str:
    """The unique name of city ``index`` (1-based; up to 250 cities)."""
    i = index - 1
    return f"{CITY_STEMS[i % len(CITY_STEMS)]}{CITY_ENDS[(i // len(CITY_STEMS)) % len(CITY_ENDS)]}"


def found_names(text: str, names: list[str]) -> int:
    """How many of ``names`` appear in ``text`` as whole words."""
    return sum(1 for name in names if re.search(rf"\b{re.escape(name)}\b", text))


@dataclass
class World:
    """What the personas and the harness need to know of a world."""

    size: int
    batch: int
    noun: str
    """What one item is called in instructions ("products", "cities")."""
    tools: list[BaseTool] = field(default_factory=list)

    @property
    def goal(self) -> str:
        raise NotImplementedError

    def names(self) -> list[str]:
        raise NotImplementedError

    def score(self, answer: str) -> int:
        """Items of this world named in ``answer``."""
        return found_names(answer, self.names())

    def range_task(self, first: int, last: int) -> str:
        """The instruction for items ``first``..``last``."""
        raise NotImplementedError

    def range_of(self, text: str) -> tuple[int, int] | None:
        """The item range an instruction asks for, e.g. (6, 10), else None."""
        found = re.search(rf"(?:ranked|{self.noun}) (\d+)-(\d+)", text)
        return (int(found.group(1)), int(found.group(2))) if found else None

    def item_task(self, index: int) -> str:
        """The instruction for the one item ``index``."""
        raise NotImplementedError

    def item_of(self, text: str) -> int | None:
        """The one item an `item_task` instruction asks for, else None."""
        raise NotImplementedError

    def described(self, first: int, last: int) -> str:
        """A sentence that says items ``first``..``last`` were handled, naming none of them."""
        raise NotImplementedError

    def size_in_goal(self, text: str) -> int | None:
        """The number of items a goal asks for."""
        found = re.search(rf"(?:top|the) (\d+) {self.noun}", text)
        return int(found.group(1)) if found else None

    def items_in(self, text: str) -> dict[int, str]:
        """``{index: compact line}`` for every item whose data ``text`` holds (raw pages or compact lines)."""
        raise NotImplementedError

    def ordered_lines(self, items: dict[int, str]) -> list[str]:
        """Compact lines in the order the answer should list them."""
        return [items[i] for i in sorted(items)]

    def page(self, index: int) -> str:
        """The full record of item ``index`` as the tool shows it."""
        raise NotImplementedError

    def item_tokens(self) -> int:
        """The items' own tokens: every page the tool returns, once, counted as the requests are."""
        pages = "\n".join(self.page(i) for i in range(1, self.size + 1))
        return count_tokens_approximately([ToolMessage(pages, tool_call_id="pages")])

    def paged_tool(self, name: str, description: str) -> BaseTool:
        """A tool that reads up to ``batch`` item pages, beginning at ``start`` (1-based)."""

        def read(start: int, count: int = self.batch) -> str:
            if start < 1 or count < 1:
                raise ValueError("start and count must be at least 1")
            last = min(start + min(count, self.batch) - 1, self.size)
            if start > last:
                return f"There are only {self.size} {self.noun}."
            return "\n".join(self.page(i) for i in range(start, last + 1))

        return StructuredTool.from_function(read, name=name, description=description)


class CatalogWorld(World):
    """The top-N bestseller extraction. Each product page is about 68 tokens; the tool reads 5."""

    def __init__(self, size: int):
        super().__init__(size=size, batch=5, noun="products")
        description = "Read up to 5 product pages of the bestseller ranking, beginning at rank `start` (1-based)."
        self.tools = [self.paged_tool("read_ranking", description)]

    @property
    def goal(self) -> str:
        return (
            f"Extract the top {self.size} products from the store's bestseller ranking: "
            "name, units sold and rating for each."
        )

    def names(self) -> list[str]:
        return [product_name(r) for r in range(1, self.size + 1)]

    def range_task(self, first: int, last: int) -> str:
        return f"Extract products ranked {first}-{last} from the bestseller ranking: name, units sold and rating."

    def item_task(self, index: int) -> str:
        return f"Extract the product ranked {index} from the bestseller ranking: name, units sold and rating."

    def item_of(self, text: str) -> int | None:
        found = re.search(r"\bproduct ranked (\d+)\b(?!-)", text)
        return int(found.group(1)) if found else None

    def described(self, first: int, last: int) -> str:
        return (
            f"Extracted products ranked {first}-{last} from the bestseller ranking "
            "(name, units sold and rating for each)."
        )

    def page(self, rank: int) -> str:
        units = 20_000 - 17 * rank if rank <= 1_000 else 3_000_000 // rank  # fewer down the ranking, never none
        rating = 3.5 + (rank * 7 % 15) / 10
        return (
            f"#{rank} {product_name(rank)} | {units:,} units sold | rated {rating:.1f} "
            f"({units // 9:,} reviews) | SKU P-{rank:04d} | {FILLER}"
        )

    ITEM = re.compile(r"#(\d+) ([A-Z]\w+ [A-Z]\w+)(?: \||:) ([\d,]+) units sold(?: \||,) rated ([\d.]+)")

    def items_in(self, text: str) -> dict[int, str]:
        return {
            int(m.group(1)): f"#{m.group(1)} {m.group(2)}: {m.group(3)} units sold, rated {m.group(4)}"
            for m in self.ITEM.finditer(text)
        }


class ReportWorld(World):
    """Look up K cities, compare their rainfall, write a ranked report: a plan with dependencies."""

    def __init__(self, size: int):
        super().__init__(size=size, batch=4, noun="cities")
        description = "Look up the climate records of up to 4 survey cities, beginning at city `start` (1-based)."
        self.tools = [self.paged_tool("lookup_cities", description)]

    @property
    def goal(self) -> str:
        return (
            f"Look up the climate figures of the {self.size} cities in the survey, compare their yearly "
            "rainfall and write a report that ranks every city by rainfall."
        )

    def names(self) -> list[str]:
        return [city_name(i) for i in range(1, self.size + 1)]

    def range_task(self, first: int, last: int) -> str:
        return f"Look up the climate figures of survey cities {first}-{last}."

    def item_task(self, index: int) -> str:
        return f"Look up the climate figures of survey city {index}."

    def item_of(self, text: str) -> int | None:
        found = re.search(r"\bsurvey city (\d+)\b(?!-)", text)
        return int(found.group(1)) if found else None

    def described(self, first: int, last: int) -> str:
        return (
            f"Looked up the climate figures of survey cities {first}-{last} "
            "(yearly rainfall, mean temperature and population for each)."
        )

    def rainfall(self, index: int) -> int:
        return 400 + (index * 389) % 1_700

    def page(self, index: int) -> str:
        return (
            f"City {index}: {city_name(index)} | yearly rainfall {self.rainfall(index):,} mm | "
            f"mean temperature {6 + index * 7 % 19} C | population {(index * 7_919) % 900_000 + 20_000:,} | {FILLER}"
        )

    ITEM = re.compile(r"City (\d+): ([A-Z]\w+)(?: \| yearly rainfall|,) ([\d,]+) mm")

    def items_in(self, text: str) -> dict[int, str]:
        return {int(m.group(1)): f"City {m.group(1)}: {m.group(2)}, {m.group(3)} mm" for m in self.ITEM.finditer(text)}

    def ordered_lines(self, items: dict[int, str]) -> list[str]:
        """Ranked by rainfall, wettest first: ``1. City 7: Holford, 2,123 mm``."""
        ranked = sorted(items, key=lambda i: -int(re.search(r", ([\d,]+) mm", items[i]).group(1).replace(",", "")))
        return [f"{place}. {items[i]}" for place, i in enumerate(ranked, 1)]


WORLDS = {"catalog": CatalogWorld, "report": ReportWorld}
