"""The persona matrix: replangraph on defaults beside plain ReAct, every persona at every size, against targets.

    python -m benchmarks matrix                     # every world, N = 19, 100 and 1,000
    python -m benchmarks matrix --quick             # N = 19 and 100
    python -m benchmarks matrix --worlds catalog report --personas one-rest announcer --sizes 100
    python -m benchmarks matrix --worlds cursor categories --personas compliant misspells --sizes 100
    python -m benchmarks matrix --json matrix.json  # every figure, as JSON too

Each cell is one run of a scripted persona on one world: replangraph with ``AgentConfig()`` (only
``retry_backoff_s`` lowered: scripted failures need no real wait) and plain ReAct, LangChain's ``create_agent``
with the same tools and no call limit. The worlds addressed by numbered item ranges (catalog, report) run the
personas of `benchmarks.personas`; those that are not (cursor, categories, letters, pages, prices and the stock
world's one-number question, `benchmarks.unnumbered_worlds`) run those of `benchmarks.unnumbered_personas`.
Figures: recall (items in the final answer / N; the stock world: N when the answer states the right total, else
0), precision (the share of the answer's item lines that name an item of the world), duplicate lines (item lines
that name an item an earlier line named), answer length (characters), model calls (the requests the persona
answered or failed, client retries included: ReAct gets ChatOpenAI's default 2 client retries, replangraph none,
as in the persona table) and prompt tokens. Counts and tokens are the same every run; wall time varies.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TextIO

from langchain_core.language_models import BaseChatModel

from replangraph import AgentConfig

from .harness import Outcome, create_agent_baseline, langchain_available, replangraph_agent
from .persona_table import SCRIPTED_RETRY, machine, persona_model, run_cell, short
from .personas import PERSONAS
from .unnumbered_personas import PERSONAS as UNNUMBERED_PERSONAS
from .unnumbered_personas import persona as unnumbered_persona
from .unnumbered_personas import personas_of as unnumbered_personas_of
from .unnumbered_worlds import (
    CategoriesWorld,
    CursorWorld,
    LettersWorld,
    PagedCatalogWorld,
    PriceBandsWorld,
    ServedWorld,
    StockWorld,
    answer_figures,
)
from .worlds import WORLDS, World

NUMBERED_WORLDS = WORLDS
"""The worlds addressed by numbered item ranges, with the personas of `benchmarks.personas`."""
UNNUMBERED_WORLDS: dict[str, type[World]] = {
    "cursor": CursorWorld,
    "categories": CategoriesWorld,
    "letters": LettersWorld,
    "pages": PagedCatalogWorld,
    "prices": PriceBandsWorld,
    "stock": StockWorld,
}
"""The worlds that are not (issue 40), with the personas of `benchmarks.unnumbered_personas`."""
ALL_WORLDS: dict[str, type[World]] = {**NUMBERED_WORLDS, **UNNUMBERED_WORLDS}
ALL_PERSONAS = tuple(dict.fromkeys(PERSONAS + UNNUMBERED_PERSONAS))
AGGREGATE = frozenset({"stock"})
"""Worlds whose question has a one-number answer: target (e) judges it."""
ANSWER_MAX = 200
"""The most characters a one-number answer may take (target e)."""
SIZES = (19, 100, 1000)
QUICK_SIZES = (19, 100)
REPORT_MAX = 250
"""The report world names at most 250 distinct cities."""
WITHIN = 2.0
"""How many times the calls of the row it is compared with replangraph may make (targets c and d)."""
REACT_CLIENT_RETRIES = 2
"""ChatOpenAI's default ``max_retries``: what a plain agent gets from its client."""
BASELINE = "compliant"
"""The persona whose replangraph calls target (d) compares with."""
ONE_CALL_A_TURN = frozenset({"single-call", "restarts"})
"""Personas that make one tool call a turn (models without parallel tool calls): target (d) compares them with
`BASELINE` making one call a turn too, the same model cooperating."""

LEGEND = f"""\
Targets, per row: (a) replangraph recalls every item; (b) replangraph recalls at least what ReAct does;
(c) where ReAct recalls every item, replangraph makes at most {WITHIN:g}× ReAct's model calls; (d) replangraph
makes at most {WITHIN:g}× the calls it makes with the `{BASELINE}` persona at the same N and world, making as
many tool calls a turn: a persona that makes one call a turn (single-call, a model without parallel tool calls)
is compared with `{BASELINE}` making one call a turn (`{BASELINE}` reading a whole batch of ten pages in one
turn would need a tenth of the turns: `--json` keeps that figure too). (c) and (d) print their ratio on every
row; (c) counts only where ReAct recalls everything ("—" elsewhere). They measure different things and can
disagree: (c) compares replangraph with a plain agent on the same model, (d) with the same model cooperating;
a persona whose ReAct run is cheap can fail (c) and pass (d). Rows where they disagree are listed under each
table. In the worlds not addressed by numbered ranges, (a) applies only where replangraph's run read every item at
some point (its tools returned each at least once; "—" and "not all read" elsewhere), and in the stock world
(e) judges the answer: the right total, in at most {ANSWER_MAX} characters."""


@dataclass
class Target:
    """One target of one row: ``met`` (None: it does not apply) and the figure it was judged on."""

    met: bool | None
    figure: str

    def cell(self) -> str:
        return {True: "✓ ", False: "✗ ", None: "— "}[self.met] + self.figure


@dataclass
class Row:
    """One persona at one size in one world: replangraph and ReAct, and the calls of replangraph's baseline."""

    world: str
    size: int
    persona: str
    ours: Outcome
    react: Outcome
    baseline_calls: int
    """replangraph's calls with `BASELINE` making as many tool calls a turn as the persona (target d)."""
    batch_baseline_calls: int | None = None
    """With `BASELINE` reading a whole batch in one turn, where that differs (a one-call-a-turn persona)."""
    read_all: bool | None = None
    """Whether replangraph's run read every item at some point (None: a world that does not record it)."""

    def targets(self) -> dict[str, Target]:
        ours, react = recall(self.ours), recall(self.react)
        vs_react = ratio(self.ours.calls, self.react.calls)
        vs_baseline = ratio(self.ours.calls, self.baseline_calls)
        judged = {
            "a": Target(ours == 1.0, share(ours)),
            "b": Target(ours >= react, f"{share(ours)} vs {share(react)}"),
            "c": Target(vs_react <= WITHIN if react == 1.0 else None, f"{vs_react:.1f}×"),
            "d": Target(vs_baseline <= WITHIN, f"{vs_baseline:.1f}×"),
        }
        if self.read_all is False:
            judged["a"] = Target(None, f"{share(ours)}, not all read")
        if self.world in AGGREGATE:
            length = len(self.ours.answer)
            right = self.ours.recovered == self.ours.size
            judged["e"] = Target(right and length <= ANSWER_MAX, f"{'right' if right else 'wrong'}, {length} chars")
        return judged

    def disagrees(self) -> bool:
        """Whether targets (c) and (d) both apply and one is met, the other not."""
        judged = self.targets()
        return judged["c"].met is not None and judged["c"].met != judged["d"].met

    def as_json(self) -> dict:
        world = ALL_WORLDS[self.world](self.size)
        return {
            "world": self.world,
            "size": self.size,
            "persona": self.persona,
            "replangraph": {**figures(self.ours, world), "read_every_item": self.read_all},
            "react": figures(self.react, world),
            f"replangraph_{BASELINE}_calls": self.baseline_calls,
            f"replangraph_{BASELINE}_batch_calls": self.batch_baseline_calls or self.baseline_calls,
            "targets": {name: asdict(target) for name, target in self.targets().items()},
        }


def recall(outcome: Outcome) -> float:
    return outcome.recovered / outcome.size if outcome.size else 0.0


def share(value: float) -> str:
    """A recall with two decimals, or three where two would show a recall short of 1 as 1.00 (999/1000)."""
    text = f"{value:.2f}"
    return f"{math.floor(value * 1000) / 1000:.3f}" if text == "1.00" and value < 1 else text


def ratio(calls: int, other: int) -> float:
    return calls / other if other else float("inf")


def figures(outcome: Outcome, world: World | None = None) -> dict:
    """Every figure of one run, for ``--json``."""
    precision, duplicates = answer_figures(world, outcome.answer) if world is not None else (None, 0)
    return {
        "recovered": outcome.recovered,
        "size": outcome.size,
        "recall": recall(outcome),
        "precision": precision,
        "duplicate_lines": duplicates,
        "answer_chars": len(outcome.answer),
        "calls": outcome.calls,
        "prompt_tokens": outcome.prompt_tokens,
        "largest_prompt": outcome.largest_prompt,
        "wall_s": round(outcome.wall_s, 3),
        "error": outcome.error,
    }


def agent_cell(outcome: Outcome, world: World | None = None) -> str:
    """``**100/100** · P 1.00 · 0 dup · 5.4k chars · 7 calls · 12.3k tok · 0.12 s``, and the error a crashed run ended
    with (precision: "P —" when the answer has no item line)."""
    crashed = f" ({outcome.error})" if outcome.error else ""
    extra = ""
    if world is not None:
        precision, duplicates = answer_figures(world, outcome.answer)
        shown = "—" if precision is None else f"{precision:.2f}"
        extra = f" · P {shown} · {duplicates} dup · {short(len(outcome.answer))} chars"
    return (
        f"**{outcome.recovered}/{outcome.size}**{crashed}{extra} · {outcome.calls} "
        f"call{'' if outcome.calls == 1 else 's'} · {short(outcome.prompt_tokens)} tok · {outcome.wall_s:.2f} s"
    )


Agent = Callable[[BaseChatModel, World], Outcome]


def agents() -> tuple[Agent, Agent]:
    """replangraph on defaults (the completion check as ``AgentConfig`` has it) and plain ReAct."""
    ours = replangraph_agent(verify=AgentConfig().verify_results, **SCRIPTED_RETRY)
    return ours, create_agent_baseline(todo_list=False)


def run(
    agent: Agent,
    persona: str,
    world_cls: type[World],
    size: int,
    client_retries: int,
    pages_per_turn: int | None = None,
) -> Outcome:
    """One run of ``agent`` with ``persona`` (at most ``pages_per_turn`` tool calls a turn); its calls are the
    requests the persona saw."""
    return run_read(agent, persona, world_cls, size, client_retries, pages_per_turn)[0]


def run_read(
    agent: Agent,
    name: str,
    world_cls: type[World],
    size: int,
    client_retries: int,
    pages_per_turn: int | None = None,
) -> tuple[Outcome, bool | None]:
    """`run`, and whether its tools returned every item at some point (None: a world that does not record it)."""
    if not issubclass(world_cls, ServedWorld):
        [outcome] = run_cell(agent, persona_model(name, client_retries, pages_per_turn), world_cls, size, 1)
        return outcome, None
    world = world_cls(size)
    scripted = unnumbered_persona(name, world, pages_per_turn)
    outcome = agent(scripted.model(client_retries=client_retries), world)
    outcome.calls = scripted.requests
    return outcome, world.read_everything()


def personas_of(world_name: str) -> tuple[str, ...]:
    """The personas that run in ``world_name``."""
    return PERSONAS if world_name in NUMBERED_WORLDS else unnumbered_personas_of(world_name)


def rows(
    world_name: str, sizes: Sequence[int], personas: Sequence[str], on_row: Callable[[Row], None] = lambda row: None
) -> list[Row]:
    """Every persona at every size in one world (the baseline persona's replangraph run first, for target d); the
    personas that do not apply to the world are left out."""
    ours, react = agents()
    world_cls = ALL_WORLDS[world_name]
    personas = [name for name in personas_of(world_name) if name in personas]
    out = []
    for size in sizes:
        baseline, baseline_read = run_read(ours, BASELINE, world_cls, size, 0)
        one_call = None  # run when a one-call-a-turn persona needs it
        for name in personas:
            mine, read = (baseline, baseline_read) if name == BASELINE else run_read(ours, name, world_cls, size, 0)
            theirs = run(react, name, world_cls, size, REACT_CLIENT_RETRIES)
            if name in ONE_CALL_A_TURN:
                one_call = one_call or run(ours, BASELINE, world_cls, size, 0, pages_per_turn=1)
                out.append(Row(world_name, size, name, mine, theirs, one_call.calls, baseline.calls, read))
            else:
                out.append(Row(world_name, size, name, mine, theirs, baseline.calls, read_all=read))
            on_row(out[-1])
    return out


HEADER = (
    "| N | persona | replangraph | ReAct | (a) recall 1.0 | (b) ≥ ReAct | "
    f"(c) calls ≤ {WITHIN:g}× ReAct | (d) calls ≤ {WITHIN:g}× {BASELINE}, as many calls a turn |"
)


def header(world_name: str) -> str:
    """The table header of ``world_name`` (the stock world's with target e)."""
    if world_name in AGGREGATE:
        return HEADER + f" (e) right total, ≤ {ANSWER_MAX} chars |"
    return HEADER


def table_row(row: Row) -> str:
    judged = row.targets()
    world = ALL_WORLDS[row.world](row.size)
    cells = [str(row.size), row.persona, agent_cell(row.ours, world), agent_cell(row.react, world)]
    return "| " + " | ".join(cells + [judged[name].cell() for name in "abcde" if name in judged]) + " |"


def tally(all_rows: Sequence[Row]) -> tuple[int, int]:
    """``(targets met, targets that apply)`` over ``all_rows``."""
    judged = [t for row in all_rows for t in row.targets().values() if t.met is not None]
    return sum(1 for t in judged if t.met), len(judged)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks matrix", description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", nargs="+", default=list(ALL_WORLDS), choices=list(ALL_WORLDS))
    parser.add_argument("--sizes", nargs="+", type=int, help=f"N items (default {SIZES}; report: at most {REPORT_MAX})")
    parser.add_argument("--quick", action="store_true", help=f"N = {' and '.join(map(str, QUICK_SIZES))} only")
    parser.add_argument(
        "--personas",
        nargs="+",
        default=list(ALL_PERSONAS),
        choices=list(ALL_PERSONAS),
        help="(each world runs those that apply to it)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write every figure to PATH as JSON")
    args = parser.parse_args(argv)
    if not langchain_available():
        parser.error("the ReAct column needs langchain 1.x: pip install -e '.[test]'")
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    print(f"Machine: {machine()}\n", file=out)
    print(LEGEND + "\n", file=out)
    print(
        "Cells: recovered/N · precision (P) · duplicate lines (dup) · answer characters · model calls (client retries "
        "included) · prompt tokens · wall time\n",
        file=out,
    )
    all_rows: list[Row] = []
    for world_name in args.worlds:
        world_sizes = [n for n in sizes if world_name != "report" or n <= REPORT_MAX]
        left_out = sorted(set(sizes) - set(world_sizes))
        note = f" (N = {', '.join(map(str, left_out))} left out: at most {REPORT_MAX} cities)" if left_out else ""
        print(f"**{world_name} world**{note}\n", file=out)
        print(header(world_name), file=out)
        print("|---" * header(world_name).count(" | ") + "|---|", file=out, flush=True)
        world_rows = rows(
            world_name, world_sizes, args.personas, lambda row: print(table_row(row), file=out, flush=True)
        )
        disagree = [f"{row.persona} at N = {row.size}" for row in world_rows if row.disagrees()]
        if disagree:
            print(f"\n(c) and (d) disagree on: {', '.join(disagree)}.", file=out)
        print(file=out)
        all_rows += world_rows
    met, applicable = tally(all_rows)
    print(f"targets met: {met} of {applicable}", file=out)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "machine": machine(),
                    "config": {"replangraph": SCRIPTED_RETRY, "react_client_retries": REACT_CLIENT_RETRIES},
                    "targets_met": met,
                    "targets_applicable": applicable,
                    "rows": [row.as_json() for row in all_rows],
                },
                f,
                indent=1,
            )
    return 0
