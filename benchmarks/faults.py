"""The fault matrix: the probes of the fault and security review (issue 23) run against the real parts here.

    python -m benchmarks faults                          # every probe, full sizes (about 3 minutes on 2 cores)
    python -m benchmarks faults --quick                  # smaller sizes (CI; well under a minute)
    python -m benchmarks faults --postgres URL           # the durable probes on PostgreSQL too
    python -m benchmarks faults --only kill secrets      # some probes

Every probe is offline: scripted models, or the loopback OpenAI-compatible server of
tests/helpers/openai_loopback.py where HTTP matters; real processes, SQLite files and
(with ``--postgres``) a PostgreSQL server. Each returns figures and whether the property
held. A probe marked *pending* tests what a branch not yet merged builds: its row tells
the truth of this code, and a failure there is expected until that branch lands.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TextIO

from . import fault_calls, fault_limits, fault_probes, fault_processes
from .fault_probes import Finding
from .persona_table import machine


@dataclass(frozen=True)
class Probe:
    """One row of the matrix: what is tried, what must hold, and the function that tries it."""

    name: str
    tried: str
    expect: str
    run: Callable[[argparse.Namespace], Finding]
    pending: str = ""
    """The branch that makes this hold, while it is not merged ("" once it must hold on main)."""


PROBES = (
    Probe(
        "kill",
        "SIGKILL of a durable run (8 subtasks, 2 at a time) at several moments, then resume",
        "completed subtasks re-run: 0",
        fault_processes.kill_and_resume,
    ),
    Probe(
        "tenancy",
        "concurrent threads on one graph with a store and workspace file tools, each reading "
        "another's file and its own output ids",
        "reads of another thread's data: 0",
        fault_probes.tenancy,
    ),
    Probe(
        "sqlite-processes",
        "2-8 processes running durable runs on one SQLite file at once",
        "'database is locked' errors: 0",
        fault_processes.sqlite_processes,
    ),
    Probe(
        "flaky-provider",
        "loopback server failing 30 % of requests with HTTP 500 (seeded), 8 seeds",
        "items lost: 0",
        fault_probes.flaky_provider,
    ),
    Probe(
        "compression",
        "one job whose tool outputs outgrow a small window many times",
        "items lost: 0",
        fault_probes.compression,
    ),
    Probe(
        "secrets",
        "`replangraph run` with a password in --base-url and an API key in the environment",
        "files under the data folder holding either: 0",
        fault_processes.secrets,
    ),
    Probe(
        "thread-ids",
        "thread ids with dots, slashes, unicode, 1,000 chars on a checkpointer and a store",
        "crashes or wrong read-backs: 0",
        fault_probes.thread_ids,
    ),
    Probe(
        "step-timeout",
        "step_timeout_s inf / 1e10 / nan; a planner call that never returns, step_timeout_s=1",
        "bad values refused; the run ends within the bound",
        fault_probes.step_timeout,
    ),
    Probe(
        "search-redirect",
        "web search whose service redirects to loopback or private addresses",
        "redirects followed: 0",
        fault_probes.search_redirect,
    ),
    Probe(
        "double-resume",
        "two `replangraph resume` of one killed thread at once",
        "subtasks run twice: 0",
        fault_processes.double_resume,
    ),
    Probe(
        "storage-failure",
        "the checkpointer failing at a put mid-run (`replangraph run`), then `replangraph resume`",
        "tool calls made twice: 0",
        fault_processes.storage_failure,
    ),
    Probe(
        "retries",
        "a default ChatOpenAI() against a loopback server that always answers 500",
        "HTTP requests per failed step: model_retries + 1",
        fault_probes.retries_per_step,
    ),
    Probe(
        "failed-child",
        "a completed subtask's handed-off child fails (raises, [REPLAN]); a 30 % failing provider, 50 items "
        "with splits, 8 seeds",
        "recovery paths that do not run: 0; items lost: 0",
        fault_limits.failed_child,
    ),
    Probe(
        "window-outputs",
        "a subtask reads 60 items one per turn into a window of 15 outputs, then completes",
        "items kept 0 times: 0",
        fault_limits.window_outputs,
    ),
    Probe(
        "huge-call",
        "a refused split with 100,000 tasks (over 4 MB of arguments)",
        "the subtask goes on; later requests within budget; whole arguments readable",
        fault_limits.huge_call,
    ),
    Probe(
        "huge-report",
        "the fallback report on a queue of 5,000 subtasks with long results",
        "report within its cap; whole lists readable by id",
        fault_limits.huge_report,
    ),
    Probe(
        "workspace-attacks",
        "workspace files: a hard link to a file outside, 8 threads appending past a cap, a link swapped in "
        "while the tools run",
        "refused; size over the cap: 0; reads or writes outside: 0",
        fault_limits.workspace_attacks,
    ),
    Probe(
        "process-exit",
        "a run whose model server accepts and never answers, step_timeout_s=2, in its own process",
        "the process exits within 2 s of the run's end",
        fault_processes.process_exit,
    ),
    Probe(
        "kill-in-call",
        "SIGKILL inside tool call k of a turn of 8 calls (k = 1..8), max_concurrency 1 and 4, then resume",
        "calls made twice: only calls in flight; items lost: 0; completed subtasks re-run: 0",
        fault_calls.kills_in_calls,
    ),
)

HEADER = "| # | probe | tried | expect | what held (figures) | result | pending |"


def row(number: int, probe: Probe, finding: Finding, seconds: float) -> str:
    result = "pass" if finding.held else "FAIL"
    figures = f"{finding.figures} ({seconds:.1f} s)".replace("|", "/")
    pending = f"until {probe.pending}" if probe.pending else ""
    return f"| {number} | {probe.name} | {probe.tried} | {probe.expect} | {figures} | {result} | {pending} |"


def run_probe(probe: Probe, args: argparse.Namespace) -> Finding:
    """The probe's finding; a probe that raises did not hold, and its row says why."""
    try:
        return probe.run(args)
    except Exception as exc:  # one broken probe is a failed row, not a lost table
        return Finding(False, f"probe crashed: {type(exc).__name__}: {str(exc)[:200]}")


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks faults", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (CI)")
    parser.add_argument("--postgres", metavar="URL", help="run the durable probes on this PostgreSQL server too")
    parser.add_argument("--only", nargs="+", choices=[p.name for p in PROBES], help="run these probes only")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    """Print the matrix; exit 1 when a probe that must hold on this code did not."""
    args = parse(argv)
    print(f"Machine: {machine()}; {date.today().isoformat()}{'; --quick' if args.quick else ''}", file=out)
    print(f"Databases: SQLite{' and PostgreSQL' if args.postgres else ''}\n", file=out)
    print(HEADER, file=out)
    print("|---|---|---|---|---|---|---|", file=out, flush=True)
    broken = 0
    for number, probe in enumerate(PROBES, 1):
        if args.only and probe.name not in args.only:
            continue
        started = time.perf_counter()
        finding = run_probe(probe, args)
        print(row(number, probe, finding, time.perf_counter() - started), file=out, flush=True)
        broken += not finding.held and not probe.pending
    return 1 if broken else 0
