"""A run whose model server accepts every connection and never answers, in a process of its own: does the process
exit when the run ends? (issue 33)

``python hung_run.py BASE_URL invoke|ainvoke``: runs a graph on ``ChatOpenAI(base_url=BASE_URL)`` with
``step_timeout_s=2`` (`CONFIG`), prints ``ENDED <epoch seconds> <run seconds>`` once ``invoke`` (or ``ainvoke``)
returned, and falls off the end of the script: the process should exit at once, not when the abandoned calls'
threads end. `silent_server` is such a server; `run_and_exit` starts the process and measures.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STEP_TIMEOUT_S = 2.0
SCRIPT = Path(__file__).resolve()


@contextmanager
def silent_server() -> Iterator[str]:
    """An OpenAI-compatible base URL on 127.0.0.1 whose server accepts every connection, reads nothing and
    answers nothing; the connections are closed when the block ends."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:  # closed
                return
            held.append(connection)

    thread = threading.Thread(target=accept, name="silent-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        listener.close()
        for connection in held:
            connection.close()


def run_and_exit(base_url: str, mode: str, wait_s: float = 60.0) -> tuple[float | None, float | None, str]:
    """Run this script as a process against ``base_url``: ``(run seconds, seconds from the run's end to the
    process's exit, its output)``; a figure is None when the run did not end, or the process did not exit within
    ``wait_s`` of it (then it is killed)."""
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), base_url, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    ended: list[float] = []

    def read() -> None:
        for line in process.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if line.startswith("ENDED "):
                ended.extend(float(part) for part in line.split()[1:3])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + wait_s * 2
        while not ended and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if ended:
            process.wait(timeout=max(ended[0] + wait_s - time.time(), 0.1))
        exited = time.time()
    except subprocess.TimeoutExpired:
        exited = None
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        reader.join(5)
    run_s = ended[1] if ended else None
    to_exit = exited - ended[0] if ended and exited is not None else None
    return run_s, to_exit, "".join(lines)


def main(base_url: str, mode: str) -> None:
    import asyncio

    from langchain_openai import ChatOpenAI

    from replangraph import AgentConfig, build_graph

    model = ChatOpenAI(model="local", base_url=base_url, api_key="x")
    config = AgentConfig(step_timeout_s=STEP_TIMEOUT_S, model_retries=0, verify_results=False, max_replans=0)
    graph = build_graph(model, config=config)
    request = {"messages": [("user", "Find the colour of flag 1.")]}
    started = time.time()
    if mode == "ainvoke":
        asyncio.run(graph.ainvoke(request))
    else:
        graph.invoke(request)
    print(f"ENDED {time.time():.3f} {time.time() - started:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
