"""The run's clock and randomness: what routing rules and feature hooks read instead of the process's.

On Temporal the router and some nodes run inside the workflow, whose code is replayed when a worker picks a run
up again: a rule that read ``time.time()`` or ``random`` there would decide differently the second time, and
the replay would fail. A host that replays code sets `replangraph.hosting.run_clock` and
`replangraph.hosting.run_random` (Temporal's workflow sets its own deterministic ones); in-process they are the
process's. `replangraph.routing.Route.now` and the hooks' ``now`` are read from here.

A subtask's own time against ``step_timeout_s`` is `replangraph.llm.calls.StepClock`'s (monotonic, the host's
``step_clock`` where one is set); the time a model call may wait is the process's, as the call runs where it is.
"""

from __future__ import annotations

import random
import time

from replangraph.hosting import run_clock, run_random

_PROCESS_RANDOM = random.Random()


def run_time() -> float:
    """The run's time, epoch seconds: the host's clock where it sets one (a workflow's), else ``time.time()``."""
    clock = run_clock.get()
    return clock() if clock is not None else time.time()


def run_randomness() -> random.Random:
    """The run's source of randomness: the host's where it sets one (a workflow's seeded one), else the
    process's."""
    return run_random.get() or _PROCESS_RANDOM
