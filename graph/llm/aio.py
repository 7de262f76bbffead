"""The async path of `replangraph.llm.calls`: model calls awaited (`acall_model`), their
retries and time limits (`aretrying`, `acall_with_timeout`), and the driver of work written once for both paths
(`arun_steps`). Every name here is importable from ``replangraph.llm.calls`` too. No LangGraph here but
``get_store``. A sync run (``invoke``) runs none of it.

**Store calls stay off the event loop.** A LangGraph server's store (``BatchedStore``) refuses sync calls on
its event loop, and a database store's would stall every subtask while it waits. When the run has a store, the
sync segments of work written as steps run in the ``steps`` pool (`arun_steps`), as LangGraph runs a sync
node, and so does other sync code of an async node that may read the store (`off_loop`); writes go out
awaited (``replangraph.context.workspace``). Without a store nothing leaves the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableBinding, RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.config import get_store

from replangraph import clock
from replangraph.llm.answers import Structured, raw_reply
from replangraph.llm.bounds import output_limit, with_output_bound
from replangraph.llm.calls import BUBBLE_UP, Called
from replangraph.llm.errors import StepTimeout, is_transient
from replangraph.llm.replies import note_reply
from replangraph.llm.retries import backoff_delays, client_timeout, next_wait, paused_if_down, replangraph_retries
from replangraph.llm.time_limits import CALL_WORKERS, abandon, call_pool
from replangraph.tracing import call_label

T = TypeVar("T")


async def await_wait(seconds: float) -> None:
    """`wait` without holding a thread (a module function, so tests can replace it)."""
    await asyncio.sleep(seconds)


async def acall_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    retries: int,
    backoff_s: float,
    max_backoff_s: float = 60.0,
    transient: Callable[[BaseException], bool] = is_transient,
    deadline: float | None = None,
    label: str = "model call",
) -> tuple[T, int]:
    """`call_with_retries` for an async ``call``: the same policy (`next_wait`) and log, waits awaited."""
    delays = backoff_delays(retries, backoff_s, max_backoff_s)
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call(), attempt
        except Exception as exc:
            delay = next_wait(exc, attempt, delays, max_backoff_s, transient, deadline, label)
            if delay is None:
                raise
            await await_wait(delay)


async def aretrying(
    call: Callable[[], Awaitable[T]], config: Any, deadline: float | None = None, label: str = "model call"
) -> tuple[T, int]:
    """`retrying` for an async ``call``."""
    return await acall_with_retries(
        call,
        retries=config.model_retries,
        backoff_s=config.retry_backoff_s,
        max_backoff_s=config.max_retry_wait_s,
        deadline=deadline,
        label=label,
    )


def advanced(steps: Generator[Any, Any, T], send: bool, value: Any) -> tuple[bool, Any]:
    """``(False, next yielded value)`` after sending ``value`` into ``steps`` (or throwing it in, without
    ``send``), or ``(True, what it returned)``: one sync segment of work written as steps."""
    try:
        return False, steps.send(value) if send else steps.throw(value)
    except StopIteration as stop:
        return True, stop.value


def store_in_run() -> bool:
    """Whether the graph run going on has a store: then the sync code of its async nodes reads it and runs
    off the event loop (`arun_steps`, `off_loop`)."""
    try:
        return get_store() is not None
    except (RuntimeError, KeyError):  # not in a graph run, or in a runnable outside one
        return False


async def arun_steps(steps: Generator[Any, Any, T], off_loop: bool | None = None) -> T:
    """What ``steps`` returns on the async path: each yielded awaitable is awaited, its result (or
    exception) sent back (see `run_steps`).

    With ``off_loop`` (default: when the run has a store, `store_in_run`) the generator's sync segments run
    in replangraph's ``steps`` pool, so that the store reads inside them never block the event loop (a
    LangGraph server's store refuses sync calls there). One copy of the caller's context serves every
    segment and the awaitables between them: a context variable set in one (held events, the workspace)
    is seen by the next, as when the generator runs on the loop."""
    hop = store_in_run() if off_loop is None else off_loop
    context = contextvars.copy_context() if hop else None
    loop = asyncio.get_running_loop()

    async def advance(send: bool, value: Any) -> tuple[bool, Any]:
        if context is None:
            return advanced(steps, send, value)
        return await loop.run_in_executor(call_pool("steps"), context.run, advanced, steps, send, value)

    done = False
    try:
        done, value = await advance(True, None)
        while not done:
            pending = loop.create_task(value, context=context) if context and asyncio.iscoroutine(value) else value
            try:
                result = await pending
            except Exception as exc:  # the generator decides, as if the call had raised there
                done, value = await advance(False, exc)
            else:
                done, value = await advance(True, result)
        return value
    finally:
        if not done and not steps.gi_running:  # cancelled between segments: its cleanup runs now, in its context
            context.run(steps.close) if context is not None else steps.close()


async def off_loop(call: Callable[[], T], hop: bool | None = None) -> T:
    """``call()``, run in replangraph's ``steps`` pool (with the caller's context) when ``hop`` (default: when
    the run has a store, `store_in_run`): sync code between two awaits that may read the store."""
    if not (store_in_run() if hop is None else hop):
        return call()
    return await asyncio.get_running_loop().run_in_executor(call_pool("steps"), call)


async def aguarded(work: Callable[[], Awaitable[T]], fallback: Callable[[Exception], T]) -> T:
    """`guarded` for an async ``work``."""
    try:
        return await work()
    except BUBBLE_UP:
        raise
    except Exception as exc:
        return fallback(exc)


async def aattempt(
    call: Callable[[], Awaitable[T]], config: Any, *, deadline: float | None = None, label: str = "model call"
) -> Called[T]:
    """`attempt` for an async ``call``: each try gets the time left (`acall_with_timeout`)."""
    timed = call if deadline is None else (lambda: acall_with_timeout(call, deadline - clock.now()))

    async def tried() -> Called[T]:
        reply, attempts = await aretrying(timed, config, deadline, label)
        return Called(reply, attempts)

    return await aguarded(tried, Called.failed)


async def acall_model(
    model: Any,
    request: Any,
    config: Any,
    *,
    deadline: float | None = None,
    observe: Callable[[Any, Any], None] | None = None,
    monitor: Any = None,
    trace: RunnableConfig | None = None,
) -> Called:
    """`call_model` awaiting the model (`ainvoke_model`): the same bounds, retries, time limit, trace and outcome."""
    bounded_model = with_output_bound(
        model, output_limit(config, monitor), replangraph_retries(config) == 0, client_timeout(config)
    )
    if deadline is None and getattr(config, "step_timeout_s", None):
        deadline = clock.now() + config.step_timeout_s
    label = call_label(trace)
    called = await aattempt(
        lambda: ainvoke_model(bounded_model, request, trace), config, deadline=deadline, label=label
    )
    if called.error is not None:
        paused_if_down(called.error, config)
        return called
    note_reply(request, raw_reply(called.reply))
    if observe is not None:
        observe(request, raw_reply(called.reply))
    return called


def awaits_natively(runnable: Any) -> bool:
    """Whether ``runnable`` (a chat model, one bound to tools, a `Structured` one, a tool) has an async
    implementation of its own, rather than LangChain's default of running its sync code in asyncio's
    default thread pool (cores + 4 threads, which would cap how many subtasks run at once)."""
    inner = getattr(runnable, "model", None) if isinstance(runnable, Structured) else runnable
    while isinstance(inner, RunnableBinding):
        inner = inner.bound
    if isinstance(inner, BaseChatModel):
        own = type(inner)
        return own._agenerate is not BaseChatModel._agenerate or own._astream is not BaseChatModel._astream
    if isinstance(inner, StructuredTool):
        return inner.coroutine is not None
    if isinstance(inner, BaseTool):
        return type(inner)._arun is not BaseTool._arun
    return True


async def in_pool(call: Callable[[], T], workers: int | None = None) -> T:
    """``call()`` in a shared thread pool of ``workers`` threads (default `CALL_WORKERS`; with the caller's
    context), awaited. When the await is cancelled (``step_timeout_s``, a cancelled run) while the call runs,
    the call is abandoned: its thread is a daemon one (`replangraph.llm.time_limits.DaemonPool`), counted as stuck
    until the call returns."""
    pool = call_pool("calls", workers or CALL_WORKERS)
    future = pool.submit(call)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        if not future.cancel():  # running: its worker stays busy until the call returns
            abandon(pool, future)
        raise


async def ainvoke_model(model: Any, request: Any, config: RunnableConfig | None = None) -> Any:
    """``await model.ainvoke(request, config)`` when the model has async code of its own (`awaits_natively`), else
    ``model.invoke(request, config)`` in replangraph's own pool."""
    if awaits_natively(model):
        return await model.ainvoke(request, config)
    return await in_pool(lambda: model.invoke(request, config))


async def acall_with_timeout(call: Callable[[], Awaitable[T]], timeout_s: float | None) -> T:
    """``await call()``, or StepTimeout once ``timeout_s`` has passed (None: no limit): the call is cancelled
    (asyncio cancellation; a sync call it runs in a thread is abandoned, as `call_with_timeout` does)."""
    if timeout_s is None:
        return await call()
    if timeout_s <= 0:
        raise StepTimeout("no time left")
    try:
        async with asyncio.timeout(timeout_s) as limit:
            return await call()
    except TimeoutError:
        if not limit.expired():  # the call itself raised a TimeoutError
            raise
        raise StepTimeout(f"no answer within {timeout_s:.1f}s") from None
