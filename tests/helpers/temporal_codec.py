"""A payload codec of our own for the Temporal tests: each payload's bytes reversed under an encoding of its own (an
encryption would stand here). ``--codec temporal_codec:Reverse``."""

from __future__ import annotations

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

ENCODING = b"binary/reversed"


class Reverse(PayloadCodec):
    async def encode(self, payloads):
        return [Payload(metadata={"encoding": ENCODING}, data=p.SerializeToString()[::-1]) for p in payloads]

    async def decode(self, payloads):
        return [Payload.FromString(p.data[::-1]) if p.metadata.get("encoding") == ENCODING else p for p in payloads]
