"""Every way a node asks a model: the one call path and the one structured-output loop. No LangGraph here
but ``GraphBubbleUp``.

**The call path.** Nodes call their model through `call_model` (or `attempt`), which retries transient
errors (``is_retryable``, ``Retry-After``, backoff), keeps time limits and never raises for model trouble but
returns it classified in a `Called`; `refit_steps` asks once more at ``OVERFLOW_SHRINK`` of the budget
when the provider refused a request as too long; `guarded` is the one place an ordinary exception is caught
while LangGraph's own pass through. The executor's model calls go through its middleware chain
(``nodes/execution/middleware.py``), whose retry wrapper is `retrying` under the step's deadline and whose
step deadline is `call_with_timeout`; its failures are caught by `guarded`, like the tools node's (tool
calls are not model calls: no retries).

Hand-written rather than LangGraph's ``RetryPolicy`` because a policy retries a whole node: it cannot honour
a provider's ``Retry-After``, it would repeat the planner's earlier (successful) calls, and its attempts
could not be counted against ``max_steps``. Nodes still get LangGraph's ``error_handler`` as the safety net
for anything unexpected (see ``builder.py``).

**The structured-output loop** (`replangraph.llm.structured.structured_steps`, work written as steps: `run_steps`
drives it on the sync path, `arun_steps` on the async one), which the planner's and replanner's plans, the
completion check's and the goal check's verdicts and the team judges' and voters' answers take: a model bound to
a schema (`bind_schema`: function calling, raw reply included) is asked through `call_model` (`acall_model` when
awaited); ``read(answer)`` turns the answer into a value or raises `UnreadableInput` with a reason. Its answer
types (`StructuredAnswer`, `Provisional`) and retry texts live here.

**The async path** (``ainvoke``) lives in `replangraph.llm.aio`, which imports this module; a sync run runs none
of it.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import random
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableBinding, RunnableConfig, RunnableSequence
from langchain_core.runnables.config import ContextThreadPoolExecutor
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel

from replangraph.hosting import step_clock
from replangraph.llm.errors import (
    ModelServerDown,
    StepTimeout,
    is_context_overflow,
    is_server_down,
    is_transient,
    retry_after,
)
from replangraph.llm.formats import load_json, read_text_calls
from replangraph.llm.lenient import CUT_OFF, CutOff, UnreadableInput
from replangraph.llm.reading import answer_text, cut_by_limit
from replangraph.llm.replies import note_reply
from replangraph.tracing import call_label

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


BUBBLE_UP = (GraphBubbleUp,)
"""LangGraph's control flow (interrupts, commands to a parent graph, a paused run): never a failure, always
re-raised."""
OVERFLOW_SHRINK = 0.5
"""After a provider refused a request as too long, the next try aims at this share of the budget
(the compressor: of the part of the window it can shrink)."""


def paused_if_down(exc: BaseException, config: Any) -> None:
    """Raise `ModelServerDown` for ``exc`` when the server did not answer and the run pauses for that."""
    if getattr(config, "pause_when_model_down", False) and is_server_down(exc):
        down = ModelServerDown(exc)
        logger.warning("%s", down)
        raise down from exc


def backoff_delays(retries: int, initial_s: float, max_s: float) -> list[float]:
    """Exponential waits before each retry: initial, 2x, 4x ... capped at ``max_s``."""
    return [min(initial_s * 2**i, max_s) for i in range(retries)]


def retry_delay(exc: BaseException, backoff_s: float, max_s: float, jitter: float = 0.0) -> float:
    """The wait before the next try: the provider's ``Retry-After`` when it sent one, else the
    backoff with jitter; capped at ``max_s``."""
    asked = retry_after(exc)
    return min(asked if asked is not None else backoff_s * (1 + jitter), max_s)


def wait(seconds: float) -> None:
    """Sleep before a retry (a module function, so tests can replace it)."""
    time.sleep(seconds)


def now() -> float:
    """The time deadlines are measured against, epoch seconds (a module function, so tests can replace it)."""
    return time.time()


def jitter() -> float:
    """A random factor in [-0.25, 0.25] that spreads retries of parallel branches apart."""
    return random.uniform(-0.25, 0.25)


def next_wait(
    exc: Exception,
    attempt: int,
    delays: Sequence[float],
    max_backoff_s: float,
    transient: Callable[[BaseException], bool],
    deadline: float | None,
    label: str = "model call",
) -> float | None:
    """How long to wait before trying again after try ``attempt`` raised ``exc``; None when no try is left (then
    ``exc.attempts`` is set). The one retry policy of `call_with_retries` and `acall_with_retries`; logs the
    retry, or why there is none, naming the call by ``label``."""
    if not transient(exc):
        exc.attempts = attempt  # type: ignore[attr-defined]  # how many calls were spent
        logger.debug("%s failed, not retried (%s: %s)", label, type(exc).__name__, exc)
        return None
    if attempt > len(delays):
        exc.attempts = attempt  # type: ignore[attr-defined]
        logger.warning("%s failed, no retries left after try %d (%s: %s)", label, attempt, type(exc).__name__, exc)
        return None
    delay = retry_delay(exc, delays[attempt - 1], max_backoff_s, jitter())
    delay = delay if deadline is None else min(delay, max(deadline - now(), 0.0))
    logger.info(
        "%s failed (%s: %s); retry %d of %d in %.1fs", label, type(exc).__name__, exc, attempt, len(delays), delay
    )
    return delay


def call_with_retries(
    call: Callable[[], T],
    *,
    retries: int,
    backoff_s: float,
    max_backoff_s: float = 60.0,
    transient: Callable[[BaseException], bool] = is_transient,
    sleep: Callable[[float], None] | None = None,
    deadline: float | None = None,
    label: str = "model call",
) -> tuple[T, int]:
    """``(result, attempts)``; retries transient errors after the provider's ``Retry-After``
    or else an exponential backoff (±25 % jitter), capped at ``max_backoff_s``. Other
    errors, and the last one, are re-raised with ``exc.attempts`` set. No wait runs past
    ``deadline`` (epoch seconds). ``label`` names the call in the log."""
    sleep = sleep or wait
    delays = backoff_delays(retries, backoff_s, max_backoff_s)
    attempt = 0
    while True:
        attempt += 1
        try:
            return call(), attempt
        except Exception as exc:
            delay = next_wait(exc, attempt, delays, max_backoff_s, transient, deadline, label)
            if delay is None:
                raise
            sleep(delay)


def replangraph_retries(config: Any) -> int:
    """How often replangraph retries a failed model call (``model_retries``); while it does, a model's client
    does not retry on its own (`bounded`), so one policy applies: (model_retries + 1) requests a call at most."""
    return int(getattr(config, "model_retries", 0) or 0)


def client_timeout(config: Any) -> float | None:
    """The longest a model's own client may wait for an answer to replangraph's calls: ``step_timeout_s``, the
    most time replangraph gives a call (its client gives up no later, so an abandoned call's thread ends soon
    after it); None when there is no limit (the client's own timeout stands)."""
    return getattr(config, "step_timeout_s", None) or None


def retrying(
    call: Callable[[], T], config: Any, deadline: float | None = None, label: str = "model call"
) -> tuple[T, int]:
    """``call()`` with the run's retry settings (an `AgentConfig`); ``(result, attempts)``. ``label`` names
    the call in the log."""
    return call_with_retries(
        call,
        retries=config.model_retries,
        backoff_s=config.retry_backoff_s,
        max_backoff_s=config.max_retry_wait_s,
        deadline=deadline,
        label=label,
    )


@dataclass
class Called(Generic[T]):
    """The outcome of one model call through `call_model`: a reply, or the error that ended the tries."""

    reply: T | None
    attempts: int
    """Tries spent, transient retries and a try refused for want of time included."""
    error: Exception | None = None
    overflow: bool = False
    """Whether the provider refused the request as longer than its context window."""
    unanswered: bool = False
    """Whether a transient error (down, timing out, rate limited) outlived the retries."""

    @classmethod
    def failed(cls, exc: Exception) -> Called:
        """The classified outcome of a call that ended in ``exc`` (``exc.attempts``: tries spent)."""
        attempts = getattr(exc, "attempts", 1)
        return cls(None, attempts, exc, overflow=is_context_overflow(exc), unanswered=is_transient(exc))

    def result(self) -> T:
        """The reply, or the error raised again (for callers whose failure handling is an exception)."""
        if self.error is not None:
            raise self.error
        return self.reply  # type: ignore[return-value]


def guarded(work: Callable[[], T], fallback: Callable[[Exception], T]) -> T:
    """``work()``, or ``fallback(exc)`` when it raises an ordinary exception. LangGraph's bubble-up
    (``GraphBubbleUp``) and ``KeyboardInterrupt``/``SystemExit`` always pass through."""
    try:
        return work()
    except BUBBLE_UP:
        raise
    except Exception as exc:
        return fallback(exc)


def attempt(
    call: Callable[[], T], config: Any, *, deadline: float | None = None, label: str = "model call"
) -> Called[T]:
    """``call()`` with the run's retry settings, never raising for its failure: a `Called`.

    With a ``deadline`` (epoch seconds) each try gets only the time left, waits included, and
    once it has passed no further try starts (`StepTimeout`). ``label`` names the call in the log."""
    timed = call if deadline is None else (lambda: call_with_timeout(call, deadline - now()))

    def tried() -> Called[T]:
        reply, attempts = retrying(timed, config, deadline, label)
        return Called(reply, attempts)

    return guarded(tried, Called.failed)


def call_model(
    model: Any,
    request: Any,
    config: Any,
    *,
    deadline: float | None = None,
    observe: Callable[[Any, Any], None] | None = None,
    monitor: Any = None,
    trace: RunnableConfig | None = None,
) -> Called:
    """``model.invoke(request, trace)`` through `attempt`: retried, timed, classified; never raises but bubble-up
    (and `ModelServerDown` when the run pauses for a server that stopped answering). ``trace``: the call's
    config, which names its node and subtask in traces and logs (`replangraph.tracing.traced`).

    The answer is bounded (`output_limit` of ``config`` and ``monitor``, the model's context monitor; sent as
    `with_output_bound` says), the client's own retries are off while replangraph retries (`replangraph_retries`),
    and the call's time is bounded too: without a ``deadline``, ``step_timeout_s`` from now (an OpenAI client's
    own ``timeout`` at most that, `client_timeout`).
    ``observe(request, reply)`` sees each reply (to calibrate token counts from its usage)."""
    bounded_model = with_output_bound(
        model, output_limit(config, monitor), replangraph_retries(config) == 0, client_timeout(config)
    )
    if deadline is None and getattr(config, "step_timeout_s", None):
        deadline = now() + config.step_timeout_s
    called = attempt(lambda: bounded_model.invoke(request, trace), config, deadline=deadline, label=call_label(trace))
    if called.error is not None:
        paused_if_down(called.error, config)
        return called
    note_reply(request, raw_reply(called.reply))
    if observe is not None:
        observe(request, raw_reply(called.reply))
    return called


def run_steps(steps: Generator[Any, Any, T]) -> T:
    """What ``steps`` returns on the sync path. Work written once for both paths is a generator that yields
    each call's result as it makes the call (sync path) or the call's awaitable (async path), and is sent
    the result (or thrown the call's exception) back: here each yielded value is already the result."""
    try:
        value = next(steps)
        while True:
            value = steps.send(value)
    except StopIteration as stop:
        return stop.value


def guarded_steps(steps: Generator[Any, Any, T], fallback: Callable[[Exception], T]) -> Generator[Any, Any, T]:
    """`guarded` for work written as steps (a generator whose calls a node's sync or async driver makes):
    what ``steps`` returns, or ``fallback(exc)`` when it raises an ordinary exception."""
    try:
        return (yield from steps)
    except BUBBLE_UP:
        raise
    except Exception as exc:
        return fallback(exc)


# --------------------------------------------------------------------------- output bounds, cut answers, windows

BOUND_FIELDS = ("max_tokens", "max_output_tokens", "num_predict", "max_new_tokens")
"""A chat model's own field bounding its answer, by the names providers use (OpenAI, Anthropic and most others;
Gemini; Ollama; Hugging Face)."""
BOUND_COPIES_KEPT = 64
_bound_copies: dict[tuple[int, int | None, bool, float | None], tuple[Any, Any]] = {}
_bound_lock = threading.Lock()


def output_limit(config: Any, monitor: Any) -> int | None:
    """Most tokens one answer may take: ``max_output_tokens``, else the room the model's requests leave for
    the answer (the ``monitor``'s ``reserved_output``: at most a quarter of the window it knows, learned or
    configured; without a monitor, ``reserved_output`` within a quarter of ``context_window``); None when 0."""
    if getattr(config, "max_output_tokens", None):
        return config.max_output_tokens
    if monitor is not None:
        return monitor.reserved_output or None
    reserved = getattr(config, "reserved_output", 0)
    window = getattr(config, "context_window", None)
    room = min(reserved, window // 4) if window else reserved
    return room or None


def endpoint_url(model: Any) -> str:
    """The base URL an OpenAI-client model sends to ('' for others, or when it is OpenAI's default)."""
    client = getattr(model, "root_client", None)
    url = getattr(client, "base_url", None) or getattr(model, "openai_api_base", None) or ""
    return str(url)


def output_bound(model: Any, tokens: int) -> dict[str, Any]:
    """The fields to set on ``model`` so its answers stop at ``tokens`` (at most the model profile's
    ``max_output_tokens``, and a smaller bound already set stays), in the form its endpoint honours.

    langchain-openai sends ``max_tokens`` as ``max_completion_tokens``, which OpenAI wants but servers such as
    llama.cpp's ignore: against any other base URL the bound goes as ``max_tokens`` in ``extra_body``."""
    fields = getattr(type(model), "model_fields", {})
    profile = getattr(model, "profile", None) or {}
    cap = profile.get("max_output_tokens") if isinstance(profile, Mapping) else None
    tokens = min(tokens, int(cap)) if cap else tokens
    url = endpoint_url(model)
    if "extra_body" in fields and url and "api.openai.com" not in url:
        extra = dict(getattr(model, "extra_body", None) or {})
        given = extra.get("max_tokens")
        extra["max_tokens"] = min(given, tokens) if isinstance(given, int) and given > 0 else tokens
        return {"extra_body": extra}
    for name in BOUND_FIELDS:
        if name in fields:
            given = getattr(model, name, None)
            return {name: min(given, tokens) if isinstance(given, int) and given > 0 else tokens}
    return {}


def client_retries(model: Any) -> int | None:
    """How often a chat model's own client retries a failed request (ChatOpenAI: ``max_retries``, its client's
    2 when unset), or None when it does not say."""
    own = getattr(model, "max_retries", None)
    if isinstance(own, int):
        return own
    client = getattr(getattr(model, "root_client", None), "max_retries", None)
    return client if isinstance(client, int) else None


def stacked_retries(model: Any) -> int:
    """Retries a chat model's client makes on its own that replangraph cannot turn off for its calls (a client
    other than OpenAI's: `quiet_client` quiets those); 0 when none."""
    return 0 if hasattr(getattr(model, "root_client", None), "with_options") else client_retries(model) or 0


def capped_timeout(timeout: Any, limit_s: float) -> Any:
    """An OpenAI client's ``timeout`` at most ``limit_s`` seconds: a number or None (no limit) as the smaller,
    an ``httpx.Timeout`` with each of its parts capped (a shorter part stays); anything else: ``limit_s``."""
    if timeout is None or isinstance(timeout, int | float):
        return limit_s if timeout is None or timeout > limit_s else timeout
    parts = ("connect", "read", "write", "pool")
    if all(hasattr(timeout, part) for part in parts):
        capped = {
            part: limit_s if getattr(timeout, part) is None else min(getattr(timeout, part), limit_s) for part in parts
        }
        return timeout if all(getattr(timeout, p) == v for p, v in capped.items()) else type(timeout)(**capped)
    return limit_s


def client_fields(model: Any, quiet: bool, timeout_s: float | None) -> dict[str, Any]:
    """The fields that make an OpenAI-client chat model (ChatOpenAI, AzureChatOpenAI and the other
    ``BaseChatOpenAI`` kinds) send each request once (``quiet``: ``max_retries=0``) and wait at most
    ``timeout_s`` seconds for it (its ``timeout``, a shorter one kept; None: as it is): its clients copied
    with those options (``with_options`` keeps their base URL, key, headers, other settings and HTTP
    connection pool); {} when nothing changes, or for a model that has no OpenAI client to copy."""
    sync, run_async = getattr(model, "root_client", None), getattr(model, "root_async_client", None)
    if not hasattr(sync, "with_options"):
        return {}
    quiet = quiet and bool(client_retries(model))
    fields: dict[str, Any] = {}
    for name, client, calls in (("root_client", sync, "client"), ("root_async_client", run_async, "async_client")):
        if not hasattr(client, "with_options"):
            continue
        options: dict[str, Any] = {"max_retries": 0} if quiet else {}
        if timeout_s is not None and (capped := capped_timeout(client.timeout, timeout_s)) != client.timeout:
            options["timeout"] = capped
        if options:
            fields[name] = client.with_options(**options)
            fields[calls] = fields[name].chat.completions
    if fields and quiet:
        fields["max_retries"] = 0
    return fields


def quiet_client(model: Any) -> dict[str, Any]:
    """The fields that make an OpenAI-client chat model send each request once (`client_fields`); {} for a
    model whose client does not retry, or that has no OpenAI client to copy."""
    return client_fields(model, True, None)


def bounded(model: Any, tokens: int | None, client_retries: bool = True, timeout_s: float | None = None) -> Any:
    """A copy of the chat model ``model`` whose answers stop at ``tokens`` (`output_bound`; None: no bound) and,
    without ``client_retries``, whose client sends each request once (replangraph retries them, with the
    provider's ``Retry-After`` and each try counted), and waits at most ``timeout_s`` for an answer (the time
    replangraph gives the call: its client gives up no later, see `client_fields`); the model itself when
    nothing changes. Copies are reused (and keep their model alive, so its id is not reused)."""
    key = (id(model), tokens, client_retries, timeout_s)
    with _bound_lock:
        found = _bound_copies.get(key)
    if found is not None:
        return found[1]
    fields = output_bound(model, tokens) if tokens else {}
    fields.update(client_fields(model, not client_retries, timeout_s))
    if not fields or all(getattr(model, k, None) is v or getattr(model, k, None) == v for k, v in fields.items()):
        return model
    copy = model.model_copy(update=fields)
    with _bound_lock:
        if len(_bound_copies) >= BOUND_COPIES_KEPT:
            _bound_copies.pop(next(iter(_bound_copies)))
        _bound_copies[key] = (model, copy)
    return copy


def with_output_bound(
    model: Any, tokens: int | None, client_retries: bool = True, timeout_s: float | None = None
) -> Any:
    """``model`` answering in at most ``tokens``, without ``client_retries`` sending each request once, and its
    client waiting at most ``timeout_s`` (`bounded`): a chat model, one bound to tools or settings, or one
    bound to a schema by `bind_schema`; anything else as it is."""
    if tokens is None and client_retries and timeout_s is None:
        return model
    if isinstance(model, Structured):
        return model.bounded(tokens, client_retries, timeout_s)
    if isinstance(model, BaseChatModel):
        return bounded(model, tokens, client_retries, timeout_s)
    if isinstance(model, RunnableBinding) and isinstance(model.bound, BaseChatModel):
        inner = bounded(model.bound, tokens, client_retries, timeout_s)
        return model if inner is model.bound else model.model_copy(update={"bound": inner})
    return model


def was_cut(reply: Any) -> bool:
    """Whether the model's answer (or the raw reply of a structured one) stopped at its output bound."""
    return cut_by_limit(raw_reply(reply))


def cut_note(limit: int | None) -> str:
    """The note ending an answer that stopped at its output bound."""
    bound = f" of {limit} tokens" if limit else ""
    return f"[cut: this answer stopped at the model's output limit{bound} (max_output_tokens); the rest is missing]"


def overflowed(outcome: Any) -> bool:
    """Whether an outcome says the provider refused its request as too long (its ``overflow``)."""
    return bool(getattr(outcome, "overflow", False))


def outcome_error(outcome: Any) -> BaseException | str | None:
    """The error an outcome carries (a `Called`'s ``error``, a `StructuredAnswer`'s ``failure``, or the text
    of an outcome's ``error``), if any."""
    found = getattr(outcome, "failure", None) or getattr(outcome, "error", None)
    return found if isinstance(found, BaseException | str) and found else None


def refit_steps(
    fitted: Callable[[float], Generator[Any, Any, R]],
    refused: Callable[[R], bool] = overflowed,
    learn: Callable[[BaseException | str], bool] | None = None,
    error: Callable[[R], BaseException | str | None] = outcome_error,
    label: str = "model call",
) -> Generator[Any, Any, list[R]]:
    """``[first]``, the outcome of ``fitted(1.0)`` (steps, see `run_steps`: ``fitted(share)`` gives the steps of one
    try), plus one more try when the provider refused the first request as too long: ``refused(first)`` (its
    overflow error: ``error(first)``), or a context-overflow error it raised. When ``learn(error)`` took the real
    window from the error (see `overflow_sizes`), the retry fits the whole of it (``fitted(1.0)``, the budget now
    reflecting it), else ``fitted(OVERFLOW_SHRINK)``. The outcomes in order (sum their calls; the last one
    stands); other errors, and the second's, propagate.
    ``label`` names the call in the log."""

    def share(exc: BaseException | str | None) -> float:
        part = 1.0 if exc is not None and learn is not None and learn(exc) else OVERFLOW_SHRINK
        logger.info("%s refused as too long for the context window; asking at %.0f%% (%s)", label, part * 100, exc)
        return part

    try:
        first = yield from fitted(1.0)
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        return [(yield from fitted(share(exc)))]
    return [first, (yield from fitted(share(error(first))))] if refused(first) else [first]


def overflow_budget(budget: int, refused_tokens: int, fixed: int = 0) -> int:
    """A budget below what the provider refused: ``fixed`` tokens (what cannot shrink) plus
    ``OVERFLOW_SHRINK`` of the rest, never above ``budget``."""
    return min(budget, int(fixed + max(refused_tokens - fixed, 0) * OVERFLOW_SHRINK))


def monotonic() -> float:
    return time.monotonic()  # the module's ``time`` at each call: tests set a fake one


class StepClock:
    """A subtask's time against ``step_timeout_s``: what its earlier turns spent in their own model and
    tool calls (``Task.elapsed_s``) plus this turn so far. Time between turns, such as downtime
    between a crash and a resume, is not counted."""

    def __init__(self, spent_s: float, limit_s: float | None):
        self.spent_s = spent_s
        self.limit_s = limit_s
        self.now = step_clock.get() or monotonic  # a host's clock where it sets one (`replangraph.hosting`)
        self.turn_started = self.now()

    @classmethod
    def until(cls, deadline: float | None) -> StepClock:
        """A clock whose time runs out at ``deadline`` (epoch seconds, what `deadline` gave on another machine or
        process), or never with None: a tool call's clock where it runs as an activity of its own."""
        return cls(0.0, None if deadline is None else deadline - time.time())

    def elapsed(self) -> float:
        """Seconds spent so far, this turn included."""
        return self.spent_s + (self.now() - self.turn_started)

    def left(self) -> float | None:
        """Seconds the subtask may still run, or None without a limit."""
        return None if self.limit_s is None else self.limit_s - self.elapsed()

    def deadline(self) -> float | None:
        """When the time runs out (epoch seconds, for retry waits), or None without a limit."""
        left = self.left()
        return None if left is None else time.time() + left


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


# --------------------------------------------------------------------------- the structured-output loop

RETRY_ERROR_CHARS = 2_000
"""Longest reason quoted in a retry message (the retry request must fit the window too)."""
RETRY_PROMPT = """\
Your previous answer could not be used: {error}
Previous answer: {previous}
Answer again through the tool you were given."""
"""The default retry message: ``{error}`` is why, ``{previous}`` the answer quoted."""
QUOTED_CHARS = 2_000
"""Longest previous answer quoted in a retry message."""


class Provisional(Exception):  # noqa: N818  # not an error: an answer to keep if no better one comes
    """Raised by a reader for an answer worth another ask: ``reason`` goes back to the model, and
    ``value`` is used when the asks run out (or the model fails) before a better answer comes."""

    def __init__(self, reason: str, value: Any):
        super().__init__(reason)
        self.value = value


@dataclass
class StructuredAnswer(Generic[T]):
    """The outcome of `structured_steps`."""

    value: T | None
    """What ``read`` made of the accepted answer, or None when none was usable."""
    calls: int
    """Model calls spent, transient retries included."""
    error: str = ""
    """Why no value came: the last reason an answer was unreadable, or the model failure."""
    overflow: bool = False
    """Whether the provider refused the request as longer than its context window."""
    unanswered: bool = False
    """Whether a transient error (down, timing out, rate limited) outlived the retries."""
    answer: Any = None
    """The last answer received (for quoting it), or None."""
    failure: BaseException | None = None
    """The exception that ended the asking, when the model call failed."""


class Structured:
    """A chat model answering with a schema through function calling, the raw reply included (see `bind_schema`);
    `call_model` asks a copy bounded to the run's output limit."""

    def __init__(self, model: Any, schema: type[BaseModel]):
        self.model = model
        self.schema = schema
        self.answering = schema_call(model, schema)
        self.runnable = (
            model.with_structured_output(schema, method="function_calling", include_raw=True)
            if self.answering is None
            else None
        )
        self.copies: dict[tuple[int | None, bool, float | None], Structured] = {}

    def invoke(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if self.answering is not None:
            return raw_answer(self.answering.invoke(request, *args, **kwargs))
        return self.runnable.invoke(request, *args, **kwargs)

    async def ainvoke(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if self.answering is not None:
            return raw_answer(await self.answering.ainvoke(request, *args, **kwargs))
        return await self.runnable.ainvoke(request, *args, **kwargs)

    def bounded(self, tokens: int | None, client_retries: bool = True, timeout_s: float | None = None) -> Structured:
        """This schema on the model as `bounded` makes it; itself when that changes nothing."""
        model = bounded(self.model, tokens, client_retries, timeout_s)
        if model is self.model:
            return self
        key = (tokens, client_retries, timeout_s)
        if key not in self.copies:
            self.copies[key] = Structured(model, self.schema)
        return self.copies[key]


def schema_call(model: Any, schema: type[BaseModel]) -> Any:
    """The model call of ``model.with_structured_output(schema, method="function_calling")``: the model bound
    to the schema as its one tool, as the provider's integration binds it (tool choice, strictness). None when
    the integration builds something else; `Structured` then uses LangChain's ``include_raw`` chain.

    Hand-written because ``include_raw=True`` wraps that call in a ``RunnableParallel``, whose ``invoke`` starts
    a thread pool per call (a new thread for every check, plan and verdict), and `tool_arguments` reads the
    raw reply leniently anyway: the parser's ``parsed`` value was never the one used."""
    chain = model.with_structured_output(schema, method="function_calling")
    first = chain.first if isinstance(chain, RunnableSequence) else None
    return first if isinstance(first, (BaseChatModel, RunnableBinding)) else None


def raw_answer(reply: Any) -> dict[str, Any]:
    """A reply in the shape of LangChain's ``include_raw`` answers (``raw``, ``parsed``, ``parsing_error``);
    the readers here read ``raw``."""
    return {"raw": reply, "parsed": None, "parsing_error": None}


def bind_schema(model: Any, schema: type[BaseModel]) -> Structured:
    """``model`` answering with ``schema`` through function calling, the raw reply included (bind once, reuse)."""
    return Structured(model, schema)


def raw_reply(answer: Any) -> Any:
    """The model's own message in a structured answer (``{"raw": ..., "parsed": ...}``) or the answer itself."""
    return answer.get("raw") if isinstance(answer, Mapping) else answer


def tool_arguments(answer: Any) -> Any:
    """The arguments of the reply's first tool call (malformed JSON arguments read leniently), else the
    validated ``parsed`` value; None when the model answered in text. `CutOff` when the output limit
    ended the reply (`cut_by_limit`) or the arguments' JSON never closes: a cut call is never read."""
    raw = raw_reply(answer)
    calls = getattr(raw, "tool_calls", None) or []
    invalid = getattr(raw, "invalid_tool_calls", None) or []
    if (calls or invalid) and cut_by_limit(raw):
        raise CutOff(CUT_OFF)
    if calls:
        return calls[0].get("args")
    if invalid and isinstance(invalid[0].get("args"), str) and invalid[0]["args"].strip():
        return load_json(invalid[0]["args"])
    parsed = answer.get("parsed") if isinstance(answer, Mapping) else None
    return parsed.model_dump() if isinstance(parsed, BaseModel) else None


def reply_text(answer: Any) -> str:
    """The reply's text (content blocks joined), reasoning (``<think>…</think>``, reasoning blocks) skipped."""
    raw = raw_reply(answer)
    return answer_text(raw) if isinstance(raw, BaseMessage) else ""


def called_arguments(answer: Any, tool: str) -> Any:
    """The arguments of the schema's call: the tool call's (`tool_arguments`), else those of a call of ``tool``
    written as text (`read_text_calls`: ``<tool_call>``, ``[TOOL_CALLS]``...); None when the answer holds
    neither. `CutOff` when the call was cut off."""
    args = tool_arguments(answer)
    if args is not None:
        return args
    written = read_text_calls(reply_text(answer), [tool])
    if written.cut and not written.calls:
        raise CutOff(CUT_OFF)
    return written.calls[0]["args"] if written.calls else None


def read_arguments(answer: Any, tool: str) -> Any:
    """The schema's arguments: the call's (`called_arguments`: a tool call, or one written as text), else JSON
    in the reply's text (fenced or in prose, after any reasoning). UnreadableInput when there is neither;
    `CutOff` when the answer was cut off (the output limit ended it, or its JSON never closes)."""
    if cut_by_limit(raw_reply(answer)) and reply_text(answer):
        raise CutOff(CUT_OFF)
    args = called_arguments(answer, tool)
    if args is not None:
        return args
    text = reply_text(answer)
    if not text:
        raise UnreadableInput(f"the answer is empty: call the {tool} tool")
    return load_json(text)
