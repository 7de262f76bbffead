"""write_file, read_file, list_files: workspace file tools for executing agents.

Every path is relative to one workspace folder (by default the run's thread's own folder under the root,
`thread_folder`); a path that leaves it (``..``, an
absolute path, a symbolic link pointing out) is refused with a `ToolException`
before anything is touched; any other `OSError` comes back as a `ToolException` naming
the tool and the error, never the absolute path. Writes are capped at ``max_write_bytes``
per file and reads come in pages of at most ``max_read_chars`` characters. Files are opened a folder at a
time without following links (`open_confined`), so a link another process swaps in while a call runs fails
the call; hard-linked files are refused; the cap is checked and the bytes written under a lock on the file.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import functools
import io
import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, BinaryIO

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import AliasChoices, BaseModel, BeforeValidator, Field, WithJsonSchema

from replangraph.context.workspace import UNTHREADED, run_label
from replangraph.llm.lenient import truthy
from replangraph.llm.reading import as_text, bad_arguments, text_field
from replangraph.tools.files import confined
from replangraph.tools.files.confined import locked, open_confined, regular_size, write_all
from replangraph.tools.read_output import _whole_number

EXAMPLE = "notes/result.md"
MAX_LISTED = 200
"""Most entries one list_files call names."""
MAX_WALKED = 10_000
"""Most entries list_files collects before it stops counting."""
SNIFF_BYTES = 8_192
"""Bytes read to tell text from binary."""


def resolve_inside(root: str | os.PathLike, path: Any, *, writing: bool = False) -> Path:
    """The real path ``path`` names inside ``root``; a `ToolException` saying why if it leads outside
    (absolute, ``..``, a symbolic link at any level), is not one string, holds a control character
    (NUL, newline...), or (``writing``) names the root."""
    text = _path_text(path)
    odd = next((c for c in text if ord(c) < 32 or ord(c) == 127), None)
    if odd is not None:
        what = "a NUL byte" if odd == "\x00" else f"a control character ({odd!r})"
        raise ToolException(f"the path holds {what}; give a plain relative path, e.g. {EXAMPLE}")
    if not text:
        raise ToolException(f"the path is empty; give a path relative to the workspace, e.g. {EXAMPLE}")
    base = Path(os.path.realpath(root))
    if os.path.isabs(text) or text == "~" or text.startswith("~/"):
        inside = os.path.relpath(os.path.realpath(text), base) if os.path.isabs(text) else ".."
        hint = f" (use {inside!r} for {text!r})" if not inside.startswith("..") else f" (got {text!r})"
        raise ToolException(f"path must be relative to the workspace, e.g. {EXAMPLE}{hint}")
    relative = os.path.normpath(text)
    if relative == ".." or relative.startswith(".." + os.sep):
        raise ToolException(f"path {text!r} leads outside the workspace through '..'; stay inside, e.g. {EXAMPLE}")
    real = Path(os.path.realpath(base / relative))
    if real != base and base not in real.parents:
        raise ToolException(f"path {text!r} leads outside the workspace through a symbolic link; it is refused")
    if writing and real == base:
        raise ToolException(f"path {text!r} names the workspace folder itself; give a file name, e.g. {EXAMPLE}")
    return real


def _path_text(value: Any) -> str:
    """The path a model sent: a string, a one-item list or one text block; a `ToolException` for
    anything else (an object, several paths)."""
    if isinstance(value, list | tuple):
        if len(value) > 1:
            raise ToolException(f"give one path, not a list of {len(value)}; e.g. {EXAMPLE}")
        return _path_text(value[0] if value else "")
    if isinstance(value, Mapping) and not (value.get("type") == "text" and isinstance(value.get("text"), str)):
        raise ToolException(f"path must be a string such as {EXAMPLE}, not an object")
    return as_text(value).strip().strip("'\"`").strip()


def _content_text(value: Any) -> str:
    """Text for a file: strings and content blocks as text, other objects and lists as JSON."""
    if value is None:
        return ""
    blocks = value if isinstance(value, list | tuple) else [value]
    if all(isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text") for b in blocks):
        return as_text(value)
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _append_flag(value: Any) -> bool:
    if isinstance(value, str) and value.strip().lower() in ("a", "a+", "append"):
        return True
    return bool(truthy(value))


def _field(kind: Any, read: Any, description: str, names: tuple[str, ...], default: Any = ...) -> Any:
    """A field read by ``read`` first, under any of ``names`` (a lenient path is shown as a string)."""
    shown = (WithJsonSchema({"type": "string"}),) if kind is Any else ()
    field = Field(default, description=description, validation_alias=AliasChoices(*names))
    return Annotated[(kind, BeforeValidator(read), *shown, field)]


PATH = f"File path relative to the workspace, e.g. {EXAMPLE}."
PATH_NAMES = ("path", "file", "filename", "file_path", "filepath", "file_name")
OFFSET_NAMES = ("offset", "start", "from", "position")
LIMIT_NAMES = ("limit", "length", "max_chars", "count", "chars")


class WriteArgs(BaseModel):
    path: _field(Any, _path_text, PATH, PATH_NAMES)
    content: text_field("The text to write.", ("content", "text", "data", "contents", "body"))
    append: _field(bool, _append_flag, "Add to the end of the file instead of replacing it.", ("append", "mode"), False)


class ReadArgs(BaseModel):
    path: _field(Any, _path_text, PATH, PATH_NAMES)
    offset: _field(int | None, _whole_number, "Character to start at (0: the beginning).", OFFSET_NAMES, None)
    limit: _field(int | None, _whole_number, "Most characters to return.", LIMIT_NAMES, None)


class ListArgs(BaseModel):
    path: _field(Any, _path_text, "Folder relative to the workspace ('.': all of it).", ("path", "folder", "dir"), ".")


NO_RUN = UNTHREADED + "no-run"
"""The folder under the root of calls made outside a graph run: no thread's folder can be named so (a thread named
``no-run`` has the folder ``no-run``; ``~`` in a thread id is percent-encoded)."""


def thread_folder(root: str | os.PathLike) -> Path:
    """The folder of the run going on under ``root``, named by `run_label`: ``root/<encoded thread id>``,
    ``root/~run-<run key>`` for a run without a thread id, ``root/~no-run`` outside a graph run."""
    return Path(root) / (run_label() or NO_RUN)


def workspace_tools(
    root: str | os.PathLike, *, shared: bool = False, max_read_chars: int = 10_000, max_write_bytes: int = 1_000_000
) -> list[BaseTool]:
    """``write_file``, ``read_file`` and ``list_files`` on the files of each thread's own folder under ``root``
    (`thread_folder`), or with ``shared=True`` on ``root`` itself for every thread (created if missing).

    Each tool's ``metadata["workspace_root"]`` names the folder (``root/{thread}`` unless shared): `build_graph`
    lists it in the review when ``AgentConfig.workspace_dir`` is not set."""
    os.makedirs(root, exist_ok=True)
    top = Path(os.path.realpath(root))  # fixed now, whatever the working directory becomes

    def folder() -> Path:
        """The folder of this call (made if missing)."""
        if shared:
            return top
        found = thread_folder(top)
        found.mkdir(exist_ok=True)
        return found

    def shown(real: Path, base: Path) -> str:
        return real.relative_to(base).as_posix()

    def located(path: Any, *, writing: bool = False) -> tuple[Path, str, tuple[str, ...]]:
        """The real path ``path`` names in this call's folder, the name shown for it, and its parts below ``top``
        (links inside the folder resolved; `open_confined` follows none of them)."""
        base = folder()
        real = resolve_inside(base, path, writing=writing)
        try:
            name = shown(real, base)
        except ValueError:  # the folder itself became a link between the two looks
            raise ToolException("the workspace folder is a symbolic link; nothing was done") from None
        return real, name, base.relative_to(top).parts + Path(name).parts

    def write_file(path: Any, content: Any, append: bool = False) -> str:
        real, name, parts = located(path, writing=True)
        data = _content_text(content).encode("utf-8")
        if real.is_dir():
            raise ToolException(f"{name} is a folder; give a file name inside it, e.g. {name}/notes.md")
        if len(data) > max_write_bytes:
            raise _too_big(str(len(data)), max_write_bytes)
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | (os.O_APPEND if append else 0)
        try:
            fd = open_confined(top, parts, flags, shown=name, make_folders=True)
        except (FileExistsError, NotADirectoryError):
            raise ToolException(f"could not write {name}: a part of its path is a file, not a folder") from None
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.EISDIR):  # a pipe nobody reads; a folder
                raise ToolException(f"{name} is not a regular file; write_file writes regular files only") from None
            raise ToolException(f"could not write {name}: {exc.strerror or type(exc).__name__}") from None
        try:
            with locked(fd, exclusive=True):  # the size checked is the size written to
                size = regular_size(fd, name, "write_file")  # a folder, a pipe, a hard link: refused
                before = size if append else 0
                if before + len(data) > max_write_bytes:
                    raise _too_big(f"{before} + {len(data)}", max_write_bytes)
                if not append:
                    os.ftruncate(fd, 0)
                write_all(fd, data)
        finally:
            os.close(fd)
        if append:
            return f"Appended {len(data)} bytes to {name} (now {before + len(data)} bytes)."
        return f"Wrote {len(data)} bytes to {name}."

    def read_file(path: Any, offset: int | None = None, limit: int | None = None) -> str:
        real, name, parts = located(path)
        if real.is_dir():
            raise ToolException(f"{name} is a folder; call list_files with path={name!r} to see its files")
        start = offset or 0
        if start < 0:
            raise ToolException("offset must be 0 or more (the character to start reading at)")
        try:
            fd = open_confined(top, parts, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0), shown=name)
        except FileNotFoundError:
            missing = f"there is no file {name} in the workspace; call list_files to see what is there"
            raise ToolException(missing) from None
        try:
            size = regular_size(fd, name, "read_file")  # a folder, a pipe, a hard link: refused
            raw = os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
        with raw, locked(raw.fileno(), exclusive=False):
            return _page(raw, name, size, start, limit, max_read_chars)

    def list_files(path: Any = ".") -> str:
        base = folder()
        real, name, parts = located(path or ".")
        if real.is_file():
            return f"- {name} ({real.stat().st_size} bytes)"
        if real.exists() and not real.is_dir():
            return f"- {name} (not a regular file)"
        if not real.is_dir():
            raise ToolException(f"there is no folder {name} in the workspace; call list_files with path='.'")
        with contextlib.ExitStack() as stack:
            fd = None
            if confined.WALKS:  # the folder listed is the one checked, whatever is swapped in meanwhile
                fd = open_confined(top, parts, os.O_RDONLY | os.O_DIRECTORY, shown=name)
                stack.callback(os.close, fd)
            lines, complete = workspace_listing(real, base, folder_fd=fd)
        where = "the workspace" if real == base else name
        if not lines:
            return f"No files in {where}."
        plus = "" if complete else "+"
        head = f"Files in {where} ({len(lines)}{plus}):"
        body = lines[:MAX_LISTED]
        while body and len("\n".join([head, *body])) > max_read_chars - 120:
            body.pop()
        if len(body) < len(lines) or not complete:
            body.append(f"(… {len(lines) - len(body)}{plus} more not shown; list a subfolder, e.g. path='notes')")
        return "\n".join([head, *body])

    def tool(function: Any, schema: type[BaseModel], description: str, outcome: str) -> BaseTool:
        return StructuredTool.from_function(
            _os_errors_refused(function, outcome),
            name=function.__name__,
            description=description,
            args_schema=schema,
            handle_tool_error=True,
            handle_validation_error=bad_arguments,
            metadata={"workspace_root": str(top if shared else top / "{thread}")},
        )

    return [
        tool(
            write_file,
            WriteArgs,
            f"Write text to a file in the workspace, creating its folders (at most {max_write_bytes} bytes a file). "
            f"The path is relative to the workspace, e.g. {EXAMPLE}; append=true adds to the end of the file.",
            "nothing was changed",
        ),
        tool(
            read_file,
            ReadArgs,
            f"Read a text file of the workspace, at most {max_read_chars} characters a call; "
            "a longer file ends with the offset to read on from.",
            "nothing was read",
        ),
        tool(
            list_files,
            ListArgs,
            "List the files of the workspace (or of one folder in it), sorted, with sizes.",
            "nothing was listed",
        ),
    ]


def _too_big(size: str, most: int) -> ToolException:
    return ToolException(
        f"refused: {size} bytes is over the {most}-byte limit of a file; nothing was written. "
        "Write less, or split it across several files."
    )


def _os_errors_refused(function: Callable[..., str], outcome: str) -> Callable[..., str]:
    """``function`` with an `OSError` turned into a `ToolException` naming the tool and the error,
    never the absolute path (``outcome`` says what did not happen)."""

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> str:
        try:
            return function(*args, **kwargs)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise ToolException(f"{function.__name__} failed: {reason}; {outcome}") from None

    return guarded


def _page(raw: BinaryIO, name: str, size: int, start: int, limit: int | None, most: int) -> str:
    """Characters ``start`` on of the open file ``raw`` (``size`` bytes): at most ``limit``, and a page of at most
    ``most`` characters with its header and the offset to read on from."""
    if _binary(raw.read(SNIFF_BYTES)):
        return f"{name} is a binary file ({size} bytes); read_file shows text files only."
    raw.seek(0)
    room = most - len(_header(name, size, size, size)) - len(_more(name, size))  # offsets <= size
    room = max(room if not limit or limit < 1 else min(limit, room), 1)
    file = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    try:
        skipped = 0
        while skipped < start:
            chunk = len(file.read(min(start - skipped, 1 << 20)))
            if not chunk:
                raise ToolException(f"offset {start} is past the end of {name}, which has {skipped} characters")
            skipped += chunk
        text = file.read(room)
        end = start + len(text)
        if not file.read(1):
            return f"{name}, characters {start}-{end} of {end} (the end):\n{text}" if size else f"{name} is empty."
    finally:
        file.detach()  # the caller closes raw
    return _header(name, size, start, end) + text + _more(name, end)


def _header(name: str, size: int, start: int, end: int) -> str:
    return f"{name} ({size} bytes), characters {start}-{end}:\n"


def _more(name: str, end: int) -> str:
    return f'\n[… more follows; call read_file with path="{name}", offset={end} to read on]'


def _binary(head: bytes) -> bool:
    """Whether the first bytes of a file look like anything but text."""
    if b"\x00" in head:
        return True
    text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(head)
    odd = sum(1 for c in text if c == "\ufffd" or (ord(c) < 32 and c not in "\t\n\r\f\b"))
    return odd > len(text) * 0.1


def workspace_listing(
    folder: Path, base: Path | None = None, *, most: int = MAX_WALKED, folder_fd: int | None = None
) -> tuple[list[str], bool]:
    """Sorted ``- relative/path (N bytes)`` lines for what is under ``folder`` (paths relative to ``base``,
    default ``folder``; both real paths), and whether that is all of it: the walk stops after ``most`` entries.
    Links are not followed; a link leading out of ``base`` is marked, never sized. The walk goes by folder
    descriptors (from ``folder_fd`` if given) where the platform has them (`walk_folder`)."""
    base = folder if base is None else base
    lines: list[str] = []
    with contextlib.ExitStack() as stack:
        if not confined.WALKS:
            walk = _path_walk(folder)
        elif folder_fd is None:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
            stack.callback(os.close, fd)
            walk = confined.walk_folder(fd)
        else:
            walk = confined.walk_folder(folder_fd)
        stack.callback(getattr(walk, "close", lambda: None))
        for where, dirs, names, dir_fd in walk:
            here = folder / where
            if not names and not dirs and where != ".":
                lines.append(f"- {here.relative_to(base).as_posix()}/ (empty folder)")
            for name in names:
                lines.append(f"- {(here / name).relative_to(base).as_posix()}{_entry_kind(here, name, base, dir_fd)}")
                if len(lines) >= most:
                    return sorted(lines), False
    return sorted(lines), True


def _path_walk(folder: Path) -> Iterator[tuple[str, list[str], list[str], None]]:
    """`confined.walk_folder`'s entries found by path, where there are no folder descriptors."""
    for top, dirs, names in os.walk(folder):
        dirs.sort()
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
        dirs[:] = [d for d in dirs if d not in links]
        yield os.path.relpath(top, folder), dirs, sorted(names + links), None


def _entry_kind(here: Path, name: str, base: Path, dir_fd: int | None) -> str:
    """What follows an entry's name in a listing: its size, or what it is (looked at from ``dir_fd``, the
    descriptor of ``here``, where there is one; a link's target by path)."""
    try:
        info = os.stat(name if dir_fd is not None else here / name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return " (size unknown)"
    if stat.S_ISREG(info.st_mode):
        return f" ({info.st_size} bytes)"
    if not stat.S_ISLNK(info.st_mode):
        return " (not a regular file)"
    full = str(here / name)
    target = os.path.realpath(full)
    if target != str(base) and not target.startswith(str(base) + os.sep):
        return " (link leading outside the workspace)"
    try:
        if os.path.isfile(target):
            return f" ({os.path.getsize(target)} bytes)"
    except OSError:
        return " (size unknown)"
    if os.path.isdir(target):
        return "/ (link to a folder)"
    if not os.path.exists(full):
        return " (broken link)"
    return " (not a regular file)"
