"""write_file, read_file, list_files: workspace file tools for executing agents.

Every path is relative to one workspace folder (by default the run's thread's own folder under the root,
`thread_folder`); a path that leaves it (``..``, an
absolute path, a symbolic link pointing out) is refused with a `ToolException`
before anything is touched; any other `OSError` comes back as a `ToolException` naming
the tool and the error, never the absolute path. Writes are capped at ``max_write_bytes``
per file and reads come in pages of at most ``max_read_chars`` characters. The checks guard
against a model's mistakes, not against other processes changing the folder
while a call runs.
"""

from __future__ import annotations

import codecs
import functools
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import AliasChoices, BaseModel, BeforeValidator, Field, WithJsonSchema

from replangraph.context.kept import run_label
from replangraph.llm.reading import as_text, text_field, truthy
from replangraph.tools.read_output import _whole_number
from replangraph.tools.replan_toolkit.toolkit import bad_arguments

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


NO_RUN = "no-run"
"""The folder under the root of calls made outside a graph run."""


def thread_folder(root: str | os.PathLike) -> Path:
    """The folder of the run going on under ``root``, named by `run_label`: ``root/<encoded thread id>``,
    ``root/run-<run key>`` for a run without a thread id, ``root/no-run`` outside a graph run."""
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

    def write_file(path: Any, content: Any, append: bool = False) -> str:
        base = folder()
        real = resolve_inside(base, path, writing=True)
        name = shown(real, base)
        data = _content_text(content).encode("utf-8")
        if real.is_dir():
            raise ToolException(f"{name} is a folder; give a file name inside it, e.g. {name}/notes.md")
        if real.exists() and not real.is_file():  # a FIFO would block the open below
            raise ToolException(f"{name} is not a regular file; write_file writes regular files only")
        before = real.stat().st_size if append and real.is_file() else 0
        if before + len(data) > max_write_bytes:
            size = f"{before} + {len(data)}" if before else str(len(data))
            raise ToolException(
                f"refused: {size} bytes is over the {max_write_bytes}-byte limit of a file; nothing was written. "
                "Write less, or split it across several files."
            )
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
            mode = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC) | getattr(os, "O_NOFOLLOW", 0)
            with os.fdopen(os.open(real, mode, 0o644), "wb") as file:
                file.write(data)
        except (FileExistsError, NotADirectoryError):
            raise ToolException(f"could not write {name}: a part of its path is a file, not a folder") from None
        except OSError as exc:
            raise ToolException(f"could not write {name}: {exc.strerror or type(exc).__name__}") from None
        if append:
            return f"Appended {len(data)} bytes to {name} (now {before + len(data)} bytes)."
        return f"Wrote {len(data)} bytes to {name}."

    def read_file(path: Any, offset: int | None = None, limit: int | None = None) -> str:
        base = folder()
        real = resolve_inside(base, path)
        name = shown(real, base)
        if real.is_dir():
            raise ToolException(f"{name} is a folder; call list_files with path={name!r} to see its files")
        if real.exists() and not real.is_file():
            raise ToolException(f"{name} is not a regular file; read_file reads regular files only")
        if not real.is_file():
            raise ToolException(f"there is no file {name} in the workspace; call list_files to see what is there")
        size, start = real.stat().st_size, offset or 0
        if start < 0:
            raise ToolException("offset must be 0 or more (the character to start reading at)")
        with open(real, "rb") as raw:
            if _binary(raw.read(SNIFF_BYTES)):
                return f"{name} is a binary file ({size} bytes); read_file shows text files only."
        room = max_read_chars - len(_header(name, size, size, size)) - len(_more(name, size))  # offsets <= size
        room = max(room if not limit or limit < 1 else min(limit, room), 1)
        with open(real, encoding="utf-8", errors="replace") as file:
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
        return _header(name, size, start, end) + text + _more(name, end)

    def list_files(path: Any = ".") -> str:
        base = folder()
        real = resolve_inside(base, path or ".")

        def shown(real: Path) -> str:
            return real.relative_to(base).as_posix()

        if real.is_file():
            return f"- {shown(real)} ({real.stat().st_size} bytes)"
        if real.exists() and not real.is_dir():
            return f"- {shown(real)} (not a regular file)"
        if not real.is_dir():
            raise ToolException(f"there is no folder {shown(real)} in the workspace; call list_files with path='.'")
        lines, complete = workspace_listing(real, base)
        where = "the workspace" if real == base else shown(real)
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


def workspace_listing(folder: Path, base: Path | None = None, *, most: int = MAX_WALKED) -> tuple[list[str], bool]:
    """Sorted ``- relative/path (N bytes)`` lines for what is under ``folder`` (paths relative to ``base``,
    default ``folder``; both real paths), and whether that is all of it: the walk stops after ``most`` entries.
    Links are not followed; a link leading out of ``base`` is marked, never sized."""
    base = folder if base is None else base
    lines: list[str] = []
    for top, dirs, names in os.walk(folder):
        dirs.sort()
        if not names and not dirs and Path(top) != folder:
            lines.append(f"- {Path(top).relative_to(base).as_posix()}/ (empty folder)")
        for name in sorted(names) + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            full = os.path.join(top, name)
            lines.append(f"- {Path(full).relative_to(base).as_posix()}{_entry_kind(full, base)}")
            if len(lines) >= most:
                return sorted(lines), False
    return sorted(lines), True


def _entry_kind(full: str, base: Path) -> str:
    """What follows an entry's name in a listing: its size, or what it is."""
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
    if os.path.islink(full) and not os.path.exists(full):
        return " (broken link)"
    return " (not a regular file)"
