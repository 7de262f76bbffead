"""The data converter: LangChain objects and replangraph's own cross Temporal's boundaries as themselves.

Temporal's default JSON converter writes a LangChain message with pydantic's ``.dict()`` and gives it back as a
plain dict (an activity's arguments are ``Any``: no type hint revives them), so the next node reads
``AttributeError: 'dict' object has no attribute 'id'``. `data_converter` writes LangChain objects with
``dumpd`` and revives them with ``load`` wherever they are in a payload; an `AgentConfig` (a run's context)
crosses as the fields it sets, so that on the other side it still overrides only those; a tool call's `CallJob`
(a tool, a chain of wrappers, a clock) crosses as its `CallSpec`, plain data the worker rebuilds the job from
(`replangraph.temporal.registry`). The client and every
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
    ExternalStorage,
    JSONPlainPayloadConverter,
    PayloadCodec,
    value_to_type,
)

from replangraph.config import AgentConfig
from replangraph.node_calls import NodeCall
from replangraph.nodes.execution.calls import CallJob, CallSpec

AGENT_CONFIG = "__replangraph_agent_config__"
"""The key an `AgentConfig` crosses under: ``{AGENT_CONFIG: {the fields it sets}}``."""
CALL_SPEC = "__replangraph_call_spec__"
"""The key a `CallJob` crosses under, as its `CallSpec` (the worker rebuilds the job from its own graph)."""
NODE_CALL = "__replangraph_node_call__"
"""The key a `NodeCall` crosses under, without the object it calls (the worker finds that in its own graph)."""


class LangChainEncoder(AdvancedJSONEncoder):
    """LangChain objects as LangChain writes them (``dumpd``); an `AgentConfig` as the fields it sets; other
    pydantic models as JSON; dataclasses field by field."""

    def default(self, o: Any) -> Any:
        if isinstance(o, Serializable) and o.is_lc_serializable():
            return dumpd(o)
        if isinstance(o, AgentConfig):
            return {AGENT_CONFIG: o.model_dump(mode="json", exclude_unset=True)}
        if isinstance(o, CallJob | CallSpec):
            spec = o.spec() if isinstance(o, CallJob) else o  # shallow: the view's messages come back here
            return {CALL_SPEC: {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}}
        if isinstance(o, NodeCall):
            return {NODE_CALL: {"node": o.node, "method": o.method, "args": list(o.args)}}
        if dataclasses.is_dataclass(o) and not isinstance(o, type):  # shallow: each field comes back here
            return {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
        if hasattr(o, "model_dump") and not isinstance(o, type):
            return o.model_dump(mode="json")
        return super().default(o)


class LooseEncoder(LangChainEncoder):
    """`LangChainEncoder`, writing what it cannot as its ``str`` (as ``--json`` does) instead of failing."""

    def default(self, o: Any) -> Any:
        try:
            return super().default(o)
        except TypeError:
            return str(o)


def plain(value: Any) -> Any:
    """``value`` as JSON's own types, as `LangChainEncoder` writes it (LangChain objects as ``dumpd`` writes them,
    which the converter revives on the other side); what it cannot write, as its ``str``. For what is published
    to a run's stream, where a value nobody checked must not fail the activity or the workflow that publishes it."""
    try:
        return json.loads(json.dumps(value, cls=LooseEncoder, separators=(",", ":")))
    except (TypeError, ValueError):  # a key JSON cannot hold (a tuple), a circular reference
        return str(value)


class LangChainJSONConverter(JSONPlainPayloadConverter):
    """JSON that revives LangChain messages, `AgentConfig` and `CallSpec` (what a `CallJob` crosses as) wherever
    they are in a payload."""

    def __init__(self) -> None:
        super().__init__(encoder=LangChainEncoder)

    def to_payload(self, value: Any) -> Payload | None:
        # As the base class, without its warning for a pydantic model at the top ("use pydantic_data_converter"):
        # the encoder writes pydantic models itself.
        data = json.dumps(value, cls=LangChainEncoder, separators=(",", ":"), sort_keys=True).encode()
        return Payload(metadata={"encoding": self.encoding.encode()}, data=data)

    def from_payload(self, payload: Any, type_hint: Any = None) -> Any:
        obj = revive(json.loads(payload.data), payload.data)
        if type_hint:
            obj = value_to_type(type_hint, obj, [])
        return obj


LC_KEY = b'"lc"'
OURS = b'"__replangraph_'
"""What every JSON text holding a LangChain object, or one of ours, contains: a payload without them is not walked."""


def revive(obj: Any, text: bytes) -> Any:
    """What `LangChainEncoder` wrote, as the objects it was written from (JSON's own types stay as they are).
    ``text``: the JSON ``obj`` was read from; one that names neither a LangChain object nor one of ours comes back
    as it is, unwalked. ``obj`` is changed in place: each object is revived where it stands, by one walk that
    copies nothing else (a continuation's state is megabytes, read in one workflow task)."""
    lc, ours = LC_KEY in text, OURS in text
    if not (lc or ours):
        return obj
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainBetaWarning)  # load() is "in beta"
        return _revived(obj, lc, ours)


def _revived(obj: Any, lc: bool, ours: bool) -> Any:
    if isinstance(obj, dict):
        if lc and obj.get("lc") == 1 and "type" in obj:
            return load(obj, allowed_objects="messages")  # a LangChain object, whatever it holds
        if ours and len(obj) == 1:
            if AGENT_CONFIG in obj:
                return AgentConfig(**obj[AGENT_CONFIG])
            if CALL_SPEC in obj:
                return CallSpec(**_revived(obj[CALL_SPEC], lc, ours))
            if NODE_CALL in obj:
                found = obj[NODE_CALL]
                return NodeCall(found["node"], found["method"], tuple(_revived(found["args"], lc, ours)))
        for key, value in obj.items():
            if isinstance(value, dict | list):
                obj[key] = _revived(value, lc, ours)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            if isinstance(value, dict | list):
                obj[i] = _revived(value, lc, ours)
    return obj


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
"""replangraph's objects as themselves, every payload in the history (`converter` adds a payload store and a codec)."""


def converter(storage: ExternalStorage | None = None, codec: PayloadCodec | None = None) -> DataConverter:
    """`data_converter` with Temporal's external ``storage`` (`replangraph.temporal.storage.payload_storage`: large
    payloads by reference) and a payload ``codec`` (encryption, compression: it runs before the storage, so the
    store keeps what the codec wrote). The client and every worker of a run need the same."""
    return dataclasses.replace(data_converter, external_storage=storage, payload_codec=codec)
