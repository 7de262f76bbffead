"""A database whose disk fills mid-run: checkpoint writes raise from then on, as SQLite's would."""

from __future__ import annotations

import functools
import sqlite3
import threading
from typing import Any


class Disk:
    """Checkpoint writes of the savers it `breaks` raise ``database or disk is full`` once `fill` was called, or
    once ``room`` writes (``put`` or ``put_writes``) were made, when given."""

    def __init__(self, room: int | None = None) -> None:
        self.full = threading.Event()
        self.room = room
        self.refused = 0
        self.made = 0
        self.lock = threading.Lock()

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
            with self.lock:
                if self.room is not None and not self.full.is_set():
                    self.room -= 1
                    if self.room < 0:
                        self.full.set()
                if self.full.is_set():
                    self.refused += 1
                    raise sqlite3.OperationalError("database or disk is full")
                self.made += 1
            return write(*args, **kwargs)

        return failing
