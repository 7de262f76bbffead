"""The context benchmark: replangraph beside a ReAct agent with SummarizationMiddleware, on one long job.

    python -m benchmarks context                                  # windows 6000 9000 20000, 60 and 300 items
    python -m benchmarks context --quick                          # one window, 60 items, 1 run (CI)
    python -m benchmarks context --windows 9000 --items 60 --keep-last 3 --runs 1

The job: read all N inventory items, 5 per call, and list every item code. The
tool outputs outgrow the window many times, so each agent must compress its
history. Both agents get the same scripted faithful model (`FaithfulModel`), the
same token budget ((window - reserved output) * compress threshold) and the same
number of recent messages to keep. Every row: item codes recovered in the final
answer, model calls, summarizer calls, total prompt tokens, the largest request
against the window, how many requests went over it, and wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from langchain_core.language_models import BaseChatModel
from langchain_core.messages.utils import count_tokens_approximately

from replangraph import AgentConfig

from .context_world import DROPPED_SUMMARY, FaithfulModel, InventoryWorld
from .harness import Outcome, langchain_available, replangraph_agent, summarization_agent
from .persona_table import machine, short
from .worlds import World

REPLANGRAPH = "replangraph"
SUMMARIZATION = "ReAct + SummarizationMiddleware"
DEFAULT_RESERVED_OUTPUT = 1_000

Agent = Callable[[BaseChatModel, World], Outcome]


class RunTimeout(BaseException):
    """A run went past ``--run-timeout`` (a BaseException, so no agent's error handling swallows it)."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise `RunTimeout` in the block after ``seconds`` (main thread on Unix only; elsewhere no limit)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not seconds or not usable:
        yield
        return

    def alarm(signum, frame):
        raise RunTimeout(f"timed out after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def budget(window: int, reserved_output: int) -> int:
    """The request size at which replangraph compresses: (window - reserved output) * compress threshold."""
    threshold = AgentConfig.model_fields["compress_threshold"].default
    return int(max(window - reserved_output, 1) * threshold)


def step_iterations(items: int, batch: int) -> int:
    """Model turns one subtask may take: three per page, and some, so the step budget never ends the run."""
    return -(-items // batch) * 3 + 20


def summarization_defaults() -> dict[str, Any]:
    """SummarizationMiddleware's defaults, read from the installed package (empty without langchain)."""
    try:
        from langchain.agents.middleware import SummarizationMiddleware
    except ImportError:
        return {}
    parameters = inspect.signature(SummarizationMiddleware.__init__).parameters
    return {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty}


def agents(window: int, items: int, keep: int, args: argparse.Namespace, with_summarization: bool) -> dict[str, Agent]:
    iterations = step_iterations(items, args.batch)
    table: dict[str, Agent] = {
        REPLANGRAPH: replangraph_agent(
            verify=False,
            context_window=window,
            reserved_output=args.reserved_output,
            keep_last_messages=keep,
            max_step_iterations=iterations,
            max_steps=max(1_000, 4 * iterations),
            retry_backoff_s=0.01,
        )
    }
    if with_summarization:
        extra = {} if args.trim_tokens_to_summarize == "default" else {"trim_tokens_to_summarize": args.trim_tokens}
        table[SUMMARIZATION] = summarization_agent(budget(window, args.reserved_output), keep, **extra)
    return table


@dataclass
class Run:
    """One run of one agent: the harness's outcome and what the scripted model counted."""

    outcome: Outcome
    summarizer_calls: int
    dropped_summaries: int


def one_run(agent: Agent, items: int, batch: int, timeout: float | None) -> Run:
    """A fresh world and model; a crash or a timeout is a row with an error, not a crashed benchmark."""
    world = InventoryWorld(items, batch)
    model = FaithfulModel()
    started = time.perf_counter()
    try:
        with time_limit(timeout):
            outcome = agent(model.model(), world)
    except (Exception, RunTimeout) as exc:
        error = str(exc) if isinstance(exc, RunTimeout) else type(exc).__name__
        outcome = Outcome(0, items, sum(model.calls.values()), 0, 0, 0, time.perf_counter() - started, error)
    return Run(outcome, model.calls["summarizer"], model.dropped)


def stat(values: Sequence[float], fmt: Callable[[Any], str] = str) -> str:
    """One value when every run agrees, else ``min/median``."""
    low, high = min(values), max(values)
    return fmt(low) if low == high else f"{fmt(low)}/{fmt(statistics.median(values))}"


def row(window: int, items: int, keep: int, name: str, runs: Sequence[Run]) -> str:
    outcomes = [r.outcome for r in runs]
    errors = sorted({o.error for o in outcomes if o.error})
    found = [o.recovered for o in outcomes]
    recovered = f"**{min(found)}/{items}**" + (f" (median {statistics.median(found):g})" if len(set(found)) > 1 else "")
    recovered += f" ({', '.join(errors)})" if errors else ""
    summarizer = stat([r.summarizer_calls for r in runs])
    dropped = [r.dropped_summaries for r in runs]
    if any(dropped):
        summarizer += f" (+{stat(dropped)} dropped †)"
    largest = [o.largest_prompt for o in outcomes]
    over = [sum(1 for _, tokens in o.requests if tokens > window) for o in outcomes]
    answered = [len(o.requests) for o in outcomes]
    largest_cell = f"{stat(largest, short)} / {short(window)}" + (" ⚠" if max(largest) > window else "")
    over_cell = f"**{stat(over)} of {stat(answered)}** ⚠" if any(over) else "0"
    wall = statistics.median(o.wall_s for o in outcomes)
    cells = [
        str(window),
        str(items),
        str(keep),
        name,
        recovered,
        stat([o.calls for o in outcomes]),
        summarizer,
        stat([o.prompt_tokens for o in outcomes], short),
        largest_cell,
        over_cell,
        f"{wall:.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| window | items | keep | agent | recovered | model calls | summarizer calls | prompt tokens "
    "| largest request / window | requests over window | wall s (median) |"
)


def notes(args: argparse.Namespace, with_summarization: bool) -> list[str]:
    world = InventoryWorld(args.batch, args.batch)
    page = count_tokens_approximately([("user", world.read(1))])
    lines = [
        f"World: read all N inventory items, {args.batch} per `read_items` call (a page is about {short(page)} "
        "tokens), and list every item code (IC-XXXXXX) in the final answer; recovered = codes in it.",
        "Model: the same scripted faithful model for both agents (`benchmarks/context_world.py`): it pages until "
        "the tool says there is no next page, then lists every code it can see in its request (following "
        "unread `read_output` notes first, where it has that tool); as summarizer it lists every code in its "
        "input and where the paging got to; its usage is `count_tokens_approximately` of the request, tool "
        "schemas included. Requests over the window are answered anyway (a real endpoint would refuse them) "
        "and flagged ⚠.",
        f"Budget: both agents compress at (window - {args.reserved_output}) * "
        f"{AgentConfig.model_fields['compress_threshold'].default} tokens ("
        + ", ".join(f"{budget(w, args.reserved_output):,} for {w}" for w in args.windows)
        + "); keep = recent messages kept intact (replangraph's keep_last_messages, the middleware's keep).",
        f"{REPLANGRAPH}: `AgentConfig(context_window=window, reserved_output={args.reserved_output}, "
        "keep_last_messages=keep, max_step_iterations=3 * pages + 20)`, other limits at their defaults; one "
        "subtask for the whole job (the planner's choice).",
    ]
    if with_summarization:
        defaults = summarization_defaults()
        trim = defaults.get("trim_tokens_to_summarize")
        counter = getattr(defaults.get("token_counter"), "__name__", "?")
        chosen = (
            f"left at its default, {trim}"
            if args.trim_tokens_to_summarize == "default"
            else f"set to {args.trim_tokens}, not its default {trim},"
        )
        lines.append(
            f"{SUMMARIZATION}: `langchain.agents.create_agent(model, tools, middleware=[SummarizationMiddleware("
            "model=model, trigger=('tokens', budget), keep=('messages', keep))])`; its other arguments stay as a "
            f"user gets them: token_counter={counter} (it counts the messages, not the tool schemas), the default "
            f"summary_prompt, trim_tokens_to_summarize {chosen} (before the summary call the messages to "
            "summarize are cut to their last that-many tokens with `trim_messages(strategy='last', "
            "start_on='human', allow_partial=True)`: an earlier summary can lose its head, and a tail with no "
            "human message leaves nothing, so the history becomes a fixed placeholder)."
        )
        lines.append(
            f'† dropped: summaries that replaced the history with "{DROPPED_SUMMARY}" without calling the '
            "model (the trimmed input held no human message)."
        )
    else:
        lines.append(
            f"{SUMMARIZATION} rows skipped: langchain is not installed "
            "(pip install 'langchain>=1.0', or pip install -e '.[bench]')."
        )
    return lines


def trim_value(text: str) -> str | int | None:
    if text in ("default", "none"):
        return text
    return int(text)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks context", description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", nargs="+", type=int, default=[6000, 9000, 20000], help="context windows")
    parser.add_argument("--items", nargs="+", type=int, default=[60, 300], help="items to read (N)")
    parser.add_argument("--keep-last", nargs="+", type=int, default=[10, 3], help="recent messages kept intact")
    parser.add_argument("--runs", type=int, default=3, help="runs per row; values that vary are min/median")
    parser.add_argument("--batch", type=int, default=5, help="items per tool call (K)")
    parser.add_argument("--reserved-output", type=int, default=DEFAULT_RESERVED_OUTPUT, help="tokens kept free")
    parser.add_argument(
        "--trim-tokens-to-summarize",
        type=trim_value,
        default="default",
        help="SummarizationMiddleware's trim_tokens_to_summarize: a number, 'none', or 'default' (leave it unset)",
    )
    parser.add_argument("--run-timeout", type=float, default=300.0, help="seconds one run may take (0: no limit)")
    parser.add_argument("--quick", action="store_true", help="window 9000, 60 items, 1 run: a few seconds, for CI")
    args = parser.parse_args(argv)
    if args.quick:
        args.windows, args.items, args.runs = [9000], [60], 1
    args.trim_tokens = None if args.trim_tokens_to_summarize == "none" else args.trim_tokens_to_summarize
    with_summarization = langchain_available()
    libs = ""
    if with_summarization:
        from importlib.metadata import version

        libs = f", langchain {version('langchain')}"
    print(f"Machine: {machine()}{libs}\n", file=out)
    for line in notes(args, with_summarization):
        print(f"- {line}", file=out)
    print(f"\nCells: min/median of {args.runs} run(s) where runs differ; wall time: median.\n", file=out)
    print(HEADER, file=out)
    print("|" + "---|" * HEADER.count(" | ") + "---|", file=out)
    for window in args.windows:
        for items in args.items:
            for keep in args.keep_last:
                for name, agent in agents(window, items, keep, args, with_summarization).items():
                    runs = [one_run(agent, items, args.batch, args.run_timeout) for _ in range(args.runs)]
                    print(row(window, items, keep, name, runs), file=out, flush=True)
    return 0
