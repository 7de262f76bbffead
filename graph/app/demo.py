"""The bundled offline scenario: rank the top N of a product catalogue with a lazy scripted worker.

The scripted worker reads at most 5 products per subtask, then reviews the plan
and hands the rest off as new subtasks, which is the behaviour replangraph asks
real models for.
"""

from __future__ import annotations

import json
import re

from langchain_core.tools import tool

from replangraph import build_graph
from replangraph.config import AgentConfig
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call
from replangraph.tools import REVIEW_TOOL, SPLIT_TOOL

DEMO_GOAL = "Extract the top 19 products from the store's bestseller ranking, with units sold and rating."
BATCH = 5

CATALOGUE = [
    ("Aurora Desk Lamp", 18420, 4.7),
    ("Basalt Water Bottle", 17655, 4.5),
    ("Cirrus Wireless Mouse", 16930, 4.4),
    ("Dune Travel Backpack", 16210, 4.8),
    ("Ember Pour-Over Kettle", 15880, 4.6),
    ("Fjord Wool Blanket", 15120, 4.7),
    ("Glint Phone Stand", 14770, 4.2),
    ("Harbor Rain Jacket", 14105, 4.5),
    ("Iris Desk Organizer", 13890, 4.3),
    ("Juniper Yoga Mat", 13340, 4.6),
    ("Kestrel Running Cap", 12975, 4.1),
    ("Lumen Reading Light", 12560, 4.4),
    ("Meridian Notebook Set", 12010, 4.5),
    ("Nimbus Pillow", 11785, 4.3),
    ("Onyx Chef Knife", 11320, 4.9),
    ("Pebble Bluetooth Speaker", 10960, 4.2),
    ("Quill Fountain Pen", 10415, 4.6),
    ("Ridge Hiking Socks", 10070, 4.4),
    ("Sable Leather Wallet", 9830, 4.5),
    ("Tundra Thermos", 9410, 4.3),
    ("Umber Ceramic Mug", 9175, 4.1),
    ("Vale Plant Pot", 8820, 4.0),
    ("Willow Bath Towel", 8390, 4.4),
    ("Xeno Cable Kit", 7960, 3.9),
    ("Yarrow Tea Sampler", 7510, 4.2),
]


def product_line(rank: int) -> str:
    """``#rank Name — units sold, rating`` for one catalogue entry."""
    name, units, rating = CATALOGUE[rank - 1]
    return f"#{rank} {name} — {units:,} units sold, rated {rating}"


@tool
def read_ranking(start: int, count: int) -> str:
    """Read `count` entries of the bestseller ranking, beginning at rank `start` (1-based)."""
    if start < 1 or count < 1:
        raise ValueError("start and count must be at least 1")
    last = min(start + count - 1, len(CATALOGUE))
    if start > last:
        return f"The ranking has only {len(CATALOGUE)} products."
    return "\n".join(product_line(rank) for rank in range(start, last + 1))


def _requested_top(text: str) -> int:
    found = re.search(r"top (\d+)", text)
    return int(found.group(1)) if found else 10


def _range_task(first: int, last: int) -> str:
    return f"Extract products ranked {first}-{last} from the bestseller ranking: name, units sold and rating."


def _plan(request: ScriptedRequest) -> dict:
    top = _requested_top(request.prompt)
    task = {"id": "1", "content": _range_task(1, top), "agent_type": "default", "depends_on": []}
    return tool_call("Plan", {"tasks": [task]})


def _work(request: ScriptedRequest) -> dict | str:
    subtask = re.search(r"Your subtask \([^)]*\): (.*)", request.prompt)
    span = re.search(r"ranked (\d+)-(\d+)", subtask.group(1) if subtask else "")
    if not span:
        return "I could not find which ranks to extract. [REPLAN] the subtask names no rank range"
    first, last = int(span.group(1)), int(span.group(2))
    read = request.last_result("read_ranking")
    if read is None:
        return tool_call("read_ranking", {"start": first, "count": min(BATCH, last - first + 1)})
    if last - first + 1 <= BATCH:
        return read
    if not request.called(REVIEW_TOOL):
        return tool_call(REVIEW_TOOL, {})
    rest = [{"content": _range_task(lo, min(lo + BATCH - 1, last))} for lo in range(first + BATCH, last + 1, BATCH)]
    return tool_call(SPLIT_TOOL, {"summary": read, "tasks": json.dumps(rest)})


def _final(request: ScriptedRequest) -> str:
    lines = list(dict.fromkeys(re.findall(r"^#\d+ .+$", request.prompt, flags=re.MULTILINE)))
    return f"Top {len(lines)} bestsellers:\n" + "\n".join(lines)


def _verdict(request: ScriptedRequest) -> dict:
    if request.prompt.startswith("Goal:"):  # the check of every result against the goal: all of the top N
        goal, _, result = request.prompt.partition("Results of the run")
        first, last = 1, _requested_top(goal)
    else:
        instruction, _, result = request.prompt.partition("Result:")
        span = re.search(r"ranked (\d+)-(\d+)", instruction)
        first, last = (int(span.group(1)), int(span.group(2))) if span else (1, 0)
    missing = [r for r in range(first, last + 1) if f"#{r} " not in result]
    if not missing:
        return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "every rank is there"})
    rest = [_range_task(lo, min(lo + BATCH - 1, last)) for lo in range(missing[0], last + 1, BATCH)]
    return tool_call("Verdict", {"complete": False, "remaining_tasks": rest, "reason": f"{len(missing)} ranks missing"})


def demo_responder(request: ScriptedRequest) -> dict | str:
    """The scripted model: plans, works in batches of 5 and hands off, checks results, writes the final list."""
    if "Verdict" in request.tool_names:
        return _verdict(request)
    if "Plan" in request.tool_names:
        return _plan(request)
    if SPLIT_TOOL in request.tool_names:
        return _work(request)
    return _final(request)


def demo_model() -> ScriptedChatModel:
    """The scenario's scripted chat model."""
    return ScriptedChatModel(respond=demo_responder)


def build_demo_graph(config: AgentConfig | None = None, **kwargs):
    """The real replangraph graph driven by the scripted model and the ranking tool."""
    return build_graph(demo_model(), tools=[read_ranking], config=config, **kwargs)


def expected_products(top: int = 19) -> list[str]:
    """Names of the top ``top`` catalogue products."""
    return [name for name, _units, _rating in CATALOGUE[:top]]
