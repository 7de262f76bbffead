"""The data converter: LangChain objects and replangraph's own cross Temporal's boundaries as themselves.

Temporal's default JSON converter writes a LangChain message with pydantic's ``.dict()`` and gives it back as a
plain dict (an activity's arguments are ``Any``: no type hint revives them), so the next node reads
``AttributeError: 'dict' object has no attribute 'id'``. `data_converter` writes LangChain objects with
``dumpd`` and revives them with ``load`` wherever they are in a payload; an `AgentConfig` (a run's context)
crosses as the fields it sets, so that on the other side it still overrides only those. The client and every
worker must use it (``Client.connect(data_converter=data_converter)``).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from typing import Any

from langchain_core._api import LangChainBetaWarning
from langchain_core.load import dumpd, load
from langchain_core.load.serializable import Serializable
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    AdvancedJSONEncoder,
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    JSONPlainPayloadConverter,
    value_to_type,
)

from replangraph.config import AgentConfig

AGENT_CONFIG = "__replangraph_agent_config__"
"""The key an `AgentConfig` crosses under: ``{AGENT_CONFIG: {the fields it sets}}``."""
SAME_PROCESS_JOB = "__replangraph_same_process_call_job__"
"""The key a `CallJob` crosses under (`_HeldJobs`: a stand-in that works in one process only)."""


class LangChainEncoder(AdvancedJSONEncoder):
    """LangChain objects as LangChain writes them (``dumpd``); an `AgentConfig` as the fields it sets; other
    pydantic models as JSON; dataclasses field by field."""

    def default(self, o: Any) -> Any:
        if isinstance(o, Serializable) and o.is_lc_serializable():
            return dumpd(o)
        if isinstance(o, AgentConfig):
            return {AGENT_CONFIG: o.model_dump(mode="json", exclude_unset=True)}
        if _is_call_job(o):
            return {SAME_PROCESS_JOB: _held_jobs.hold(o)}
        if dataclasses.is_dataclass(o) and not isinstance(o, type):  # shallow: each field comes back here
            return {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
        if hasattr(o, "model_dump") and not isinstance(o, type):
            return o.model_dump(mode="json")
        return super().default(o)


class LangChainJSONConverter(JSONPlainPayloadConverter):
    """JSON that revives LangChain messages, `AgentConfig` and (one process only) `CallJob` wherever they are in
    a payload."""

    def __init__(self) -> None:
        super().__init__(encoder=LangChainEncoder)

    def to_payload(self, value: Any) -> Payload | None:
        # As the base class, without its warning for a pydantic model at the top ("use pydantic_data_converter"):
        # the encoder writes pydantic models itself.
        data = json.dumps(value, cls=LangChainEncoder, separators=(",", ":"), sort_keys=True).encode()
        return Payload(metadata={"encoding": self.encoding.encode()}, data=data)

    def from_payload(self, payload: Any, type_hint: Any = None) -> Any:
        obj = revive(json.loads(payload.data))
        if type_hint:
            obj = value_to_type(type_hint, obj, [])
        return obj


def revive(obj: Any) -> Any:
    """What `LangChainEncoder` wrote, as the objects it was written from (JSON's own types stay as they are)."""
    if _has_key(obj, SAME_PROCESS_JOB):
        obj = _held_jobs.revive(obj)
    if _has_lc(obj):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LangChainBetaWarning)  # load() is "in beta"
            obj = load(obj, allowed_objects="messages")
    if _has_key(obj, AGENT_CONFIG):
        obj = _revive_configs(obj)
    return obj


def _revive_configs(obj: Any) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {AGENT_CONFIG}:
            return AgentConfig(**obj[AGENT_CONFIG])
        return {k: _revive_configs(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_revive_configs(v) for v in obj]
    return obj


def _has_key(obj: Any, key: str) -> bool:
    if isinstance(obj, dict):
        return key in obj or any(_has_key(v, key) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_key(v, key) for v in obj)
    return False


def _has_lc(obj: Any) -> bool:
    if isinstance(obj, dict):
        return obj.get("lc") == 1 or any(_has_lc(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_lc(v) for v in obj)
    return False


def _is_call_job(o: Any) -> bool:
    from replangraph.nodes.execution.calls import CallJob

    return isinstance(o, CallJob)


class _HeldJobs:
    """A STAND-IN, one process only (NOTES-34 step 2 replaces it): a `CallJob` (a tool, a chain of closures, a
    clock) cannot cross to another worker; here it crosses as a key to the object this process holds. The design
    sends what the activity needs to rebuild the chain from the worker's own registry (agent type, tool name,
    call, view)."""

    def __init__(self) -> None:
        self.jobs: dict[str, Any] = {}

    def hold(self, job: Any) -> str:
        key = f"{id(job)}"
        self.jobs[key] = job
        return key

    def revive(self, obj: Any) -> Any:
        if isinstance(obj, dict):
            if set(obj) == {SAME_PROCESS_JOB}:
                return self.jobs[obj[SAME_PROCESS_JOB]]
            return {k: self.revive(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.revive(v) for v in obj]
        return obj


_held_jobs = _HeldJobs()


class LangChainPayloadConverter(CompositePayloadConverter):
    """Temporal's default payload converters, with `LangChainJSONConverter` for JSON."""

    def __init__(self) -> None:
        super().__init__(
            *(
                LangChainJSONConverter() if isinstance(c, JSONPlainPayloadConverter) else c
                for c in DefaultPayloadConverter.default_encoding_payload_converters
            )
        )


data_converter = dataclasses.replace(DataConverter.default, payload_converter_class=LangChainPayloadConverter)
"""Give it to ``Client.connect(data_converter=...)`` on the client and on every worker."""
