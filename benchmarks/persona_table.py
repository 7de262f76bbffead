"""The persona benchmark: replangraph beside a plain ReAct agent, same scripted worlds, same models.

    python -m benchmarks personas                      # scripted personas, the README table
    python -m benchmarks personas --sizes 19 100 --runs 1
    python -m benchmarks personas --base-url http://localhost:8000/v1 --model qwen2.5-7b-instruct
    python -m benchmarks personas --base-url http://127.0.0.1:8000/v1 --model smollm2-135m --context-window 8192 \\
        --reserved-output 512 --max-steps 40 --sizes 19 --runs 1 --worlds catalog   # a tiny local model

Every cell: items recovered / N, model calls, total and largest worker prompt
tokens, prompt tokens per item against the items' own tokens (every page the
world's tool returns, once), the cacheable-prefix share (the prefix every worker
request shares, over their length; "breaks early" when it ends before a
subtask's own text), wall time (min / median of ``--runs``). Counts and tokens
are the same every run; only wall time varies. With ``--base-url`` the personas are replaced
by the real model (ChatOpenAI); the worlds stay scripted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from langchain_core.language_models import BaseChatModel

from .harness import Outcome, deepagents_agent, deepagents_available, react_agent, replangraph_agent
from .personas import BATCHED_HANDOFF_PERSONAS, PERSONAS, persona
from .worlds import WORLDS, World

SCRIPTED_RETRY = {"retry_backoff_s": 0.01}
"""Scripted failures need no real wait; a real endpoint keeps the default backoff."""


def agents(
    scripted: bool, with_deepagents: bool, **limits: int
) -> dict[str, Callable[[BaseChatModel, World], Outcome]]:
    """The agents of the table; ``limits`` are AgentConfig fields for replangraph (``context_window``,
    ``reserved_output``, ``max_steps`` that a real model's server needs; ``batch_size``)."""
    extra = {**(SCRIPTED_RETRY if scripted else {}), **limits}
    table = {
        "replangraph --no-verify": replangraph_agent(verify=False, **extra),
        "replangraph": replangraph_agent(verify=True, **extra),  # the default: the completion check on
        "ReAct": react_agent,
    }
    if with_deepagents:
        table["deepagents"] = deepagents_agent
    return table


def short(n: int) -> str:
    """1234 -> 1.2k, 1234567 -> 1.23M."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}k"
    return str(n)


def per_item(outcome: Outcome, item_tokens: int) -> str:
    """Prompt tokens per item and their ratio to the items' own tokens: ``117 tok/item = 1.8× items``."""
    ratio = outcome.prompt_tokens / item_tokens if item_tokens else 0.0
    return f"{outcome.prompt_tokens / outcome.size:.0f} tok/item = {ratio:.1f}× items"


def prefix_cell(outcome: Outcome) -> str:
    """The cacheable-prefix share of the worker requests, flagged when it breaks before a subtask's text."""
    share = f"prefix {outcome.prefix.share:.0%}"
    return share + (" (breaks early)" if outcome.prefix.breaks_early else "")


def cell(outcomes: list[Outcome], item_tokens: int = 0) -> str:
    first = outcomes[0]
    walls = [o.wall_s for o in outcomes]
    done = f"**{first.recovered}/{first.size}**" + (f" ({first.error})" if first.error else "")
    wall = f"{min(walls):.2f}/{statistics.median(walls):.2f} s" if len(walls) > 1 else f"{walls[0]:.2f} s"
    return (
        f"{done} · {first.calls} req · {short(first.prompt_tokens)} tok · "
        f"max {short(first.largest_worker_prompt)} · {per_item(first, item_tokens)} · {prefix_cell(first)} · {wall}"
    )


def run_cell(
    agent: Callable[[BaseChatModel, World], Outcome],
    make_model: Callable[[World], tuple[BaseChatModel, Callable[[], int] | None]],
    world_cls,
    size,
    runs,
) -> list[Outcome]:
    """``runs`` fresh runs; ``make_model`` gives the model and, for personas, a count of the requests
    they saw (client retries included), which replaces the count of LangChain calls."""
    outcomes = []
    for _ in range(runs):
        world = world_cls(size)
        model, requests = make_model(world)
        outcome = agent(model, world)
        if requests is not None:
            outcome.calls = requests()
        outcomes.append(outcome)
    return outcomes


def chat_openai(base_url: str, model: str, retries: int) -> Callable[[World], tuple[BaseChatModel, None]]:
    from langchain_openai import ChatOpenAI

    key = os.environ.get("OPENAI_API_KEY") or "not-needed"
    return lambda world: (
        ChatOpenAI(model=model, base_url=base_url, api_key=key, max_retries=retries, temperature=0),
        None,
    )


def persona_model(
    name: str, client_retries: int, pages_per_turn: int | None = None
) -> Callable[[World], tuple[BaseChatModel, Callable[[], int]]]:
    """Persona ``name`` (at most ``pages_per_turn`` tool calls a turn; None: a whole batch). replangraph gets a
    client that does not retry (its own policy does); the other agents get ChatOpenAI's default client retries
    (2)."""

    def make(world: World):
        scripted = persona(name, world, pages_per_turn)
        return scripted.model(client_retries=client_retries), lambda: scripted.requests

    return make


def machine() -> str:
    """The machine and the library versions, for the table's heading."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ram = f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM, "
    except (ValueError, OSError, AttributeError):
        ram = ""
    libs = []
    for name in ("langgraph", "langchain-core", "deepagents"):
        with contextlib.suppress(PackageNotFoundError):
            libs.append(f"{name} {version(name)}")
    return f"{platform.machine()}, {os.cpu_count()} cores, {ram}Python {platform.python_version()}, " + ", ".join(libs)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks personas", description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    parser.add_argument(
        "--sizes", nargs="+", type=int, default=[19, 100, 1000], help="N items (report world: at most 250)"
    )
    parser.add_argument(
        "--personas",
        nargs="+",
        default=list(BATCHED_HANDOFF_PERSONAS),
        choices=list(PERSONAS),
        help="default: the nine that hand off in batches (`python -m benchmarks matrix` runs every persona)",
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per cell; wall time is min/median")
    parser.add_argument(
        "--large-personas",
        nargs="+",
        default=["compliant", "lazy"],
        choices=list(PERSONAS),
        help="personas run at sizes above 100 (each large cell takes a while)",
    )
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint: run the real model instead of personas")
    parser.add_argument("--model", default="gpt-4o-mini", help="model name at --base-url")
    parser.add_argument("--deepagents", action="store_true", help="add a deepagents column (pip install deepagents)")
    parser.add_argument(
        "--context-window", type=int, help="replangraph's context_window: the window the server at --base-url has"
    )
    parser.add_argument(
        "--reserved-output", type=int, help="replangraph's reserved_output: the longest reply the server writes"
    )
    parser.add_argument("--max-steps", type=int, help="replangraph's max_steps (a slow local model's runs are long)")
    parser.add_argument("--batch-size", type=int, help="replangraph's batch_size (default: AgentConfig's)")
    args = parser.parse_args(argv)
    if args.deepagents and not deepagents_available():
        parser.error("--deepagents needs the deepagents package: pip install deepagents")
    scripted = args.base_url is None
    limits = {
        "context_window": args.context_window,
        "reserved_output": args.reserved_output,
        "max_steps": args.max_steps,
        "batch_size": args.batch_size,
    }
    table = agents(scripted, args.deepagents, **{k: v for k, v in limits.items() if v is not None})
    print(f"Machine: {machine()}\n", file=out)
    print(
        f"Cells: recovered/N · model requests · total prompt tokens · largest worker prompt · prompt tokens "
        f"per item = their ratio to the items' own tokens · cacheable-prefix share of the worker requests · "
        f"wall min/median of {args.runs} run(s)\n",
        file=out,
    )
    for world_name in args.worlds:
        world_cls = WORLDS[world_name]
        sizes = [n for n in args.sizes if world_name != "report" or n <= 250]
        item_tokens = {n: world_cls(n).item_tokens() for n in sizes}
        own = ", ".join(f"{item_tokens[n] / n:.0f} at N = {n}" for n in sizes)
        print(f"**{world_name} world** (the items' own tokens per item: {own})\n", file=out)
        print("| N | persona | " + " | ".join(table) + " |", file=out)
        print("|---|---|" + "---|" * len(table), file=out)
        for size in sizes:
            rows = (
                ["real model: " + args.model]
                if not scripted
                else [p for p in args.personas if size <= 100 or p in args.large_personas]
            )
            for row in rows:
                if scripted:
                    models = {name: persona_model(row, 0 if name.startswith("replangraph") else 2) for name in table}
                else:
                    ours = chat_openai(args.base_url, args.model, retries=0)
                    theirs = chat_openai(args.base_url, args.model, retries=2)
                    models = {name: ours if name.startswith("replangraph") else theirs for name in table}
                cells = [
                    cell(run_cell(agent, models[name], world_cls, size, args.runs), item_tokens[size])
                    for name, agent in table.items()
                ]
                print(f"| {size} | {row} | " + " | ".join(cells) + " |", file=out, flush=True)
        print(file=out)
    return 0
