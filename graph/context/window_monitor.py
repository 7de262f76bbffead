"""The context monitor (`ContextMonitor`): a request's tokens counted against the model's window (LangChain's
approximate count, calibrated by the usage the provider reports), the threshold at which a window is compressed,
and what each model's endpoint told about itself (`LearnedByModel`: its window, from an overflow error). No
LangGraph here."""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AnyMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool
from langchain_core.utils.pydantic import model_json_schema

from replangraph.config import AgentConfig
from replangraph.llm.bounds import endpoint_url
from replangraph.llm.errors import overflow_sizes
from replangraph.run_config import Configured

logger = logging.getLogger(__name__)

TokenCounter = Callable[[Sequence[AnyMessage], Sequence[Any]], int]


DEFAULT_CONTEXT_WINDOW = 200_000


def approximate_tokens(messages: Sequence[AnyMessage], tools: Sequence[BaseTool | dict] = ()) -> int:
    """Offline token estimate of a request: messages plus tool schemas (LangChain's
    ``count_tokens_approximately``, the same count, with each tool's schema measured once: `schema_chars`)."""
    tools = list(tools)
    if not tools:
        return count_tokens_approximately(messages)
    chars = [schema_chars(tool) for tool in tools]
    if None in chars:  # a kind of tool only LangChain measures
        return count_tokens_approximately(messages, tools=tools)
    return count_tokens_approximately(messages) + math.ceil(sum(chars) / CHARS_PER_TOKEN)  # type: ignore[arg-type]


CHARS_PER_TOKEN = 4.0
"""``count_tokens_approximately``'s default."""


_schema_chars: dict[int, tuple[Any, str, str | None, int]] = {}
"""By ``id`` of a tool's ``tool_call_schema`` class: that class (held, so the id stays its own), the tool's
name and description, and the length of the JSON LangChain counts for it."""
SCHEMA_CACHE_SIZE = 1_024


def schema_chars(tool: Any) -> int | None:
    """Characters ``count_tokens_approximately`` counts for one tool: the JSON of its name, description and
    parameters. A `BaseTool` is measured once per schema class (LangChain keeps that class until the tool's
    name, description or arguments change); a dict each time; None for anything else."""
    if isinstance(tool, dict):
        return len(json.dumps(tool))
    if not isinstance(tool, BaseTool):
        return None
    schema = tool.tool_call_schema
    if isinstance(schema, dict):  # built anew on each read
        return len(json.dumps(tool_schema_dict(tool, schema)))
    known = _schema_chars.get(id(schema))
    if known is not None and known[0] is schema and known[1] == tool.name and known[2] == tool.description:
        return known[3]
    chars = len(json.dumps(tool_schema_dict(tool, schema)))
    if len(_schema_chars) >= SCHEMA_CACHE_SIZE:
        _schema_chars.clear()
    _schema_chars[id(schema)] = (schema, tool.name, tool.description, chars)
    return chars


def tool_schema_dict(tool: BaseTool, schema: Any) -> dict[str, Any]:
    """The dict ``count_tokens_approximately`` measures for ``tool``: name, description, parameters (the
    schema's own title and description left out, as they repeat the tool's)."""
    parameters = dict(schema) if isinstance(schema, dict) else dict(model_json_schema(schema))
    parameters.pop("title", None)
    parameters.pop("description", None)
    return {"name": tool.name, "description": tool.description, "parameters": parameters}


CALIBRATION_TOLERANCE = 0.1
"""An approximate count within this share of the endpoint's own is left as it is."""


CALIBRATION_RANGE = (0.25, 4.0)


CALIBRATION_WEIGHT = 0.25
"""How far each new count moves the ratio toward its own (the first sets it): parallel replies that differ
a little (a different mix of code and prose) nudge it instead of throwing it away."""


@dataclass
class Learned:
    """What one model's endpoint told about itself. Updated under its lock, as parallel branches report."""

    window: int | None = None
    """The context window a provider's overflow error named (smaller than the configured one)."""
    ratio: float | None = None
    """The running ratio of the endpoint's token count over the approximate count of the same request."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def narrow(self, window: int) -> None:
        """Remember ``window`` unless a smaller one is already known."""
        with self.lock:
            self.window = min(self.window or window, window)

    def count(self, ratio: float) -> None:
        """Move the running ratio `CALIBRATION_WEIGHT` of the way toward ``ratio`` (kept in `CALIBRATION_RANGE`)."""
        low, high = CALIBRATION_RANGE
        ratio = min(max(ratio, low), high)
        with self.lock:
            self.ratio = ratio if self.ratio is None else self.ratio + (ratio - self.ratio) * CALIBRATION_WEIGHT

    @property
    def scale(self) -> float | None:
        """The ratio to scale approximate counts by; None while it is within `CALIBRATION_TOLERANCE` of 1."""
        ratio = self.ratio
        return None if ratio is None or abs(ratio - 1) <= CALIBRATION_TOLERANCE else ratio


def model_context_window(model: Any) -> int | None:
    """``max_input_tokens`` from a chat model's profile, if it has one."""
    profile = getattr(model, "profile", None) or {}
    value = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    return int(value) if value else None


def model_key(model: Any) -> tuple:
    """Which model an entry of `LearnedByModel` describes: its class, base URL and model name when it has a
    name, else the object itself (``id``)."""
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    if not isinstance(name, str) or not name:
        return ("object", id(model))
    url = endpoint_url(model) or str(getattr(model, "base_url", None) or "")
    return (type(model).__name__, url, name)


class LearnedByModel:
    """One `Learned` per model (`model_key`), for every monitor of a compiled graph.

    An entry describes a model's server, not anyone's data, so the graph's threads and runs share it: an
    overflow in one run narrows that model's window for the next. A model never sees another's entry."""

    def __init__(self) -> None:
        self.entries: dict[tuple, Learned] = {}
        self.lock = threading.Lock()

    def of(self, model: Any) -> Learned:
        """``model``'s entry, made on first use."""
        with self.lock:
            return self.entries.setdefault(model_key(model), Learned())


class ContextMonitor(Configured):
    """Counts request tokens against the effective window (context window minus reserved output).

    Every phase (planner, executor, compressor, summarizer, verifier, replanner,
    finalizer) measures its requests with the same counter; `for_model` gives a
    monitor for another model. The figures follow the run's settings, and what the
    model's endpoint said (`learn_overflow`, `observe`), kept per model in ``memory``:
    the window its overflow error named, and how its own token counts compare with
    the approximate counter's.
    """

    def __init__(
        self,
        config: AgentConfig,
        model: Any = None,
        counter: TokenCounter | None = None,
        memory: LearnedByModel | None = None,
    ):
        self.base_config = config
        self.model = model
        self.model_window = model_context_window(model)
        self.counter = counter or approximate_tokens
        self.memory = memory or LearnedByModel()
        self.learned = self.memory.of(model)

    @property
    def context_window(self) -> int:
        """Input tokens the model accepts: ``context_window``, else the model's profile, else 200,000; the
        window the model's overflow error named when that is smaller."""
        window = self.config.context_window or self.model_window or DEFAULT_CONTEXT_WINDOW
        learned = self.learned.window
        return min(window, learned) if learned else window

    def learn_overflow(self, exc: BaseException | str, estimated: int | None = None) -> bool:
        """Take what a provider's overflow error names: its window (remembered for this model for the rest of
        the graph's life), and the refused prompt's size by its count, against ``estimated`` (our count of
        it). Whether the window was learned."""
        window, refused = overflow_sizes(exc)
        if refused and estimated:
            self.calibrate(estimated, refused)
        if window and window < self.context_window:
            logger.info(
                "the provider's error names a context window of %d tokens (was %d)", window, self.context_window
            )
            self.learned.narrow(window)
            return True
        return False

    def calibrate(self, estimated: int, actual: int) -> None:
        """Count ``actual / estimated`` (the endpoint's count of a request over ours) into the model's running
        ratio (`Learned.count`); nothing for a counter of the user's."""
        if self.counter is not approximate_tokens or estimated <= 0 or actual <= 0:
            return
        self.learned.count(actual / estimated)

    def observe(self, messages: Sequence[AnyMessage], tools: Sequence[Any], reply: Any) -> None:
        """Calibrate from a reply's ``usage_metadata`` (``input_tokens``) to the request ``messages`` + ``tools``."""
        usage = getattr(reply, "usage_metadata", None) or {}
        if usage.get("input_tokens") and isinstance(messages, Sequence) and not isinstance(messages, str):
            self.calibrate(approximate_tokens(list(messages), tools), usage["input_tokens"])

    def approximate(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> int:
        """The approximate count, scaled by the calibration."""
        count = approximate_tokens(messages, tools)
        scale = self.learned.scale
        return round(count * scale) if scale else count

    @property
    def reserved_output(self) -> int:
        """Tokens kept for the answer; a small window keeps at least three quarters for the request."""
        return min(self.config.reserved_output, self.context_window // 4)

    @property
    def effective_window(self) -> int:
        return max(self.context_window - self.reserved_output, 1)

    @property
    def threshold(self) -> float:
        return self.config.compress_threshold

    def for_model(self, model: Any) -> ContextMonitor:
        """A monitor with this one's counter and memory for ``model``: its profile's window (``context_window``
        still wins) and what its endpoint said."""
        if model is None or model is self.model:
            return self
        return ContextMonitor(self.base_config, model, self.counter, self.memory)

    def tokens(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> int:
        """Tokens the request would use.

        With the default counter, the latest model reply's ``usage_metadata`` is
        preferred: its input and output tokens plus an estimate of what came after;
        estimates are scaled by the calibration (`calibrate`).
        """
        if self.counter is approximate_tokens:
            for index in range(len(messages) - 1, -1, -1):
                usage = getattr(messages[index], "usage_metadata", None)
                if usage and usage.get("input_tokens"):
                    later = self.approximate(messages[index + 1 :]) if index + 1 < len(messages) else 0
                    return usage["input_tokens"] + usage.get("output_tokens", 0) + later
            return self.approximate(messages, tools)
        return self.counter(messages, tools)

    def usage(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> float:
        """Tokens over the effective window."""
        return self.tokens(messages, tools) / self.effective_window

    def over_threshold(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = ()) -> bool:
        """Whether the request would pass ``compress_threshold``."""
        return bool(messages) and self.usage(messages, tools) > self.threshold

    def fits(self, messages: Sequence[AnyMessage], tools: Sequence[Any] = (), budget: int | None = None) -> bool:
        """Whether the request stays within ``budget`` (default: the compression threshold)."""
        return self.tokens(messages, tools) <= (self.budget if budget is None else budget)

    @property
    def budget(self) -> int:
        """Most tokens a request may use before compression."""
        return int(self.effective_window * self.threshold)
