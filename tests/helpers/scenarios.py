"""Scenarios of issue 23's regression tests, shared with the fault matrix (`benchmarks/fault_limits.py`):
a failed handed-off child, a subtask reading items into a small window, a huge refused split, a huge queue for
the fallback report, and the workspace file tools raced by another writer."""

from __future__ import annotations

import ctypes
import os
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from langchain_core.messages import ToolMessage
from scripting import subtask_of

from replangraph.context.window_monitor import ContextMonitor
from replangraph.queue.tasks import new_task
from replangraph.testing import ScriptedRequest, tool_call
from replangraph.tools import SPLIT_TOOL
from replangraph.tools.files.workspace_files import workspace_tools

# A failed child -------------------------------------------------------------------------------------------------


def handoff_then_failure_work(how: str, seen: dict):
    """``1`` hands ``the rest`` off (``1_dyn_0``), which fails by ``how`` ("raises" or "marker"); the rest of
    the work answers. ``seen`` gets the first prompt of each subtask."""

    def work(request):
        subtask = subtask_of(request)
        seen.setdefault(subtask, request.prompt)
        if subtask == "collect":
            handoff = {"summary": "first half", "tasks": '[{"content": "the rest"}]'}
            return tool_call("replan_split_and_handoff", handoff)
        if subtask == "the rest":
            if how == "raises":
                raise ValueError("parser crashed")
            return "[REPLAN] the second half is behind a login"
        if "Your subtask (fallback):" in request.prompt:
            return "finished alone"
        return f"result of {subtask}"

    return work


# Window outputs on completion -----------------------------------------------------------------------------------

WINDOW_ANSWER = "Items: ITEM-1 and ITEM-2 are the ones that matter."


def item_text(n: int) -> str:
    return f"ITEM-{n}: serial S-{n * 7919}"


def read_item(n: int) -> str:
    """Read item number ``n``."""
    return item_text(n)


def item_reader(items: int):
    """A worker that reads ``items`` items one per turn, then answers naming only the first two; the completion
    check finds it complete."""

    def worker(request: ScriptedRequest):
        if "Verdict" in request.tool_names:
            return {"name": "Verdict", "args": {"complete": True, "reason": "done", "remaining_tasks": []}}
        done = len(request.tool_results)
        return tool_call("read_item", {"n": done + 1}) if done < items else WINDOW_ANSWER

    return worker


# A huge refused split -------------------------------------------------------------------------------------------

HUGE_SPLIT = {"summary": "items 1-5", "tasks": [{"content": f"Extract catalogue item {i}"} for i in range(100_000)]}
SMALL_SPLIT = {"summary": "items 1-5", "tasks": [{"content": "Extract catalogue items 6-50000"}]}
READ_NOTE = re.compile(r'read_output\(output_id="([^"]+)", offset=(\d+)\)')


def huge_split_work(monitor: ContextMonitor, seen: list[tuple[int, ScriptedRequest]]):
    """Subtask ``1`` sends a split of 100,000 tasks (refused), reads the cut call's arguments back by the id its
    note gives, then sends a small split; ``seen`` gets ``(tokens, request)`` of every worker request."""

    def work(request: ScriptedRequest):
        seen.append((monitor.approximate(request.messages), request))
        if "6-50000" in subtask_of(request):
            return "items 6-50000"
        if not request.tool_results:  # ~3.3 MB of arguments: refused by max_tasks
            return tool_call(SPLIT_TOOL, HUGE_SPLIT, call_id="huge")
        if not request.called("read_output"):  # the cut call's note says where the rest is
            calls = [c for m in request.messages for c in getattr(m, "tool_calls", None) or []]
            ident, offset = READ_NOTE.search(calls[0]["args"]["tasks"]).groups()
            return tool_call("read_output", {"output_id": ident, "offset": int(offset)}, call_id="read")
        return tool_call(SPLIT_TOOL, SMALL_SPLIT, call_id="small")  # told to send fewer tasks: it does

    return work


# A huge queue for the fallback report ---------------------------------------------------------------------------


def huge_queue(done: int, failed: int, waiting: int) -> dict:
    """Thousands of subtasks with long contents, results and errors: 0.8.0 wrote a report of ~20 MB for 5,000.
    Ids ``t0``...: ``done`` completed, then ``failed`` failed, then ``waiting`` skipped."""
    tasks = {}
    for n in range(done + failed + waiting):
        task = new_task(f"t{n}", f"extract catalogue page {n} " + "with every field " * 40, position=[n])
        if n < done:
            task.update(status="completed", result=f"PAGE-{n}: " + "price, size, colour; " * 300)
        elif n < done + failed:
            task.update(status="failed", error=f"shop refused page {n}: " + "HTTP 429 " * 100, result="half " * 500)
        else:
            task.update(status="skipped")
        tasks[task["id"]] = task
    return tasks


# Workspace files under attack -----------------------------------------------------------------------------------

SECRET = "TOP SECRET"
OUTSIDE = {"only-outside.txt": b"", "secret.txt": SECRET.encode()}
"""The files outside the workspace, as they must stay."""


def make_outside(folder: Path) -> Path:
    """A folder outside the workspace holding `OUTSIDE`."""
    folder.mkdir()
    for name, data in OUTSIDE.items():
        (folder / name).write_bytes(data)
    return folder


def file_tools(root, **limits) -> dict:
    """The workspace file tools on one shared folder ``root``, by name."""
    return {t.name: t for t in workspace_tools(root, shared=True, **limits)}


def call(tool, **args) -> ToolMessage:
    return tool.invoke({"name": tool.name, "args": args, "id": "c1", "type": "tool_call"})


def contents(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def appender_replies(ws, times: int, start: threading.Barrier) -> list[str]:
    """Once every appender is at ``start``: ``times`` appends of 10 bytes to log.txt; the tool's replies."""
    replies = []
    start.wait()
    for n in range(times):
        replies.append(call(ws["write_file"], path="log.txt", content=f"{n % 10}" * 10, append=True).content)
    return replies


def append_at_once(ws, threads: int, times: int) -> list[str]:
    """``threads`` threads appending ``times`` times each to log.txt at once; every reply."""
    start, replies = threading.Barrier(threads), []
    workers = [
        threading.Thread(target=lambda: replies.extend(appender_replies(ws, times, start))) for _ in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return replies


def exchanger() -> Callable[[Path, Path], None] | None:
    """Linux's renameat2(RENAME_EXCHANGE): two names swap what they name in one step, so neither is ever
    missing (None where the C library lacks it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if not sys.platform.startswith("linux") or not hasattr(libc, "renameat2"):
        return None

    def exchange(one: Path, other: Path) -> None:
        if libc.renameat2(-100, os.fsencode(one), -100, os.fsencode(other), 2):  # AT_FDCWD, RENAME_EXCHANGE
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))

    return exchange


def swapper(name: Path, target: Path, stop: threading.Event, swaps: list[int]) -> None:
    """Until ``stop``: ``name`` becomes a symbolic link to ``target`` and back again, never missing."""
    exchange, link = exchanger(), name.with_name(name.name + ".link")
    link.symlink_to(target)
    while not stop.is_set():
        exchange(name, link)
        exchange(name, link)
        swaps[0] += 1


def race_a_swapped_link(root: Path, outside: Path, swapped: str, rounds: int) -> dict[str, list]:
    """``rounds`` of read, list and two appends under ``root/d`` while ``root/d`` (``swapped="folder"``) or
    ``root/d/secret.txt`` (``"file"``) is swapped for a link to ``outside`` and back; the replies by kind and
    the swaps made (``swaps``: [count])."""
    (root / "d").mkdir(parents=True)
    (root / "d/secret.txt").write_text("inside")
    ws, stop, swaps = file_tools(root), threading.Event(), [0]
    link, target = (root / "d", outside) if swapped == "folder" else (root / "d/secret.txt", outside / "secret.txt")
    racer = threading.Thread(target=swapper, args=(link, target, stop, swaps))
    racer.start()
    reads, writes, lists = [], [], []
    try:
        for _ in range(rounds):
            reads.append(call(ws["read_file"], path="d/secret.txt"))
            lists.append(call(ws["list_files"], path="d"))
            writes.append(call(ws["write_file"], path="d/secret.txt", content="x", append=True))
            writes.append(call(ws["write_file"], path="d/new.txt", content="y", append=True))
    finally:
        stop.set()
        racer.join()
    return {"reads": reads, "writes": writes, "lists": lists, "swaps": swaps}
