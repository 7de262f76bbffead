"""The payload store, without a server: a payload crosses Temporal's external storage as a reference and comes back
the same; a state that differs from an earlier one by a few tasks adds those few chunks, not a copy; a process
that lacks the run's store says which store to use; a codec runs before the store (it keeps what the codec wrote).
Skipped without the temporal extra."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("temporalio.langgraph", reason='needs the temporal extra: pip install "replangraph[temporal]"')

from temporalio.api.common.v1 import Payload  # noqa: E402
from temporalio.converter import PayloadCodec  # noqa: E402

from replangraph.queue.tasks import new_task  # noqa: E402
from replangraph.temporal.converter import converter  # noqa: E402
from replangraph.temporal.storage import (  # noqa: E402
    MissingPayload,
    SharedFolder,
    chunks,
    driver_for,
    payload_storage,
)


def state_of(n: int, changed: int | None = None) -> dict:
    """A state with ``n`` completed subtasks (task ``changed`` with a different result)."""
    tasks = {}
    for i in range(n):
        task = new_task(f"t{i}", f"Read products {5 * i + 1} to {5 * i + 5} of the catalog.", position=[i])
        task.update(status="completed", result=f"products {5 * i + 1}-{5 * i + 5}: " + "x" * 300)
        if i == changed:
            task["result"] = "a different result"
        tasks[task["id"]] = task
    return {"goal": "Rank the catalog.", "tasks": tasks}


def stored_bytes(folder) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_chunks_join_to_the_payload_and_a_changed_task_changes_few_of_them():
    data = json.dumps(state_of(400), sort_keys=True, separators=(",", ":")).encode()
    parts = chunks(data)
    assert b"".join(parts) == data
    assert len(parts) > 20 and max(map(len, parts)) <= 64 * 1024
    changed = chunks(json.dumps(state_of(400, changed=200), sort_keys=True, separators=(",", ":")).encode())
    grown = chunks(json.dumps(state_of(401), sort_keys=True, separators=(",", ":")).encode())
    assert len(set(changed) - set(parts)) <= 2
    assert len(set(grown) - set(parts)) <= 3


def test_text_without_json_boundaries_is_cut_at_the_largest_chunk():
    data = b"y" * (200 * 1024 + 7)
    parts = chunks(data)
    assert b"".join(parts) == data and max(map(len, parts)) == 64 * 1024


def test_a_payload_comes_back_from_the_folder_and_a_grown_state_adds_only_its_new_chunks(tmp_path):
    async def go():
        data = converter(payload_storage(tmp_path, threshold=1024))
        first = await data.encode([state_of(400)])
        assert first[0].ByteSize() < 1024  # the history holds a reference
        after_first = stored_bytes(tmp_path)
        second = await data.encode([state_of(401)])
        grown_by = stored_bytes(tmp_path) - after_first
        # a fresh process (no chunk cache) reads both back whole
        fresh = converter(payload_storage(tmp_path, threshold=1024))
        assert await fresh.decode(first) == [state_of(400)]
        assert await fresh.decode(second) == [state_of(401)]
        return after_first, grown_by

    after_first, grown_by = asyncio.run(go())
    assert after_first > 400 * 300  # the whole state once
    assert grown_by < after_first / 10  # then the new task's chunks and a manifest, not a copy


def test_a_small_payload_stays_in_the_history(tmp_path):
    async def go():
        data = converter(payload_storage(tmp_path))
        encoded = await data.encode([{"goal": "small"}])
        return encoded, await data.decode(encoded)

    encoded, decoded = asyncio.run(go())
    assert b"small" in encoded[0].data and decoded == [{"goal": "small"}]
    assert not any(tmp_path.iterdir())


def test_a_process_with_another_store_says_which_store_to_use(tmp_path):
    async def go():
        encoded = await converter(payload_storage(tmp_path / "a", threshold=0)).encode([state_of(3)])
        await converter(payload_storage(tmp_path / "b", threshold=0)).decode(encoded)

    with pytest.raises(MissingPayload, match="same payload store"):
        asyncio.run(go())


def test_the_store_is_named_by_the_environment_when_not_given(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLANGRAPH_PAYLOADS", str(tmp_path))
    driver = driver_for(None)
    assert isinstance(driver, SharedFolder) and driver.root == tmp_path
    assert type(driver_for("postgresql://localhost/db")).__name__ == "PostgresPayloads"


class Reverse(PayloadCodec):
    """A codec of our own: the bytes reversed, marked (an encryption would stand here)."""

    async def encode(self, payloads):
        return [Payload(metadata={"encoding": b"reversed"}, data=p.SerializeToString()[::-1]) for p in payloads]

    async def decode(self, payloads):
        return [Payload.FromString(p.data[::-1]) for p in payloads]


def test_the_codec_runs_before_the_store_so_the_store_keeps_what_it_wrote(tmp_path):
    async def go():
        data = converter(payload_storage(tmp_path, threshold=0), Reverse())
        encoded = await data.encode([{"goal": "a secret goal"}])
        return encoded, await data.decode(encoded)

    encoded, decoded = asyncio.run(go())
    assert decoded == [{"goal": "a secret goal"}]
    kept = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert b"a secret goal" not in kept and b"a secret goal"[::-1] in kept
