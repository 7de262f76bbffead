"""The run's clock and randomness: what routing rules and feature hooks read instead of the process's.

On Temporal the router and some nodes run inside the workflow, whose code is replayed when a worker picks a run
up again: a rule that read ``time.time()`` or ``random`` there would decide differently the second time, and
the replay would fail. A host that replays code sets `replangraph.hosting.run_clock` and
`replangraph.hosting.run_random` (Temporal's workflow sets its own deterministic ones); in-process they are the
process's. `replangraph.routing.Route.now` and the hooks' ``now`` are read from here.

The process's clock is here too, read by what runs where it is: a call's deadline (`now`), a retry's wait
(`wait`), a subtask's time against ``step_timeout_s`` (`monotonic`, through
`replangraph.llm.time_limits.StepClock`; the host's ``step_clock`` where one is set) and the spread of retries
(`jitter`). Each reads this module's ``time`` and ``random`` when called, so a test replaces them here (a fake
``time``, a ``wait`` that records instead of sleeping) and every reader sees it.
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


def wait(seconds: float) -> None:
    """Sleep before a retry (a module function, so tests can replace it)."""
    time.sleep(seconds)


def now() -> float:
    """The time deadlines are measured against, epoch seconds (a module function, so tests can replace it)."""
    return time.time()


def jitter() -> float:
    """A random factor in [-0.25, 0.25] that spreads retries of parallel branches apart."""
    return random.uniform(-0.25, 0.25)


def monotonic() -> float:
    """Seconds, monotonic: what a subtask's time is measured with."""
    return time.monotonic()  # the module's ``time`` at each call: tests set a fake one
