"""A wide list-collection world in the spirit of WideSearch: the answer is a set of many entities, found with a
search tool over a local corpus, graded by entity recall and precision.

The corpus is a registry of lighthouses generated from a seed (no files, no network): each record names one
lighthouse, its region, the year it was built and its height. A task asks for every lighthouse of a few
regions built before a year, so the answer is a long list and the search results hold distractors (the
same regions, built later). ``search_registry(query, page)`` returns 10 records a page, with the total,
for the records that hold every word of the query. Recall: the wanted lighthouses the answer names, over
all wanted; precision: over all lighthouses it names.

`WidePersona` answers for it like `benchmarks.personas`: compliant (reads its region's pages a batch at a
time, hands off the rest, keeps the ones built before the year), lazy (reads one page: "I have collected
enough data"), sloppy, flaky, text-calls and reasoning.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from functools import cached_property

from langchain_core.tools import BaseTool, StructuredTool

from replangraph.testing import ScriptedRequest, tool_call
from replangraph.tools import REVIEW_TOOL, SPLIT_TOOL

from .personas import ENOUGH, PLAN, Persona, batch_size, batches, checked, subtask, verdict_call
from .worlds import ADJECTIVES, found_names, words

REGIONS = words(
    "Northmarch Eastfold Greywater Saltmere Westreach Highcliff Lowmoor Stonebay Redhaven Foxholm Ironcoast Mistvale"
)
PLACES = words("Cove Point Head Rock Reef Spit Ness Bluff Island Harbour Sound Strand Cape Skerry Bay Mull Tor Haven")
PER_PAGE = 10
QUICK_SEEDS = (1, 2)


@dataclass(frozen=True)
class Lighthouse:
    ref: int
    name: str
    region: str
    built: int
    height_m: int

    def record(self) -> str:
        return f"[L-{self.ref:04d}] {self.name}: region {self.region}, built {self.built}, {self.height_m} m tall"


class WideWorld:
    """One task over a registry generated from ``seed``: every lighthouse of ``regions`` regions built before a
    year, about ``per_region`` records a region (a quick world: 2 regions of about 25)."""

    noun = "lighthouses"

    def __init__(self, seed: int, regions: int = 4, per_region: int = 40):
        rng = random.Random(seed)
        names = [f"{adjective} {place} Light" for adjective in ADJECTIVES for place in PLACES]
        rng.shuffle(names)
        counts = [per_region + rng.randint(-per_region // 4, per_region // 4) for _ in REGIONS]
        if sum(counts) > len(names):
            raise ValueError(f"{sum(counts)} lighthouses need more than the {len(names)} names there are")
        self.registry: list[Lighthouse] = []
        for region, count in zip(REGIONS, counts, strict=True):
            for _ in range(count):
                ref = len(self.registry) + 1
                built = rng.randint(1780, 1990)
                self.registry.append(Lighthouse(ref, names[ref - 1], region, built, rng.randint(9, 60)))
        self.regions = sorted(rng.sample(REGIONS, regions), key=REGIONS.index)
        self.before = rng.choice((1880, 1890, 1900, 1910))
        self.seed = seed
        self.tools: list[BaseTool] = [
            StructuredTool.from_function(
                self.search_registry,
                name="search_registry",
                description="Search the lighthouse registry: the records holding every word of `query` "
                f"(a region's name finds its lighthouses), {PER_PAGE} a page, `page` from 1.",
            )
        ]

    @property
    def goal(self) -> str:
        regions = ", ".join(self.regions[:-1]) + f" and {self.regions[-1]}"
        return (
            f"List every lighthouse in the registry that stands in the regions {regions} and was built before "
            f"{self.before}, with the year it was built. Search the registry region by region."
        )

    @cached_property
    def wanted(self) -> list[Lighthouse]:
        return [h for h in self.registry if h.region in self.regions and h.built < self.before]

    @property
    def size(self) -> int:
        return len(self.wanted)

    def names(self) -> list[str]:
        return [h.name for h in self.wanted]

    def score(self, answer: str) -> int:
        """Wanted lighthouses the answer names (recall's numerator)."""
        return found_names(answer, self.names())

    def named(self, answer: str) -> int:
        """Lighthouses of the registry the answer names, wanted or not (precision's denominator)."""
        return found_names(answer, [h.name for h in self.registry])

    def matches(self, query: str) -> list[Lighthouse]:
        words = re.findall(r"\w+", query.lower())
        return [h for h in self.registry if words and all(w in h.record().lower() for w in words)]

    def search_registry(self, query: str, page: int = 1) -> str:
        found = self.matches(query)
        if not found:
            return f"No records hold every word of {query!r}."
        first = (max(int(page), 1) - 1) * PER_PAGE
        if first >= len(found):
            return f"Page {page} is past the last result ({len(found)} results for {query!r})."
        shown = found[first : first + PER_PAGE]
        head = f"Results {first + 1}-{first + len(shown)} of {len(found)} for {query!r}:"
        return "\n".join([head, *(h.record() for h in shown)])


# --------------------------------------------------------------------------- the personas

RESULTS = re.compile(r"Results (\d+)-(\d+) of (\d+) for '([^']*)'")
RECORD = re.compile(r"([A-Z]\w+ [A-Z]\w+ Light)(?::| \() ?region (\w+), built (\d+)")
"""A lighthouse as a search result shows it (``[L-0001] Amber Cove Light: region ..., built 1872, ...``) or as
an answer line lists it (``- Amber Cove Light (region ..., built 1872)``)."""
REGION_TASK = re.compile(r"region (\w+) built before (\d+)(?:, from result (\d+) to (\d+))?")
READ = re.compile(r"read results (\d+)-(\d+) of (\d+)")


class WidePersona(Persona):
    """A persona of `benchmarks.personas` answering for a `WideWorld`."""

    world: WideWorld

    def summary(self, request: ScriptedRequest) -> str:
        return "Facts so far:\n" + "\n".join(self.kept_lines(self.records(request)))

    def plan_tasks(self) -> list[dict]:
        return [
            {"id": str(i), "content": self.region_task(region, 1, None), "depends_on": []}
            for i, region in enumerate(self.world.regions, start=1)
        ]

    def region_task(self, region: str, first: int, last: int | None) -> str:
        span = f", from result {first} to {last}" if last else ""
        return f"List every lighthouse of region {region} built before {self.world.before}{span}, with its year."

    def replan(self, request: ScriptedRequest):
        tasks = [{**t, "id": f"r{t['id']}"} for t in self.plan_tasks()]
        return tool_call(PLAN, {"tasks": tasks})

    # ------------------------------------------------------------------ reading

    def records(self, request: ScriptedRequest) -> dict[str, tuple[str, int]]:
        """Every record in the request's tool results and prompt: ``{name: (region, year)}``."""
        texts = [str(m.content) for m in request.tool_results] + [request.prompt]
        return {name: (region, int(year)) for text in texts for name, region, year in RECORD.findall(text)}

    def kept_lines(self, records: dict[str, tuple[str, int]], region: str | None = None) -> list[str]:
        """The records built before the year (of ``region``), as answer lines."""
        keep = [
            (name, year)
            for name, (where, year) in records.items()
            if year < self.world.before and region in (None, where)
        ]
        return [f"- {name} (region {records[name][0]}, built {year})" for name, year in keep]

    def pages_read(self, request: ScriptedRequest) -> tuple[int, int]:
        """``(last result read, total results)`` of the searches in the request."""
        read, total = 0, 0
        for message in request.tool_results:
            for _, last, of, _ in RESULTS.findall(str(message.content)):
                read, total = max(read, int(last)), int(of)
        return read, total

    def search(self, region: str, first: int, last: int) -> list[dict]:
        """One search call per page of results ``first``..``last``."""
        pages = range((first - 1) // PER_PAGE + 1, (last - 1) // PER_PAGE + 2)
        return [tool_call("search_registry", {"query": region, "page": page}) for page in pages][: self.pages_per_turn]

    # ------------------------------------------------------------------ replangraph workers

    def work(self, request: ScriptedRequest):
        task_id, instruction = subtask(request)
        wanted = REGION_TASK.search(instruction)
        if wanted is None:
            return self.final(request)
        region, first = wanted.group(1), int(wanted.group(3) or 1)
        size = batch_size(request, PER_PAGE)
        read, total = self.pages_read(request)
        if not read:
            stop = first + size - 1 if not wanted.group(4) else min(first + size - 1, int(wanted.group(4)))
            return self.search(region, first, stop)
        last = int(wanted.group(4) or total)
        found = self.region_answer(request, region, first, read, total)
        if read >= last:
            return found
        if self.name == "lazy":
            return f"{ENOUGH}\n{found}"
        if not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        rest = [self.region_task(region, lo, hi) for lo, hi in batches(read + 1, last, size)]
        tasks = json.dumps([{"content": c} for c in rest])
        if self.name == "sloppy":
            tasks = f"```json\n{tasks}\n```"
        return tool_call(SPLIT_TOOL, {"summary": found, "tasks": tasks}, call_id=f"split_{task_id}_{read}")

    def region_answer(self, request: ScriptedRequest, region: str, first: int, read: int, total: int) -> str:
        lines = self.kept_lines(self.records(request), region)
        before = self.world.before
        head = f"Searched {region!r}: read results {first}-{read} of {total}; {len(lines)} built before {before}."
        return "\n".join([head, *lines])

    # ------------------------------------------------------------------ whole-goal agents

    def react(self, request: ScriptedRequest):
        """Region after region, one page a turn; lazy: one page in all. With a todo list, first the regions."""
        regions = self.world.regions
        if "write_todos" in request.tool_names and not request.called("write_todos"):
            todos = [{"content": f"Search region {r}", "status": "pending"} for r in regions]
            todos[0]["status"] = "in_progress"
            return tool_call("write_todos", {"todos": todos})
        progress = {region: (0, None) for region in regions}
        for message in request.tool_results:
            for _, last, of, query in RESULTS.findall(str(message.content)):
                if query in progress:
                    progress[query] = (max(progress[query][0], int(last)), int(of))
        searched = [r for r in regions if progress[r][1] is not None]
        if self.name == "lazy" and searched:
            return f"{ENOUGH}\n" + "\n".join(self.kept_lines(self.records(request)))
        for region in regions:
            read, total = progress[region]
            if total is None or read < total:
                return tool_call("search_registry", {"query": region, "page": read // PER_PAGE + 1})
        return "\n".join(self.kept_lines(self.records(request)))

    # ------------------------------------------------------------------ checking and answering

    def verdict(self, request: ScriptedRequest):
        instruction, result = checked(request)
        wanted, read = REGION_TASK.search(instruction), READ.search(result)
        if wanted is None or read is None:
            return verdict_call("nothing to count")
        region, last, total = wanted.group(1), int(read.group(2)), int(read.group(3))
        end = int(wanted.group(4) or total)
        if last >= end:
            return verdict_call("every result was read")
        rest = [self.region_task(region, lo, hi) for lo, hi in batches(last + 1, end, batch_size(request, PER_PAGE))]
        return verdict_call(f"results {last + 1}-{end} of {region} were not read", rest)

    def final(self, request: ScriptedRequest) -> str:
        lines = self.kept_lines(self.records(request))
        return f"{len(lines)} lighthouses built before {self.world.before}:\n" + "\n".join(lines)


def wide_persona(name: str, world: WideWorld) -> WidePersona:
    """Persona ``name`` for ``world``; the lazy one reads one page before it stops, as a model that reads the
    first results and calls it done."""
    return WidePersona(name, world, pages_per_turn=1 if name == "lazy" else None)
