"""``python -m benchmarks NAME [options]``: run one benchmark and print its table."""

from __future__ import annotations

import sys

BENCHMARKS = {
    "personas": "benchmarks.persona_table",
    "matrix": "benchmarks.matrix",
    "context": "benchmarks.context_table",
    "engine": "benchmarks.engine",
    "teams": "benchmarks.team_table",
    "faults": "benchmarks.faults",
    "temporal": "benchmarks.temporal_table",
    "splits": "benchmarks.splits",
    "compare": "benchmarks.compare",
    "textcraft": "benchmarks.compare:textcraft_main",
    "wide": "benchmarks.compare:wide_main",
    "structure": "benchmarks.structure",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHMARKS:
        print(f"usage: python -m benchmarks {{{','.join(BENCHMARKS)}}} [options]", file=sys.stderr)
        return 2
    module_name, _, function = BENCHMARKS[argv[0]].partition(":")
    module = __import__(module_name, fromlist=["main"])
    return getattr(module, function or "main")(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
