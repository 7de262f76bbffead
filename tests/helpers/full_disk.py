"""A database whose disk fills mid-run: checkpoint writes raise from then on, as SQLite's would."""

from __future__ import annotations

import functools
import sqlite3
import threading
from typing import Any


class Disk:
    """Checkpoint writes of the savers it `breaks` raise ``database or disk is full`` once `fill` was called."""

    def __init__(self) -> None:
        self.full = threading.Event()
        self.refused = 0

    def fill(self) -> None:
        self.full.set()

    def breaks(self, saver: Any) -> Any:
        """``saver``, its ``put`` and ``put_writes`` raising sqlite3.OperationalError once the disk is full."""
        for name in ("put", "put_writes"):
            setattr(saver, name, self._failing(getattr(saver, name)))
        return saver

    def _failing(self, write):
        @functools.wraps(write)  # keeps the signature LangGraph inspects (put_writes' task_path)
        def failing(*args, **kwargs):
            if self.full.is_set():
                self.refused += 1
                raise sqlite3.OperationalError("database or disk is full")
            return write(*args, **kwargs)

        return failing
