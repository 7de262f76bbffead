"""Workspace file tools against another process changing the folder: hard links out, links swapped in while a
call runs, and appends racing for the size cap."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from replangraph.tools.files import confined
from replangraph.tools.files.workspace_files import workspace_tools

SECRET = "TOP SECRET"
OUTSIDE = {"only-outside.txt": b"", "secret.txt": SECRET.encode()}
"""The files outside the workspace, as they must stay."""


def tools(root, **limits):
    return {t.name: t for t in workspace_tools(root, shared=True, **limits)}


def call(tool, **args) -> ToolMessage:
    return tool.invoke({"name": tool.name, "args": args, "id": "c1", "type": "tool_call"})


def contents(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET)
    (folder / "only-outside.txt").write_text("")
    return folder


@pytest.mark.parametrize("walks", [True, False], ids=["dir-fd", "path-fallback"])
def test_a_hard_link_to_a_file_outside_is_neither_read_nor_written(tmp_path, outside, monkeypatch, walks):
    monkeypatch.setattr(confined, "WALKS", walks)
    ws = tools(tmp_path / "ws")
    os.link(outside / "secret.txt", tmp_path / "ws/linked.txt")
    read = call(ws["read_file"], path="linked.txt")
    assert read.status == "error" and SECRET not in read.content
    assert "linked.txt has 2 hard links; read_file refuses hard-linked files" in read.content
    for append in (False, True):
        wrote = call(ws["write_file"], path="linked.txt", content="overwritten", append=append)
        assert wrote.status == "error" and "write_file refuses hard-linked files" in wrote.content
    assert contents(outside) == OUTSIDE


@pytest.mark.parametrize("walks", [True, False], ids=["dir-fd", "path-fallback"])
def test_the_path_fallback_and_the_dir_fd_walk_do_the_same(tmp_path, monkeypatch, walks):
    """Where there is no dir_fd (Windows) whole paths are opened: the tools still work and say the same."""
    monkeypatch.setattr(confined, "WALKS", walks)
    ws = tools(tmp_path / "ws", max_write_bytes=10)
    assert call(ws["write_file"], path="a/b/c.txt", content="12345").content == "Wrote 5 bytes to a/b/c.txt."
    grown = call(ws["write_file"], path="a/b/c.txt", content="678", append=True).content
    assert grown == "Appended 3 bytes to a/b/c.txt (now 8 bytes)."
    assert (
        "8 + 3 bytes is over the 10-byte limit"
        in call(ws["write_file"], path="a/b/c.txt", content="xyz", append=1).content
    )
    assert call(ws["read_file"], path="a/b/c.txt").content == "a/b/c.txt, characters 0-8 of 8 (the end):\n12345678"
    assert "is a folder" in call(ws["read_file"], path="a/b").content
    os.symlink("b/c.txt", tmp_path / "ws/a/alias.txt")
    (tmp_path / "ws/a/empty").mkdir()
    listing = "Files in a (3):\n- a/alias.txt (8 bytes)\n- a/b/c.txt (8 bytes)\n- a/empty/ (empty folder)"
    assert call(ws["list_files"], path="a").content == listing
    assert "is a file, not a folder" in call(ws["write_file"], path="a/b/c.txt/d.txt", content="x").content


def appender_replies(ws, times: int, start: threading.Barrier) -> list[str]:
    replies = []
    start.wait()
    for n in range(times):
        replies.append(call(ws["write_file"], path="log.txt", content=f"{n % 10}" * 10, append=True).content)
    return replies


def test_threads_appending_at_once_never_pass_the_size_cap(tmp_path):
    ws = tools(tmp_path / "ws", max_write_bytes=2_000)
    threads, start, replies = 8, threading.Barrier(8), []
    workers = [threading.Thread(target=lambda: replies.extend(appender_replies(ws, 50, start))) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    appended = [r for r in replies if r.startswith("Appended 10 bytes")]
    assert len(replies) == 400 and all(r in appended or "over the 2000-byte limit" in r for r in replies)
    size = (tmp_path / "ws/log.txt").stat().st_size
    assert size == 2_000 == 10 * len(appended)  # every byte appended was counted; none past the cap
    assert re.fullmatch(r"((\d)\2{9})+", (tmp_path / "ws/log.txt").read_text())  # appends never interleave


FILES = 100
APPENDER = """
import sys
from replangraph.tools.files.workspace_files import workspace_tools
ws = {t.name: t for t in workspace_tools(sys.argv[1], shared=True, max_write_bytes=30)}
for line in sys.stdin:  # one file a line: both processes start on it together and race for its cap
    replies = [ws["write_file"].invoke({"path": line.strip(), "content": "p" * 10, "append": True}) for _ in range(4)]
    print(sum(r.startswith("Appended") for r in replies), flush=True)
"""


@pytest.mark.system
def test_two_processes_appending_at_once_never_pass_the_size_cap(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    run = [sys.executable, "-c", APPENDER, str(root)]
    procs = [subprocess.Popen(run, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    appended = []
    try:
        for n in range(FILES):
            for p in procs:
                p.stdin.write(f"log{n}.txt\n")
                p.stdin.flush()
            appended.append(sum(int(p.stdout.readline()) for p in procs))
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=60)
    assert appended == [3] * FILES  # of each file's 8 appends of 10 bytes, 3 fit under the 30-byte cap
    assert {p.stat().st_size for p in root.iterdir()} == {30}


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


@pytest.mark.parametrize("swapped", ["folder", "file"])
@pytest.mark.skipif(exchanger() is None, reason="needs Linux's renameat2")
def test_a_link_swapped_in_while_the_tools_run_never_leads_outside(tmp_path, outside, swapped):
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d/secret.txt").write_text("inside")
    ws, stop, swaps = tools(root), threading.Event(), [0]
    link, target = (root / "d", outside) if swapped == "folder" else (root / "d/secret.txt", outside / "secret.txt")
    racer = threading.Thread(target=swapper, args=(link, target, stop, swaps))
    racer.start()
    reads, writes, lists = [], [], []
    try:
        for _ in range(300):
            reads.append(call(ws["read_file"], path="d/secret.txt"))
            lists.append(call(ws["list_files"], path="d"))
            writes.append(call(ws["write_file"], path="d/secret.txt", content="x", append=True))
            writes.append(call(ws["write_file"], path="d/new.txt", content="y", append=True))
    finally:
        stop.set()
        racer.join()
    assert swaps[0] > 100
    assert not [r.content for r in reads if SECRET in r.content]
    assert not [r.content for r in lists if "only-outside" in r.content]
    assert contents(outside) == OUTSIDE  # nothing written or made outside
    assert os.path.isdir(root / "d") and not os.path.islink(root / "d/secret.txt")  # an even number of swaps
    assert any(r.status == "success" for r in reads) and any(w.status == "success" for w in writes)
    written = sum(w.content.startswith("Appended 1 bytes to d/secret.txt") for w in writes)
    assert (root / "d/secret.txt").read_text() == "inside" + "x" * written  # every append landed inside


def test_a_thread_folder_that_is_a_link_out_is_refused(tmp_path, outside):
    root = tmp_path / "ws"
    ws = {t.name: t for t in workspace_tools(root)}  # per thread: outside a run the folder is root/no-run
    (root / "no-run").symlink_to(outside, target_is_directory=True)
    replies = [
        call(ws["read_file"], path="secret.txt"),
        call(ws["write_file"], path="new.txt", content="x"),
        call(ws["list_files"]),
    ]
    assert [r.status for r in replies] == ["error"] * 3
    assert all("the workspace folder is a symbolic link; nothing was done" in r.content for r in replies)
    assert contents(outside) == OUTSIDE
