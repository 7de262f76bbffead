"""Workspace file tools against another process changing the folder: hard links out, links swapped in while a
call runs, and appends racing for the size cap."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scenarios import (
    OUTSIDE,
    SECRET,
    append_at_once,
    call,
    contents,
    exchanger,
    file_tools,
    make_outside,
    race_a_swapped_link,
)

from replangraph.tools.files import confined
from replangraph.tools.files.workspace_files import workspace_tools


@pytest.fixture
def outside(tmp_path) -> Path:
    return make_outside(tmp_path / "outside")


@pytest.mark.parametrize("walks", [True, False], ids=["dir-fd", "path-fallback"])
def test_a_hard_link_to_a_file_outside_is_neither_read_nor_written(tmp_path, outside, monkeypatch, walks):
    monkeypatch.setattr(confined, "WALKS", walks)
    ws = file_tools(tmp_path / "ws")
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
    ws = file_tools(tmp_path / "ws", max_write_bytes=10)
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


def test_threads_appending_at_once_never_pass_the_size_cap(tmp_path):
    ws = file_tools(tmp_path / "ws", max_write_bytes=2_000)
    replies = append_at_once(ws, threads=8, times=50)
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


@pytest.mark.parametrize("swapped", ["folder", "file"])
@pytest.mark.skipif(exchanger() is None, reason="needs Linux's renameat2")
def test_a_link_swapped_in_while_the_tools_run_never_leads_outside(tmp_path, outside, swapped):
    root = tmp_path / "ws"
    race = race_a_swapped_link(root, outside, swapped, rounds=300)
    reads, writes, lists, swaps = race["reads"], race["writes"], race["lists"], race["swaps"]
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
    ws = {t.name: t for t in workspace_tools(root)}  # per thread: outside a run the folder is root/~no-run
    (root / "~no-run").symlink_to(outside, target_is_directory=True)
    replies = [
        call(ws["read_file"], path="secret.txt"),
        call(ws["write_file"], path="new.txt", content="x"),
        call(ws["list_files"]),
    ]
    assert [r.status for r in replies] == ["error"] * 3
    assert all("the workspace folder is a symbolic link; nothing was done" in r.content for r in replies)
    assert contents(outside) == OUTSIDE
