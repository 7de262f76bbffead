"""The shape a newcomer relies on: which packages may import which, and no module importing itself back.

Import contract (read from the source, not from a run):
- the pure packages (``replangraph.queue``, ``replangraph.context``, ``replangraph.llm``) import nothing from
  ``replangraph.nodes``, ``replangraph.tools`` or ``replangraph.app``; the queue imports no LangGraph at all;
- a feature folder under ``nodes/`` imports no other feature folder;
- ``replangraph.app`` uses only the public API and its own modules: the package itself, ``testing``, ``durable``,
  ``config``, ``state``, ``resume``, and what a package exports (``replangraph.queue``, ``replangraph.tools``),
  never a module inside one;
- nothing outside a feature's folder names it: the engine, the app and the Temporal adapter import no
  ``replangraph.nodes.<feature>`` (the builder, the settings and the app read the registered ones by name from
  ``replangraph.nodes.FEATURES``);
- the engine knows nothing of Temporal: only the adapter (``replangraph.temporal``) and the app that offers it
  (``replangraph.app``) import ``temporalio`` or ``replangraph.temporal``;
- LangGraph's private parts come through one module: only ``replangraph.langgraph_private`` imports
  ``langgraph._internal`` or spells a ``__pregel_`` config key;
- no import cycle among the package's modules, imports inside functions counted (a package's ``__init__``
  importing its own children is no cycle).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

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
    "replangraph.events",  # the events' names (EVENT_NAMES) the CLI prints
    "replangraph.run_config",  # run_settings: what the CLI and Studio set
    "replangraph.nodes",  # FEATURES: the registered features, read by name
    "replangraph.resume",  # RESUME and unfinished: going on with a run that stopped between steps
    "replangraph.queue",
    "replangraph.tools",
    "replangraph.temporal",  # the temporal extra's public API: serve, connect, start (the worker and run commands)
)
"""What ``replangraph.app`` may import besides its own modules."""
TEMPORAL_SIDE = ("replangraph.temporal", "replangraph.app")
"""The only modules that may import ``temporalio`` or ``replangraph.temporal``."""
FEATURE_PACKAGES = {f"replangraph.nodes.{name}" for name in __import__("replangraph.nodes").nodes.FEATURES}
"""The registered features' packages."""
PRIVATE = "replangraph.langgraph_private"
"""The one module that imports LangGraph's private parts."""


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
            found.update(f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_"))  # a private module
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
            if theirs in FEATURE_PACKAGES and mine != theirs:
                found.append(f"{module} names the feature {theirs}")
            engine_nodes = feature_of(imported) == imported and imported not in FEATURE_PACKAGES  # nodes.finalize
            exported = imported in PUBLIC or engine_nodes
            if within(module, "replangraph.app") and outside_app and not exported:
                found.append(f"{module} (app) imports {imported}, which is not public API")
            temporal = within(imported, "temporalio") or within(imported, "replangraph.temporal")
            if temporal and not any(within(module, p) for p in TEMPORAL_SIDE):
                found.append(f"{module} (the engine) imports {imported}")
            if within(imported, "langgraph") and "._" in imported and module != PRIVATE:
                found.append(f"{module} imports {imported} (LangGraph's private parts go through {PRIVATE})")
        if module != PRIVATE and (keys := private_keys(path)):
            found.append(f"{module} spells LangGraph's private config keys {sorted(keys)} (use {PRIVATE})")
    return sorted(found)


def private_keys(path: Path) -> set[str]:
    """The ``__pregel_`` config keys a source file spells as string constants."""
    tree = ast.parse(path.read_text())
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("__pregel_")
    }


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


def test_the_contract_sees_the_engine_reaching_for_temporal_or_private_parts(tmp_path):
    """The checker itself: an engine module importing Temporal or ``langgraph._internal``, or spelling a
    ``__pregel_`` key, is reported."""
    engine = tmp_path / "router.py"
    engine.write_text('import temporalio.workflow\nfrom langgraph._internal._constants import X\nK = "__pregel_send"\n')
    assert imports(engine) == {"temporalio.workflow", "langgraph._internal._constants"}
    assert private_keys(engine) == {"__pregel_send"}
    assert within("temporalio.workflow", "temporalio") and not any(
        within("replangraph.routing", p) for p in TEMPORAL_SIDE
    )


# --------------------------------------------------------------------------- no import cycles


def module_imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules ``module`` imports anywhere in its source (in functions too): ``from a import b``
    counts as ``a.b`` when that is a module, else as ``a``; a package's own descendants are left out for its
    ``__init__`` (re-exporting its children is no cycle)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            children = {f"{node.module}.{alias.name}" for alias in node.names} & known
            found.update(children if len(children) == len(node.names) else {node.module, *children})
    is_package = path.name == "__init__.py"
    return {m for m in found & known if m != module and not (is_package and within(m, module))}


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``edges`` (module -> modules it imports): each strongly connected group of more
    than one module, sorted (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def import_edges() -> dict[str, set[str]]:
    found = sources()
    return {module: module_imports(module, path, set(found)) for module, path in found.items()}


def test_no_module_imports_itself_back():
    assert cycles(import_edges()) == []


def test_the_cycle_check_sees_a_cycle(tmp_path):
    """The checker itself: a cycle planted through an import inside a function is reported; a package
    re-exporting its children is not a cycle."""
    (tmp_path / "pkg").mkdir()
    init, child, other = tmp_path / "pkg" / "__init__.py", tmp_path / "pkg" / "child.py", tmp_path / "other.py"
    init.write_text("from replangraph.pkg.child import thing\n")
    child.write_text("from replangraph.pkg import other_child\n\n\ndef thing():\n    import replangraph.other\n")
    other.write_text("from replangraph.pkg.child import thing\n")
    known = {"replangraph.pkg", "replangraph.pkg.child", "replangraph.other"}
    edges = {
        "replangraph.pkg": module_imports("replangraph.pkg", init, known),
        "replangraph.pkg.child": module_imports("replangraph.pkg.child", child, known),
        "replangraph.other": module_imports("replangraph.other", other, known),
    }
    assert edges["replangraph.pkg"] == set()
    assert cycles(edges) == [["replangraph.other", "replangraph.pkg.child"]]
    assert cycles({**edges, "replangraph.other": set()}) == []
    with_pkg = {**edges, "replangraph.pkg": {"replangraph.pkg.child"}, "replangraph.other": set()}
    assert cycles(with_pkg) == [["replangraph.pkg", "replangraph.pkg.child"]]  # not an __init__: a cycle
