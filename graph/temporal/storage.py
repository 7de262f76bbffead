"""Large payloads by reference: what crosses Temporal past a size is kept in a store every process of the run reaches,
and the server's history holds a reference to it.

Temporal refuses a payload past 2 MB and ends a run whose history passes 50 MB. A run's big values (the state a node
reads, a tool's output, the final answer, the run's continuation) cross as payloads, so replangraph hands each
payload of `PAYLOAD_THRESHOLD` bytes or more to Temporal's own external storage (``DataConverter.external_storage``,
experimental in the SDK), with a driver of its own: `SharedFolder`, files named by their content's SHA-256 in a folder
every worker and client reads (one machine's disk, or NFS), or `PostgresPayloads`, a table in PostgreSQL. A payload
is kept as content-defined chunks and a manifest (`ChunkedStorage`): the state a node reads differs from the one
the node before it read by a few tasks, so the store grows with what changed, not with what crossed. It runs after
the payload codec (`replangraph.temporal.converter.converter`): an encrypting codec encrypts what the store keeps.

Every worker and every client of a run must reach the same store: the client reads big answers and events from it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tempfile
import threading
import zlib
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

PAYLOAD_THRESHOLD = 4 * 1024
"""Payloads of this many bytes or more go to the store (Temporal's default is 256 KiB: replangraph's runs send the
same large state to many activities, so a smaller threshold keeps the history's bytes per subtask flat)."""
DEFAULT_FOLDER = Path.home() / ".cache" / "replangraph" / "temporal-payloads"
"""Where `payload_storage` keeps payloads when told nowhere and ``$REPLANGRAPH_PAYLOADS`` is not set."""
PAYLOADS_ENV = "REPLANGRAPH_PAYLOADS"
"""The environment variable naming the payload store (a folder or a ``postgresql://`` URL) when none is given."""

CHUNK_MIN, CHUNK_MAX = 256, 64 * 1024
"""A chunk is cut at a boundary (`BOUNDARY`) once it holds at least `CHUNK_MIN` bytes and the bytes before the
boundary say so (`cuts_here`), and at `CHUNK_MAX` bytes whatever they say."""
BOUNDARY = re.compile(rb'[}\]"],"')
"""Where a chunk may end: after a JSON value, before the next key or item (the converter writes compact JSON with
sorted keys, so the same task or message is cut in the same places wherever it stands)."""
ONE_IN = 32
"""One boundary in this many ends a chunk (chunks of about 2 KB): few enough, against `CHUNK_MIN`, that the cuts
after a change fall back into step with the cuts before it within a chunk or two."""
MANIFEST = b"replangraph-chunks-1\n"
"""The first bytes of a manifest: the payload's chunks, as the SHA-256 digests of their bytes in order."""
CACHE_BYTES = 256 * 1024 * 1024
"""Chunks a process keeps in memory, most recently used first: a worker reads the state's unchanged chunks once."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cuts_here(data: bytes, end: int) -> bool:
    """Whether a chunk ends at ``end``: one boundary in `ONE_IN`, chosen by the 32 bytes before it, so that the same
    text is cut in the same places wherever it stands in a payload."""
    return zlib.crc32(data[max(0, end - 32) : end]) % ONE_IN == 0


def chunks(data: bytes) -> list[bytes]:
    """``data`` cut where its content says (content-defined chunking): a payload that differs from an earlier one by
    a few tasks shares every other chunk with it, so it is stored as those few chunks and a manifest."""
    parts, start = [], 0
    for found in BOUNDARY.finditer(data):
        end = found.start() + 2  # after '},', '],' or '",'
        while end - start > CHUNK_MAX:
            parts.append(data[start : start + CHUNK_MAX])
            start += CHUNK_MAX
        if end - start >= CHUNK_MIN and cuts_here(data, end):
            parts.append(data[start:end])
            start = end
    while len(data) - start > CHUNK_MAX:
        parts.append(data[start : start + CHUNK_MAX])
        start += CHUNK_MAX
    if start < len(data):
        parts.append(data[start:])
    return parts


class ChunkCache:
    """Chunks by digest, at most ``limit`` bytes of them, the least recently used dropped first."""

    def __init__(self, limit: int = CACHE_BYTES) -> None:
        self.limit, self.size = limit, 0
        self.items: OrderedDict[str, bytes] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, sha: str) -> bytes | None:
        with self.lock:
            found = self.items.get(sha)
            if found is not None:
                self.items.move_to_end(sha)
            return found

    def put(self, sha: str, data: bytes) -> None:
        with self.lock:
            if sha in self.items:
                return
            self.items[sha] = data
            self.size += len(data)
            while self.size > self.limit and self.items:
                self.size -= len(self.items.popitem(last=False)[1])


class ChunkedStorage(StorageDriver):
    """A payload stored as content-defined chunks (`chunks`) and a manifest naming them, each kept once under the
    SHA-256 of its bytes: the claim is the manifest's digest. Written chunks and read ones are remembered
    (`ChunkCache`), so a process neither writes nor reads a chunk twice. Subclasses keep blobs by digest."""

    def __init__(self) -> None:
        self.cache = ChunkCache()

    def put_blobs(self, blobs: Mapping[str, bytes]) -> None:
        """Keep each blob under its digest (one kept already stays as it is)."""
        raise NotImplementedError

    def get_blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        """The blobs with these digests; `MissingPayload` for one that is not kept."""
        raise NotImplementedError

    def save(self, payload: Payload) -> StorageDriverClaim:
        parts = chunks(payload.SerializeToString())
        digests = [digest(part) for part in parts]
        manifest = MANIFEST + b"".join(bytes.fromhex(d) for d in digests)
        name = digest(manifest)
        new = {d: part for d, part in zip(digests, parts, strict=True) if self.cache.get(d) is None}
        self.put_blobs({**new, name: manifest})
        for d, part in new.items():
            self.cache.put(d, part)
        return StorageDriverClaim({"sha256": name})

    def load(self, claim: StorageDriverClaim) -> Payload:
        name = claim.claim_data["sha256"]
        manifest = self.get_blobs([name])[name]
        if not manifest.startswith(MANIFEST):
            raise MissingPayload(f"payload {name} is not a replangraph manifest")
        body = manifest[len(MANIFEST) :]
        digests = [body[i : i + 32].hex() for i in range(0, len(body), 32)]
        known = {d: part for d in digests if (part := self.cache.get(d)) is not None}
        missing = [d for d in dict.fromkeys(digests) if d not in known]
        if missing:
            for d, part in self.get_blobs(missing).items():
                self.cache.put(d, part)
                known[d] = part
        return Payload.FromString(b"".join(known[d] for d in digests))

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        return await asyncio.to_thread(lambda: [self.save(p) for p in payloads])

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return await asyncio.to_thread(lambda: [self.load(c) for c in claims])


class MissingPayload(FileNotFoundError):
    """A payload the store does not have: a worker or client of the run uses another payload store."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}: every worker and client of a run must use the same payload store (--payloads)")


class SharedFolder(ChunkedStorage):
    """Blobs as files named by their SHA-256 under ``root`` (``ab/abcdef...``): a folder on one machine, or one all
    machines mount. A file is written once, atomically (a reader never sees half of one)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__()
        self.root = Path(root).expanduser()

    def name(self) -> str:
        return "replangraph-folder"

    def path(self, sha: str) -> Path:
        return self.root / sha[:2] / sha

    def put_blobs(self, blobs: Mapping[str, bytes]) -> None:
        for sha, data in blobs.items():
            target = self.path(sha)
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".part-", delete=False) as part:
                part.write(data)
            os.replace(part.name, target)

    def get_blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        found = {}
        for sha in shas:
            try:
                found[sha] = self.path(sha).read_bytes()
            except FileNotFoundError:
                raise MissingPayload(f"payload part {sha} is not in {self.root}") from None
        return found


class PostgresPayloads(ChunkedStorage):
    """Blobs as rows of ``replangraph_payloads (sha256 text primary key, data bytea)`` in the PostgreSQL database at
    ``url`` (the table is created when missing): the store for workers on several machines. Needs ``psycopg``
    (the ``postgres`` extra)."""

    TABLE = "replangraph_payloads"

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self._ready = False

    def name(self) -> str:
        return "replangraph-postgres"

    def _connect(self) -> Any:
        import psycopg

        connection = psycopg.connect(self.url, autocommit=True)
        if not self._ready:
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {self.TABLE} (sha256 text PRIMARY KEY, data bytea NOT NULL)"
            )
            self._ready = True
        return connection

    def put_blobs(self, blobs: Mapping[str, bytes]) -> None:
        with self._connect() as connection, connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {self.TABLE} (sha256, data) VALUES (%s, %s) ON CONFLICT (sha256) DO NOTHING",
                list(blobs.items()),
            )

    def get_blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        with self._connect() as connection:
            rows = connection.execute(f"SELECT sha256, data FROM {self.TABLE} WHERE sha256 = ANY(%s)", [list(shas)])
            found = {sha: bytes(data) for sha, data in rows.fetchall()}
        missing = [sha for sha in shas if sha not in found]
        if missing:
            raise MissingPayload(f"payload part {missing[0]} is not in the PostgreSQL payload store")
        return found


def driver_for(where: str | os.PathLike[str] | None) -> ChunkedStorage:
    """The driver for ``where``: a ``postgresql://`` URL, a folder, or None (``$REPLANGRAPH_PAYLOADS``, else
    `DEFAULT_FOLDER`)."""
    where = where or os.environ.get(PAYLOADS_ENV) or DEFAULT_FOLDER
    if isinstance(where, str) and where.startswith(("postgresql://", "postgres://")):
        return PostgresPayloads(where)
    return SharedFolder(where)


def payload_storage(where: str | os.PathLike[str] | None = None, threshold: int = PAYLOAD_THRESHOLD) -> ExternalStorage:
    """Temporal's external storage keeping payloads of ``threshold`` bytes or more at ``where`` (`driver_for`)."""
    return ExternalStorage(drivers=[driver_for(where)], payload_size_threshold=threshold)


def described(storage: ExternalStorage | None) -> str:
    """Where ``storage`` keeps payloads, in words."""
    if storage is None:
        return "nowhere (every payload in the history)"
    driver = storage.drivers[0]
    return str(getattr(driver, "root", None) or "PostgreSQL")


__all__ = [
    "DEFAULT_FOLDER",
    "PAYLOAD_THRESHOLD",
    "ChunkedStorage",
    "MissingPayload",
    "PostgresPayloads",
    "SharedFolder",
    "driver_for",
    "payload_storage",
]
