"""The shape a newcomer relies on: which packages may import which, and how many modules one small run touches.

Import contract (read from the source, not from a run):
- the pure packages (``replangraph.queue``, ``replangraph.context``, ``replangraph.llm``) import nothing from
  ``replangraph.nodes``, ``replangraph.tools`` or ``replangraph.app``; the queue imports no LangGraph at all;
- a feature folder under ``nodes/`` imports no other feature folder;
- ``replangraph.app`` uses only the public API and its own modules: the package itself, ``testing``, ``durable``,
  ``config``, ``state``, and what a package exports (``replangraph.queue``, ``replangraph.tools``, a feature's
  ``replangraph.nodes.<feature>``), never a module inside one.
"""

from __future__ import annotations

import ast
import sys
import threading
from pathlib import Path

from scripting import make_model, plan_of

from replangraph import AgentConfig, build_graph
from replangraph.testing import tool_call

ROOT = Path(__file__).resolve().parents[3]
TOPS = {"graph": "replangraph", "nodes": "replangraph.nodes", "tools": "replangraph.tools"}
PURE = ("replangraph.queue", "replangraph.context", "replangraph.llm")
OUTSIDE_PURE = ("replangraph.nodes", "replangraph.tools", "replangraph.app")
PUBLIC = (
    "replangraph",
    "replangraph.testing",
    "replangraph.tools",
    "replangraph.durable",
    "replangraph.config",  # AgentConfig's fields and run_settings: what the CLI and Studio set
    "replangraph.state",
    "replangraph.queue",
    "replangraph.tools",
)
"""What ``replangraph.app`` may import besides its own modules."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    name = TOPS[parts[0]] + "".join("." + p for p in parts[1:])
    return name.removesuffix(".__init__")


def sources() -> dict[str, Path]:
    return {module_name(p): p for top in TOPS for p in sorted((ROOT / top).rglob("*.py"))}


def imports(path: Path) -> set[str]:
    """Modules a source file imports (``from a.b import c`` counts as ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def feature_of(module: str) -> str | None:
    """``replangraph.nodes.teams`` for ``replangraph.nodes.teams.merge``; None outside ``nodes/``."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) >= 3 and parts[1] == "nodes" else None


def violations() -> list[str]:
    found = []
    for module, path in sources().items():
        for imported in imports(path):
            if any(within(module, p) for p in PURE) and any(within(imported, p) for p in OUTSIDE_PURE):
                found.append(f"{module} (pure) imports {imported}")
            if within(module, "replangraph.queue") and within(imported, "langgraph"):
                found.append(f"{module} (the queue) imports {imported}")
            mine, theirs = feature_of(module), feature_of(imported)
            if mine and theirs and mine != theirs:
                found.append(f"{module} imports another feature: {imported}")
            outside_app = within(imported, "replangraph") and not within(imported, "replangraph.app")
            exported = imported in PUBLIC or feature_of(imported) == imported
            if within(module, "replangraph.app") and outside_app and not exported:
                found.append(f"{module} (app) imports {imported}, which is not public API")
    return sorted(found)


PENDING: list[str] = []
"""Known violations, struck off as they are fixed; the list must match exactly, so a new one fails."""


def test_import_contract_holds():
    assert violations() == PENDING


def test_the_contract_sees_a_violation():
    """The checker itself: a feature importing another one is reported."""
    assert feature_of("replangraph.nodes.teams.merge") == "replangraph.nodes.teams"
    assert feature_of("replangraph.queue.tasks") is None
    assert within("replangraph.queue.index", "replangraph.queue")
    assert not within("replangraph.queueing", "replangraph.queue")


# --------------------------------------------------------------------------- modules one small run executes

EXCLUDED = ("replangraph.app", "replangraph.testing")


def executed_modules(run) -> set[str]:
    """The package's modules (not ``app``, ``testing`` or ``__init__`` files) whose code runs during ``run()``."""
    found: set[str] = set()

    def profile(frame, event, _arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        ours = within(module, "replangraph") and not any(within(module, e) for e in EXCLUDED)
        if ours and not frame.f_code.co_filename.endswith("__init__.py"):
            found.add(module)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return found


def look(name: str) -> str:
    """Looks a thing up."""
    return f"about {name}"


def work(request):
    """Read, review the plan, hand the rest off; the child just answers."""
    if "1_dyn_0" in request.prompt:
        return "the rest, done"
    if not request.called("look"):
        return tool_call("look", {"name": "x"})
    if not request.called("replan_review_context"):
        return tool_call("replan_review_context", {})
    return tool_call("replan_split_and_handoff", {"summary": "first half", "tasks": [{"content": "the rest"}]})


def small_run() -> set[str]:
    # The run the issue measured on 0.8.0, whose completion check was off by default.
    model = make_model(plan_of({"id": "1", "content": "look x up"}), work)
    graph = build_graph(model, [look], config=AgentConfig(verify_results=False))
    result: dict = {}

    def run() -> None:
        result.update(graph.invoke({"messages": [("user", "look x up")]}))

    modules = executed_modules(run)
    assert [t["status"] for t in result["tasks"].values()] == ["completed", "completed"]
    assert "the rest, done" in result["final_answer"]
    return modules
