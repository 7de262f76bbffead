"""Loading what ``--tools`` and ``--agents`` (and Studio's REPLANGRAPH_TOOLS / REPLANGRAPH_AGENTS) name:
``module:attr`` specs, read into tools, agent types and teams, with a sentence for each mistake."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from langchain_core.tools import BaseTool

from replangraph.config import to_tools
from replangraph.queue import preview

TOOLS_FIX = "name a @tool, a function with a docstring, or a list of them"
AGENTS_FIX = "name a dict of agent type to AgentProfile(...) or Team(...)"


class UsageError(Exception):
    """Ends the command with its message on stderr and exit code 2."""


def load_attr(spec: str, what: str) -> Any:
    """The object ``module:attr`` names; modules in the current folder are found. ValueError names what is wrong."""
    module_name, _, attr = spec.strip().partition(":")
    if not module_name or not attr:
        raise ValueError(f"{what} expects module:attribute, got {spec!r}")
    if os.getcwd() not in sys.path:  # as `python -m` does
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot load {what} {spec!r}: {exc}") from None
    except Exception as exc:  # the module itself fails: name it, without a traceback
        raise ValueError(
            f"cannot load {what} {spec!r}: importing {module_name} failed ({type(exc).__name__}: {exc})"
        ) from None
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise ValueError(f"cannot load {what} {spec!r}: {exc}") from None


def load_spec(spec: str, flag: str) -> Any:
    """The object ``module:attr`` names; a UsageError saying why it cannot be loaded."""
    module, _, attr = spec.strip().partition(":")
    if not module or not attr:
        raise UsageError(f"{flag} expects MODULE:ATTR (a module and one of its names), got {spec!r}.")
    try:
        return load_attr(spec, flag)
    except ValueError as exc:  # the error it stands for (the import's, say) is the reason
        cause = exc.__cause__ or exc.__context__
        reason = " ".join((f"{type(cause).__name__}: {cause}" if cause else str(exc)).split())
        raise UsageError(
            f"{flag} {spec!r} cannot be loaded ({reason}): check that the module imports from the current "
            "folder (or is installed) and defines that name."
        ) from None


def load_tools(specs: list[str]) -> list:
    """The tools ``--tools`` names (``module:attr``: a tool, a function, or a list of them), as LangChain tools;
    a spec that cannot be loaded or is no tool is a UsageError naming it."""
    tools: list = []
    for spec in specs:
        found = load_spec(spec, "--tools")
        tools += [to_tool(spec, item) for item in (found if isinstance(found, list | tuple) else [found])]
    return tools


def to_tool(spec: str, item: Any) -> Any:
    """``item``, found at ``spec``, as a LangChain tool."""
    if isinstance(item, BaseTool):
        return item
    if isinstance(item, ModuleType):
        raise UsageError(f"--tools {spec!r} names the module {item.__name__}, not a tool: {TOOLS_FIX}.")
    if isinstance(item, type) or not callable(item):
        raise UsageError(
            f"--tools {spec!r} names {type(item).__name__} {preview(repr(item), 40)}, not a tool: {TOOLS_FIX}."
        )
    try:
        (converted,) = to_tools([item])
    except (ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split()).rstrip(".")
        raise UsageError(f"--tools {spec!r} cannot be a tool ({reason}): {TOOLS_FIX}.") from None
    return converted


def agents_in(found: Any, what: str) -> dict[str, Any]:
    """The agent types of one dict (an `AgentProfile`, or a kind a feature takes: a team); ValueError for what is
    no dict (`build_graph` refuses an entry no one takes)."""
    if not isinstance(found, Mapping):
        raise ValueError(f"{what} names a {type(found).__name__}, not a dict: {AGENTS_FIX}")
    return {str(name): value for name, value in found.items()}


def load_agents(spec: str | None) -> dict[str, Any] | None:
    """The agent types ``--agents MODULE:ATTR`` names (teams among them); None without one."""
    if not spec:
        return None
    try:
        return agents_in(load_spec(spec, "--agents"), f"--agents {spec!r}")
    except ValueError as exc:
        raise UsageError(f"{exc}.") from None
