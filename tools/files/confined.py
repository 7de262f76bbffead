"""Opening files inside one folder so that nothing swapped in while a call runs leads out of it.

Where the platform has ``dir_fd``, ``O_NOFOLLOW`` and ``O_DIRECTORY`` (Linux, macOS, the BSDs: `WALKS`),
each part of a path is opened relative to the descriptor of the folder above it and never through a
symbolic link, so a link another process swaps in at any level makes the open fail instead of leading out.
Elsewhere (Windows) the whole path is opened at once and only the checks made before the call hold.
`locked` takes an advisory lock on an open file (``flock``: between threads and between processes;
a lock within this process where there is no ``fcntl``)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from langchain_core.tools import ToolException

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

WALKS = {os.open, os.mkdir, os.stat} <= os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
"""Whether paths are opened a part at a time relative to folder descriptors, never following links."""

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | _CLOEXEC
_IN_PROCESS = threading.Lock()
"""Held while a file is locked where the platform has no ``flock``: it keeps out this process's threads only."""


def open_confined(top: Path, parts: Sequence[str], flags: int, *, shown: str, make_folders: bool = False) -> int:
    """A descriptor of ``top/parts...`` opened with ``flags`` (plus no-follow and close-on-exec), its folders
    made first if ``make_folders``. No part may be a symbolic link (``parts`` are the path with the links
    inside the folder already resolved): one found, or a part that is a file, is a `ToolException` naming
    ``shown``; a missing part is `FileNotFoundError`. ``parts`` empty: a descriptor of ``top`` itself."""
    flags |= getattr(os, "O_NOFOLLOW", 0) | _CLOEXEC
    if not WALKS:
        full = top.joinpath(*parts)
        if make_folders:
            full.parent.mkdir(parents=True, exist_ok=True)
        return os.open(full, flags if parts else os.O_RDONLY, 0o644)
    folder = os.open(top, _FOLDER & ~os.O_NOFOLLOW)  # the root itself was resolved once, when the tools were made
    try:
        for part in parts[:-1]:
            inner = _enter(folder, part, shown, make_folders)
            os.close(folder)
            folder = inner
        if not parts:
            return os.dup(folder)
        _refuse_special(folder, parts[-1], shown)
        try:
            return os.open(parts[-1], flags, 0o644, dir_fd=folder)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise ToolException(_swapped(shown)) from None
            raise
    finally:
        os.close(folder)


def walk_folder(fd: int, where: str = ".") -> Iterator[tuple[str, list[str], list[str], int]]:
    """`os.walk` from the open folder ``fd``, top-down: each folder's path relative to it, its folders and its
    other entries (links included), sorted, and its descriptor. Each folder is opened from its parent's
    descriptor without following links: one swapped for a link meanwhile is left out, never followed."""
    with os.scandir(fd) as entries:
        found = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    folders = sorted(name for name, is_folder in found if is_folder)
    yield where, folders, sorted(name for name, is_folder in found if not is_folder), fd
    for name in folders:
        try:
            inner = os.open(name, _FOLDER | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
        except OSError:  # gone, or no longer a folder
            continue
        try:
            yield from walk_folder(inner, name if where == "." else f"{where}/{name}")
        finally:
            os.close(inner)


def _enter(folder: int, part: str, shown: str, make: bool) -> int:
    """The descriptor of the folder ``part`` inside ``folder`` (made if missing and ``make``), not through a link."""
    try:
        try:
            return os.open(part, _FOLDER, dir_fd=folder)
        except FileNotFoundError:
            if not make:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=folder)
            return os.open(part, _FOLDER, dir_fd=folder)
    except OSError as error:
        if error.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        if error.errno == errno.ELOOP or stat.S_ISLNK(os.stat(part, dir_fd=folder, follow_symlinks=False).st_mode):
            raise ToolException(_swapped(shown)) from None
        raise ToolException(f"could not reach {shown}: a part of its path is a file, not a folder") from None


def _refuse_special(folder: int, name: str, shown: str) -> None:
    """A `ToolException` if ``name`` in ``folder`` is a device, a socket or a pipe, which opening may block on."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
        raise ToolException(f"{shown} is not a regular file; the workspace tools read and write regular files only")


def _swapped(shown: str) -> str:
    return (
        f"{shown} leads through a symbolic link that appeared while the call ran (something else is changing "
        "the workspace); it is refused and nothing was done"
    )


def regular_size(fd: int, shown: str, tool: str) -> int:
    """The size of the open file ``fd``; a `ToolException` if it is a folder, not a regular file, or has other
    hard links (which may be files outside the workspace) or none left (removed while the call ran)."""
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        hint = f"call list_files with path={shown!r} to see its files" if tool == "read_file" else "give a file name"
        raise ToolException(f"{shown} is a folder; {hint}")
    if not stat.S_ISREG(info.st_mode):
        raise ToolException(f"{shown} is not a regular file; {tool} works on regular files only")
    if info.st_nlink > 1:
        raise ToolException(
            f"{shown} has {info.st_nlink} hard links; {tool} refuses hard-linked files, which may be files outside "
            "the workspace. Use another file name (or ask the user to copy the file in)."
        )
    if info.st_nlink == 0:
        raise ToolException(f"{shown} was removed while the call ran; nothing was done. Try again.")
    return info.st_size


@contextlib.contextmanager
def locked(fd: int, *, exclusive: bool) -> Iterator[None]:
    """An advisory lock on the open file ``fd`` while the block runs: shared for readers, exclusive for writers."""
    if fcntl is None:
        with _IN_PROCESS:
            yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` written to ``fd`` (a write may take only part)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
