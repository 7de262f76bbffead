"""The teams benchmark: one member alone beside a team of three that merges by ``best``, ``vote`` or ``fusion``.

    python -m benchmarks teams                             # 40 questions, 5 seeds: the README table
    python -m benchmarks teams --questions 10 --seeds 1
    python -m benchmarks teams --judge-reliability 1.0     # a judge that always knows the right answer

The world (`team_world`): a quiz of Q questions, one subtask each; three member agent
types right 80 %, 55 % and 40 % of the time; a judge and voters whose behaviour is a
stated model (printed under the table). Every row: accuracy (right answers / Q), model
calls and prompt tokens counted by the harness's `Meter`, min and median over the seeds,
and calls and tokens relative to the best single member (medians).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from replangraph import AgentConfig, AgentProfile, Team, build_graph

from .harness import Meter, Outcome, measure, react_agent
from .persona_table import machine, short
from .team_world import JUDGE_RELIABILITY, MEMBERS, QuizWorld, behaviour, main_model, member_model

TEAM = "panel"
REACT = "ReAct (careful's model)"
FIRST = "team, judge_model=False (first result)"
Run = Callable[[QuizWorld], Outcome]


def replangraph_run(agent_type: str, merge: str | None = None, judge: bool = True, concurrency: int = 3) -> Run:
    """replangraph on the quiz: every question a subtask of ``agent_type`` (a member, or the team
    of all members merging by ``merge``; ``judge=False`` for ``judge_model=False``)."""

    def run(world: QuizWorld) -> Outcome:
        agents = {
            name: AgentProfile(description=f"the {name} quiz member", model=member_model(world, name))
            for name in world.accuracy
        }
        judge_model = None if judge else False
        teams = {TEAM: Team(members=list(world.accuracy), merge=merge, judge_model=judge_model)} if merge else None
        graph = build_graph(
            main_model(world, agent_type),
            agents=agents,
            teams=teams,
            config=AgentConfig(
                retry_backoff_s=0,
                max_concurrency=concurrency,
                max_steps=8 * world.size + 100,  # vote's 6 calls a question never meet the step budget
                max_tasks=4 * world.size + 100,  # nor the members the queue's limit
                verify_results=False,  # the table compares merges: every row without the completion check
            ),
        )

        def invoke(meter: Meter) -> str:
            return graph.invoke({"messages": [("user", world.goal)]}, {"callbacks": [meter]})["final_answer"]

        return measure(world, invoke)

    return run


def react_run(world: QuizWorld) -> Outcome:
    """LangGraph's ReAct agent with the careful member's model (the quiz needs no tools)."""
    return react_agent(member_model(world, next(iter(world.accuracy))), world)


def rows(members: Sequence[str], concurrency: int) -> dict[str, Run]:
    """The table's rows, in order: each member alone, ReAct, then the team's merges."""
    table: dict[str, Run] = {f"{name} alone": replangraph_run(name, concurrency=concurrency) for name in members}
    table[REACT] = react_run
    for merge in ("best", "vote", "fusion"):
        table[f"team, {merge}"] = replangraph_run(TEAM, merge, concurrency=concurrency)
    table[FIRST] = replangraph_run(TEAM, "best", judge=False, concurrency=concurrency)
    return table


@dataclass
class Row:
    """One row's outcomes, one per seed."""

    label: str
    outcomes: list[Outcome] = field(default_factory=list)

    def accuracy(self) -> list[float]:
        return [o.recovered / o.size for o in self.outcomes]

    def calls(self) -> list[int]:
        return [o.calls for o in self.outcomes]

    def tokens(self) -> list[int]:
        return [o.prompt_tokens for o in self.outcomes]

    @property
    def single(self) -> bool:
        return self.label.endswith(" alone")


@dataclass
class Results:
    rows: list[Row]
    ceiling: list[float]
    """Per seed: the share of questions some member answers right (a perfect judge's accuracy)."""

    def row(self, label: str) -> Row:
        return next(r for r in self.rows if r.label == label)

    def best_single(self) -> Row:
        """The member alone with the highest median accuracy (the earliest on a tie)."""
        singles = [r for r in self.rows if r.single]
        return max(singles, key=lambda r: (statistics.median(r.accuracy()), -singles.index(r)))


def run_all(
    questions: int,
    seeds: Sequence[int],
    judge_reliability: float = JUDGE_RELIABILITY,
    accuracy: dict[str, float] | None = None,
    concurrency: int = 3,
) -> Results:
    """Every row on the quiz of every seed."""
    accuracy = dict(accuracy or MEMBERS)
    table = rows(list(accuracy), concurrency)
    results = Results([Row(label) for label in table], [])
    for seed in seeds:
        world = QuizWorld.make(questions, seed, accuracy=accuracy, judge_reliability=judge_reliability)
        results.ceiling.append(world.any_right() / questions)
        for row, run in zip(results.rows, table.values(), strict=True):
            row.outcomes.append(run(world))
    return results


def spread(values: Sequence[float], show: Callable[[float], str]) -> str:
    """``min/median`` (one value when they are equal)."""
    low, mid = min(values), statistics.median(values)
    return show(low) if show(low) == show(mid) else f"{show(low)}/{show(mid)}"


def ratio(x: float) -> str:
    """Two decimals; three below 0.1 (ReAct's single call)."""
    return f"{x:.2f}" if x >= 0.1 else f"{x:.3f}"


def percent(share: float) -> str:
    return f"{share * 100:.1f} %"


def print_table(results: Results, out: TextIO) -> None:
    base = results.best_single()
    base_calls, base_tokens = statistics.median(base.calls()), statistics.median(base.tokens())
    print("| agent | accuracy | model calls | prompt tokens | calls × | tokens × |", file=out)
    print("|---|---|---|---|---|---|", file=out)
    for row in results.rows:
        errors = sorted({o.error for o in row.outcomes if o.error})
        label = row.label + (f" ({', '.join(errors)})" if errors else "")
        calls, tokens = statistics.median(row.calls()), statistics.median(row.tokens())
        print(
            f"| {label} | {spread(row.accuracy(), percent)} | {spread(row.calls(), lambda c: f'{c:g}')} | "
            f"{spread(row.tokens(), lambda t: short(int(t)))} | {ratio(calls / base_calls)} | "
            f"{ratio(tokens / base_tokens)} |",
            file=out,
        )
    print(f"\n× : median relative to {base.label}, the best single member.", file=out)
    print(f"At least one member right (a perfect judge's ceiling): {spread(results.ceiling, percent)}.", file=out)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks teams", description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=40, help="questions in the quiz (one subtask each)")
    parser.add_argument("--seeds", type=int, default=5, help="quizzes (seeds 0..n-1); cells are min/median")
    parser.add_argument(
        "--judge-reliability",
        type=float,
        default=JUDGE_RELIABILITY,
        help="chance the judge recognises the right candidate when there is one",
    )
    parser.add_argument(
        "--accuracy",
        nargs=3,
        type=float,
        default=list(MEMBERS.values()),
        metavar=("CAREFUL", "FAST", "SLOPPY"),
        help="how often each member is right",
    )
    parser.add_argument("--concurrency", type=int, default=3, help="max_concurrency (counts do not depend on it)")
    args = parser.parse_args(argv)
    if args.questions < 1 or args.seeds < 1:
        parser.error("--questions and --seeds must be at least 1")
    if not 0 <= args.judge_reliability <= 1 or not all(0 <= a <= 1 for a in args.accuracy):
        parser.error("--judge-reliability and --accuracy are shares between 0 and 1")
    accuracy = dict(zip(MEMBERS, args.accuracy, strict=True))
    print(f"Machine: {machine()}\n", file=out)
    print(
        f"Quiz of {args.questions} questions, one subtask each; {args.seeds} seed(s); cells are min/median "
        f"over the seeds; max_concurrency={args.concurrency}.\n",
        file=out,
    )
    started = time.perf_counter()
    results = run_all(args.questions, range(args.seeds), args.judge_reliability, accuracy, args.concurrency)
    print_table(results, out)
    print("\nModel of the world (benchmarks/team_world.py):", file=out)
    for line in behaviour(accuracy, args.judge_reliability):
        print(f"- {line}", file=out)
    print(f"\nRan in {time.perf_counter() - started:.1f} s.", file=out, flush=True)
    return 0
