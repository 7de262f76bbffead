"""Stand-ins for the clock, and a meter of calls that overlap: tests prove timing behaviour with them instead of
measuring how long something took (speed figures belong in benchmarks/)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

GUARD_S = 60.0
"""How long a test waits for something that should happen at once before it fails saying what did not happen."""


class FakeClock:
    """A clock that moves only when told to. Set it as a module's ``time`` (``monkeypatch.setattr(module, "time",
    clock)``): ``monotonic``, ``time`` and ``perf_counter`` read it, and ``sleep`` moves it on at once, keeping the
    seconds asked for in ``slept``."""

    def __init__(self, now: float = 1_000_000.0):
        self.now = now
        self.slept: list[float] = []
        self.reads = 0
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        with self._lock:
            self.reads += 1
            return self.now

    time = perf_counter = monotonic

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)


class Ticking(FakeClock):
    """A `FakeClock` that moves on ``step`` seconds after each reading."""

    def __init__(self, step: float, now: float = 1_000_000.0):
        super().__init__(now)
        self.step = step

    def monotonic(self) -> float:
        seen = super().monotonic()
        self.advance(self.step)
        return seen

    time = perf_counter = monotonic


class InFlight:
    """Counts the calls running at once; ``peak`` is the most that ever overlapped, ``calls`` how many there were.

    With a ``barrier``, each call waits at it until as many calls as it has parties are running together (or fails
    after `GUARD_S` with BrokenBarrierError): proof that they overlapped, however slow the machine."""

    def __init__(self, barrier_parties: int = 0):
        self.running = self.peak = self.calls = 0
        self.barrier = threading.Barrier(barrier_parties, timeout=GUARD_S) if barrier_parties else None
        self._lock = threading.Lock()

    def __enter__(self) -> InFlight:
        with self._lock:
            self.calls += 1
            self.running += 1
            self.peak = max(self.peak, self.running)
        if self.barrier is not None:
            try:
                self.barrier.wait()
            except threading.BrokenBarrierError:
                self.__exit__()  # not running any more: the call fails here
                raise
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.running -= 1

    def wrap(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """``call`` counted while it runs (same name, docstring and signature, so it can be a tool)."""
        import functools

        @functools.wraps(call)
        def counted(*args: Any, **kwargs: Any) -> Any:
            with self:
                return call(*args, **kwargs)

        return counted


HOLD_S = 60.0
"""The longest `hold_until_go` holds a run (a test that never lets it go fails on its own deadline first)."""


def hold_until_go(folder: str | Path, started: str) -> None:
    """Write ``started`` to ``folder/started``, then return once ``folder/go`` appears (or after `HOLD_S`): a
    tool that holds its run there while a test does something to it, then lets it go; no timing involved."""
    Path(folder, "started").write_text(started)
    deadline = time.monotonic() + HOLD_S
    while not Path(folder, "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
