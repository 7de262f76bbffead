"""The structure benchmark (issue 40): work addressed otherwise than by one numbered list, against the engine's
range heuristics.

    python -m benchmarks structure                     # every world at full size (a few minutes)
    python -m benchmarks structure --quick             # the parallel plan of 32, N = 300 and N = 19 (under a minute)
    python -m benchmarks structure --json structure.json --strict

Worlds and personas: `benchmarks.structure_worlds`. replangraph runs with ``AgentConfig()`` (only
``retry_backoff_s`` set to 0: nothing fails here); plain ReAct is LangChain's ``create_agent`` with the same
tools and the same scripted model, no call limit. Rows:

1. **parallel**: a plan of 32 independent tasks ("Answer question 0." ... "Answer question 31.") and one of 16
   ("Read document 0." ...), each item one call of a tool that takes 200 ms; replangraph at ``max_concurrency``
   1 and 32 (``AgentConfig``; the graph sizes LangGraph's pool to it), the same persona. Wall: min/median of ``--runs``;
   speedup: wall(1) / wall(32), the mins (and the medians), measured in one process.
2. **pages**: "Extract every product on pages 1-15 of the catalog" (20 products a page, N = 300 and 1,000, the
   goal asking for every page), the persona handing off by product numbers ("Extract products 41-90 of the
   catalog"); replangraph and ReAct.
3. **prices**: "List every product priced from 0 to 1,000 dollars" (every price is below $1,000), handed off by
   price bands ("from 100 to 200 dollars"); prices have cents ($99.99). N = 300 and 1,000; replangraph and
   ReAct; the prices of the products lost.
4. **next-5**: the bestseller ranking, handed off as "Extract the next 5 products of the ranking." every time,
   each such subtask reviewing the plan to find where to go on. N = 19 and 100; replangraph.

Figures: recall (items the final answer names / N), model calls (every chat model call, by a callback), prompt
tokens (the scripted model's ``usage_metadata``), subtasks (``len(out["tasks"])``: the tasks the run made) and
wall time. Targets: (a) replangraph recalls every item on every row (each persona reads every item it is
asked for); (b) replangraph recalls at least what ReAct does; (c) the plan of 32 runs as 32 subtasks at
``max_concurrency`` 32, at least 12× faster than at 1; the plan of 16 as 16 subtasks, at least 6× faster (the
same share of its ideal speedup, 16×). The exit code is 0 unless the benchmark crashes; with ``--strict``, 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from replangraph import AgentConfig, build_graph

from .harness import Meter, Outcome, create_agent_baseline, langchain_available, measure
from .persona_table import machine, short
from .structure_worlds import NextWorld, PagesWorld, ParallelWorld, PricesWorld, ProductWorld, persona_for
from .worlds import World

ENGINE = {"retry_backoff_s": 0.0}
"""The one default lowered: nothing fails here, so no retry waits."""
WIDE = 32
"""The ``max_concurrency`` the parallel plans are run at besides 1."""
PARALLEL = ((32, "questions", 12.0), (16, "reads", 6.0))
"""The parallel plans: items, kind, the speedup target at ``max_concurrency`` `WIDE`."""
SIZES = {"pages": (300, 1000), "prices": (300, 1000), "next-5": (19, 100)}
QUICK_SIZES = {"pages": (300,), "prices": (300,), "next-5": (19,)}
WORLDS: dict[str, Callable[[int], World]] = {"pages": PagesWorld, "prices": PricesWorld, "next-5": NextWorld}
WITH_REACT = frozenset({"pages", "prices"})
LOST_SHOWN = 8


@dataclass
class Row:
    """One agent on one world at one size (at one concurrency, for the parallel plans)."""

    world: str
    size: int
    agent: str
    outcomes: list[Outcome]
    subtasks: int | None = None
    lost: list[str] = field(default_factory=list)
    """What the answer left out, as the table names it (prices: "$99.99")."""

    @property
    def first(self) -> Outcome:
        return self.outcomes[0]

    @property
    def recall(self) -> float:
        return self.first.recovered / self.first.size if self.first.size else 0.0

    @property
    def walls(self) -> list[float]:
        return [o.wall_s for o in self.outcomes]

    def wall_cell(self) -> str:
        walls = self.walls
        if len(walls) == 1:
            return f"{walls[0]:.2f} s"
        return f"{min(walls):.2f}/{statistics.median(walls):.2f} s"

    def notes(self) -> str:
        parts = [f"crashed: {self.first.error}"] if self.first.error else []
        if self.lost:
            more = f" and {len(self.lost) - LOST_SHOWN} more" if len(self.lost) > LOST_SHOWN else ""
            parts.append(f"lost {len(self.lost)}: {', '.join(self.lost[:LOST_SHOWN])}{more}")
        return "; ".join(parts)

    def cells(self) -> list[str]:
        o = self.first
        return [
            self.world,
            str(self.size),
            self.agent,
            f"{self.recall:.2f} ({o.recovered}/{o.size})",
            str(o.calls),
            short(o.prompt_tokens),
            "—" if self.subtasks is None else str(self.subtasks),
            self.wall_cell(),
            self.notes(),
        ]

    def as_json(self) -> dict:
        o = self.first
        return {
            "world": self.world,
            "size": self.size,
            "agent": self.agent,
            "recall": self.recall,
            "recovered": o.recovered,
            "calls": o.calls,
            "prompt_tokens": o.prompt_tokens,
            "subtasks": self.subtasks,
            "wall_s": [round(w, 3) for w in self.walls],
            "lost": self.lost,
            "error": o.error,
        }


@dataclass
class Speedup:
    """One parallel plan: its rows at ``max_concurrency`` 1 and ``wide``, and the target."""

    world: str
    size: int
    serial: Row
    wide: Row
    target: float

    @property
    def by_min(self) -> float:
        return min(self.serial.walls) / min(self.wide.walls)

    @property
    def by_median(self) -> float:
        return statistics.median(self.serial.walls) / statistics.median(self.wide.walls)

    def cells(self) -> list[str]:
        figures = f"**{self.by_min:.1f}×** (mins), {self.by_median:.1f}× (medians)"
        subtasks = f"{self.serial.subtasks} → {self.wide.subtasks}"
        name = f"speedup, max_concurrency 1 → {WIDE}"
        return [self.world, str(self.size), name, "", "", "", subtasks, figures, f"target ≥ {self.target:g}×"]

    def as_json(self) -> dict:
        return {
            "world": self.world,
            "size": self.size,
            "speedup_by_min": round(self.by_min, 2),
            "speedup_by_median": round(self.by_median, 2),
            "subtasks_serial": self.serial.subtasks,
            "subtasks_wide": self.wide.subtasks,
            "target": self.target,
        }


@dataclass
class Target:
    name: str
    met: bool
    figure: str


def replangraph_run(world: World, concurrency: int = 1) -> tuple[Outcome, int]:
    """replangraph on defaults at ``max_concurrency`` (``AgentConfig``: the compiled graph sizes LangGraph's pool,
    the run config's ``max_concurrency``, to it plus two), and the tasks it made."""
    persona = persona_for(world)
    graph = build_graph(persona.model(), tools=world.tools, config=AgentConfig(max_concurrency=concurrency, **ENGINE))
    made: dict = {}

    def invoke(meter: Meter) -> str:
        out = graph.invoke({"messages": [("user", world.goal)]}, {"callbacks": [meter]})
        made.update(out.get("tasks") or {})
        return out["final_answer"]

    return measure(world, invoke), len(made)


def react_run(world: World) -> Outcome:
    """Plain ReAct (``create_agent``, no call limit) with the world's tools and the same persona."""
    return create_agent_baseline(todo_list=False)(persona_for(world).model(), world)


def lost_of(world: World, outcome: Outcome) -> list[str]:
    if isinstance(world, PricesWorld):
        return world.lost(outcome.answer)
    if isinstance(world, ProductWorld):
        return [f"#{i}" for i in world.missing(outcome.answer)]
    return []


def parallel_plan(size: int, kind: str, target: float, runs: int) -> tuple[list[Row], Speedup]:
    rows = []
    for concurrency in (1, WIDE):
        outcomes, made = [], 0
        for _ in range(runs):
            outcome, made = replangraph_run(ParallelWorld(size, kind), concurrency)
            outcomes.append(outcome)
        rows.append(Row("parallel " + kind, size, f"replangraph, max_concurrency {concurrency}", outcomes, made))
    return rows, Speedup("parallel " + kind, size, rows[0], rows[1], target)


def world_rows(name: str, size: int) -> list[Row]:
    world = WORLDS[name](size)
    outcome, made = replangraph_run(world)
    rows = [Row(name, size, "replangraph", [outcome], made, lost_of(world, outcome))]
    if name in WITH_REACT:
        world = WORLDS[name](size)
        theirs = react_run(world)
        rows.append(Row(name, size, "ReAct", [theirs], None, lost_of(world, theirs)))
    return rows


def targets(rows: Sequence[Row], speedups: Sequence[Speedup]) -> list[Target]:
    found = []
    for row in rows:
        if row.agent.startswith("replangraph"):
            where = f"{row.world} N={row.size} {row.agent}"
            found.append(Target(f"(a) recall 1.0, {where}", row.recall == 1.0, f"{row.recall:.2f}"))
    for row in rows:
        if row.agent == "ReAct":
            ours = next(r for r in rows if (r.world, r.size, r.agent) == (row.world, row.size, "replangraph"))
            figure = f"{ours.recall:.2f} vs {row.recall:.2f}"
            found.append(Target(f"(b) ≥ ReAct, {row.world} N={row.size}", ours.recall >= row.recall, figure))
    for plan in speedups:
        found.append(
            Target(
                f"(c) {plan.size} subtasks at max_concurrency {WIDE}, {plan.world}",
                plan.wide.subtasks == plan.size,
                str(plan.wide.subtasks),
            )
        )
        found.append(
            Target(f"(c) speedup ≥ {plan.target:g}×, {plan.world}", plan.by_min >= plan.target, f"{plan.by_min:.1f}×")
        )
    return found


HEADER = "| world | N | agent | recall | model calls | prompt tokens | subtasks | wall (min/median) | notes |"


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks structure", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the parallel plan of 32, N = 300 and N = 19 only")
    parser.add_argument("--runs", type=int, default=3, help="runs of each parallel cell: wall time is min/median")
    parser.add_argument("--worlds", nargs="+", choices=["parallel", *WORLDS], default=["parallel", *WORLDS])
    parser.add_argument("--json", metavar="PATH", help="also write every figure to PATH as JSON")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if not langchain_available():
        parser.error("the ReAct rows need langchain 1.x: pip install -e '.[test]'")
    runs = max(1, args.runs)
    sizes = QUICK_SIZES if args.quick else SIZES
    plans = PARALLEL[:1] if args.quick else PARALLEL
    print(f"Machine: {machine()}\n", file=out)
    print(HEADER, file=out)
    print("|" + "---|" * HEADER.count(" | ") + "---|", file=out, flush=True)
    rows: list[Row] = []
    speedups: list[Speedup] = []

    def show(new: Sequence[Row | Speedup]) -> None:
        for row in new:
            print("| " + " | ".join(row.cells()) + " |", file=out, flush=True)

    if "parallel" in args.worlds:
        for size, kind, target in plans:
            plan_rows, speedup = parallel_plan(size, kind, target, runs)
            rows += plan_rows
            speedups.append(speedup)
            show([*plan_rows, speedup])
    for name in WORLDS:
        if name in args.worlds:
            for size in sizes[name]:
                new = world_rows(name, size)
                rows += new
                show(new)
    judged = targets(rows, speedups)
    missed = [t for t in judged if not t.met]
    print(file=out)
    for target in missed:
        print(f"missed: {target.name} ({target.figure})", file=out)
    print(f"targets met: {len(judged) - len(missed)} of {len(judged)}", file=out)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "machine": machine(),
                    "config": ENGINE,
                    "rows": [row.as_json() for row in rows],
                    "speedups": [s.as_json() for s in speedups],
                    "targets": [t.__dict__ for t in judged],
                    "targets_met": len(judged) - len(missed),
                    "targets_applicable": len(judged),
                },
                f,
                indent=1,
            )
    return 1 if args.strict and missed else 0
