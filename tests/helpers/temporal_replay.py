"""Replays one run's history with a graph, as a worker does after a restart (`replangraph.temporal.replayer`).

    python tests/helpers/temporal_replay.py ADDRESS WORKFLOW_ID MODULE:FACTORY [ARG ...]

Prints ``replayed <n> events`` and exits 0 when the run takes the path its history recorded; a different path
raises (exit status 1, the error on stderr). A process of its own: the replayer's plugin changes the graph it registers.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[2])]  # as pytest has it


def main(address: str, workflow_id: str, factory: str, *args: str) -> None:
    from replangraph.temporal import connect, replayer

    module, _, attr = factory.partition(":")
    graph = getattr(importlib.import_module(module), attr)(*args)

    async def replay() -> int:
        history = await (await connect(address)).get_workflow_handle(workflow_id).fetch_history()
        await replayer(graph).replay_workflow(history)
        return len(history.events)

    print(f"replayed {asyncio.run(replay())} events", flush=True)
    # Ends here: a native thread of Temporal's client sometimes aborts the interpreter's shutdown after the work is
    # done (PyGILState_Release, rc 134: temporalio/sdk-python#300).
    os._exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:])
