"""Time limits of a subtask and of one call: a subtask's clock against ``step_timeout_s`` (`StepClock`), and a
call that may be abandoned at its deadline (`call_with_timeout`), run on a shared pool of reused daemon threads
(`call_pool`) so that an abandoned call never keeps the process alive."""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from langchain_core.runnables.config import ContextThreadPoolExecutor

from replangraph import clock
from replangraph.hosting import step_clock
from replangraph.llm.errors import (
    StepTimeout,
)

T = TypeVar("T")


class StepClock:
    """A subtask's time against ``step_timeout_s``: what its earlier turns spent in their own model and
    tool calls (``Task.elapsed_s``) plus this turn so far. Time between turns, such as downtime
    between a crash and a resume, is not counted."""

    def __init__(self, spent_s: float, limit_s: float | None):
        self.spent_s = spent_s
        self.limit_s = limit_s
        self.now = step_clock.get() or clock.monotonic  # a host's clock where it sets one (`replangraph.hosting`)
        self.turn_started = self.now()

    @classmethod
    def until(cls, deadline: float | None) -> StepClock:
        """A clock whose time runs out at ``deadline`` (epoch seconds, what `deadline` gave on another machine or
        process), or never with None: a tool call's clock where it runs as an activity of its own."""
        return cls(0.0, None if deadline is None else deadline - clock.now())

    def elapsed(self) -> float:
        """Seconds spent so far, this turn included."""
        return self.spent_s + (self.now() - self.turn_started)

    def left(self) -> float | None:
        """Seconds the subtask may still run, or None without a limit."""
        return None if self.limit_s is None else self.limit_s - self.elapsed()

    def deadline(self) -> float | None:
        """When the time runs out (epoch seconds, for retry waits), or None without a limit."""
        left = self.left()
        return None if left is None else clock.now() + left


CALL_WORKERS = 256
"""Threads that timed calls may occupy at once, abandoned calls included."""


class DaemonPool(Executor):
    """A pool of up to ``workers`` reused daemon threads: each job runs in a copy of its submitter's context
    (``contextvars.copy_context``) and its outcome comes back as a ``concurrent.futures.Future``.

    Hand-written because a ``ThreadPoolExecutor``'s workers are joined at interpreter exit: a call abandoned at
    its time limit (a model server that accepted the request and never answers) would keep the process alive
    until the call returned, long after the run ended. Daemon threads are not waited for. `abandon` counts the
    threads stuck in abandoned calls (`stuck`), so that `call_pool` can start a fresh pool once half are."""

    def __init__(self, workers: int, name: str):
        self.workers, self.name = workers, name
        self.jobs: queue.SimpleQueue[tuple[Future, contextvars.Context, Callable, tuple, dict] | None] = (
            queue.SimpleQueue()
        )
        self.idle = threading.Semaphore(0)
        self.lock = threading.Lock()
        self.threads = 0
        self.closed = False
        self.running: set[Future] = set()
        self.abandoned: set[Future] = set()
        self.stuck = 0
        """Workers busy with an abandoned call (`abandoned`, of the jobs `running`)."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """``fn(*args, **kwargs)`` in a worker, with the caller's context; its future."""
        future: Future[T] = Future()
        with self.lock:
            if self.closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self.jobs.put((future, contextvars.copy_context(), fn, args, kwargs))
            if not self.idle.acquire(blocking=False) and self.threads < self.workers:
                self.threads += 1
                name = f"replangraph-{self.name}_{self.threads}"
                threading.Thread(target=self.work, name=name, daemon=True).start()
        return future

    def work(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:  # shut down: one None per thread, after the jobs queued before
                return
            future, context, fn, args, kwargs = job
            del job
            result: Any = None
            error: BaseException | None = None
            with self.lock:  # before it starts: a caller that cannot cancel it any more finds it running
                self.running.add(future)
            started = future.set_running_or_notify_cancel()
            if started:
                try:
                    result = context.run(fn, *args, **kwargs)
                except BaseException as exc:  # the future carries it, as a ThreadPoolExecutor's does
                    error = exc
            with self.lock:
                self.running.discard(future)
                if future in self.abandoned:
                    self.abandoned.discard(future)
                    self.stuck -= 1
            self.idle.release()  # before the caller hears back: its next call finds this thread idle
            if started and error is not None:
                future.set_exception(error)
            elif started:
                future.set_result(result)
            del future, context, fn, args, kwargs, result, error  # nothing of the job stays alive while idle

    def abandon(self, future: Future) -> None:
        """Note that no one waits for ``future`` any more while its call runs on: its worker is stuck until the
        call returns."""
        with self.lock:
            if future in self.running and future not in self.abandoned:
                self.abandoned.add(future)
                self.stuck += 1

    def shutdown(self, wait: bool = False, *, cancel_futures: bool = False) -> None:
        """No new jobs; idle workers end now, busy ones when their job returns (``wait`` is not honoured: a stuck
        worker may never return)."""
        with self.lock:
            self.closed = True
            threads = self.threads
        for _ in range(threads):
            self.jobs.put(None)


Pool = DaemonPool | ContextThreadPoolExecutor


DAEMON_KINDS = frozenset({"calls"})
"""The pools whose calls may be abandoned (`call_with_timeout`, `in_pool` under a cancelled await): daemon
threads (`DaemonPool`), so that an abandoned call never keeps the process from exiting."""


_pools: dict[tuple[str, int], Pool] = {}


_pool_lock = threading.Lock()


def call_pool(kind: str = "calls", workers: int | None = None) -> Pool:
    """A shared pool of ``workers`` threads (default `CALL_WORKERS`; one per ``kind`` and size), created on first
    use: its threads are reused, not started per call.

    Timed calls use ``calls``, a `DaemonPool` (under ``ainvoke`` so do sync model calls, sync tools and sync
    nodes, `in_pool`): any of them may be abandoned, and must not keep the process alive. The checks run in
    ``checks`` and the async path's sync segments in ``steps``: those are waited for, never
    abandoned, and are ``ContextThreadPoolExecutor`` pools. Once half the workers of a ``calls`` pool are stuck
    in abandoned calls, later calls get a fresh pool.
    """
    key = (kind, workers or CALL_WORKERS)
    with _pool_lock:
        found = _pools.get(key)
        if isinstance(found, DaemonPool) and found.stuck >= max(found.workers // 2, 1):
            _pools.pop(key).shutdown()  # its stuck threads end when their calls do
        if key not in _pools:
            name = f"replangraph-{kind}"
            _pools[key] = (
                DaemonPool(key[1], kind)
                if kind in DAEMON_KINDS
                else ContextThreadPoolExecutor(max_workers=key[1], thread_name_prefix=name)
            )
        return _pools[key]


def abandon(pool: Pool, future: Future) -> None:
    """Note that ``future``'s call was abandoned (see `DaemonPool.abandon`); nothing for other pools."""
    if isinstance(pool, DaemonPool):
        pool.abandon(future)


def call_with_timeout(call: Callable[[], T], timeout_s: float | None) -> T:
    """``call()``, or StepTimeout once ``timeout_s`` has passed (None: no limit).

    The sync path's limit (the async path's is `acall_with_timeout`). The call runs in a shared worker
    thread (with the caller's context) that is abandoned on timeout; Python cannot kill it, but its result
    is ignored, and the thread is a daemon one (`DaemonPool`): it does not keep the process alive.
    """
    if timeout_s is None:
        return call()
    if timeout_s <= 0:
        raise StepTimeout("no time left")
    pool = call_pool()
    future = pool.submit(call)
    try:
        return future.result(timeout=timeout_s)
    except FutureTimeout:
        if future.done():  # the call itself raised a TimeoutError (the same class since 3.11)
            raise
        if not future.cancel():  # running: its worker stays busy until the call returns
            abandon(pool, future)
        raise StepTimeout(f"no answer within {timeout_s:.1f}s") from None
