"""Layouts for `replangraph.app.pictures`, plain functions without matplotlib: the graph in
layers (`graph_layers`, `graph_layout`) and the subtask queue as an outline tree (`task_tree_layout`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

START, END = "__start__", "__end__"


def _reachable(start: str, edges: Sequence[tuple[str, str]]) -> list[str]:
    """Nodes reachable from ``start``, in breadth-first order (``start`` first)."""
    found, frontier = [start], [start]
    while frontier:
        nxt = []
        for node in frontier:
            for source, target in edges:
                if source == node and target not in found:
                    found.append(target)
                    nxt.append(target)
        frontier = nxt
    return found


def _acyclic_order(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> list[str]:
    """An order of ``nodes`` in which few edges point backwards (Eades, Lin and Smyth's greedy
    heuristic): sinks go to the end, sources to the front, else the node with the most
    outgoing minus incoming edges goes next. Ties keep the given order."""
    outs: dict[str, set[str]] = {n: set() for n in nodes}
    ins: dict[str, set[str]] = {n: set() for n in nodes}
    for source, target in edges:
        if source != target and source in outs and target in outs:
            outs[source].add(target)
            ins[target].add(source)
    alive = dict.fromkeys(nodes)  # insertion-ordered set
    front: list[str] = []
    back: list[str] = []
    while alive:
        changed = True
        while changed:
            changed = False
            for node in list(alive):
                if not outs[node] & alive.keys():
                    back.insert(0, node)
                    del alive[node]
                    changed = True
            for node in list(alive):
                if not ins[node] & alive.keys():
                    front.append(node)
                    del alive[node]
                    changed = True
        if alive:
            best = max(alive, key=lambda n: len(outs[n] & alive.keys()) - len(ins[n] & alive.keys()))
            front.append(best)
            del alive[best]
    return front + back


def graph_layers(
    nodes: Sequence[str], edges: Sequence[tuple[str, str]], start: str = START, end: str = END
) -> dict[str, int]:
    """The rank (row, 0 at the top) of every node reachable from ``start``.

    Cycles are broken by an order with few backward edges (`_acyclic_order`, ``start``
    first, ``end`` last); each node then sits one row below its lowest forward
    predecessor (longest path), and ``end`` on a row of its own at the bottom. Rank by
    plain BFS distance would put every node one hop from a hub (replangraph's
    ``commands`` node reaches them all) on a single row.
    """
    if start not in nodes:
        return {}
    reached = _reachable(start, edges)
    inner = [n for n in nodes if n in reached and n not in (start, end)]
    order = [start, *_acyclic_order(inner, edges), *([end] if end in reached else [])]
    index = {node: i for i, node in enumerate(order)}
    rank = dict.fromkeys(order, 0)
    for node in order[1:]:
        before = [rank[s] for s, t in edges if t == node and s in index and index[s] < index[node]]
        rank[node] = max(before, default=0) + 1
    if end in rank:
        rank[end] = max((r for n, r in rank.items() if n != end), default=0) + 1
    return rank


def graph_layout(
    nodes: Sequence[str],
    edges: Sequence[tuple[str, str]],
    start: str = START,
    end: str = END,
    isolated: bool = True,
) -> dict[str, tuple[float, float]]:
    """``{node: (x, y)}`` for a layered drawing: ``y = -rank`` (`graph_layers`), nodes of a row
    spread one unit apart around ``x = 0`` and ordered by where their predecessors sit (two
    barycentre sweeps). Nodes that ``start`` does not reach (LangGraph's error handlers, which run
    when their node raises) go on a row of their own below, or are left out when not ``isolated``."""
    rank = graph_layers(nodes, edges, start, end)
    rows: dict[int, list[str]] = {}
    for node in sorted(rank, key=lambda n: (rank[n], list(rank).index(n))):
        rows.setdefault(rank[node], []).append(node)
    x: dict[str, float] = {}

    def spread(row: list[str]) -> None:
        for i, node in enumerate(row):
            x[node] = i - (len(row) - 1) / 2

    for row in rows.values():
        spread(row)
    for _ in range(2):
        for r in sorted(rows)[1:]:
            parents = {node: [x[s] for s, t in edges if t == node and s in rank and rank[s] < r] for node in rows[r]}
            rows[r].sort(key=lambda n: sum(parents[n]) / len(parents[n]) if parents[n] else x[n])
            spread(rows[r])
    layout = {node: (x[node], -float(rank[node])) for node in rank}
    rest = [n for n in nodes if n not in rank]
    if isolated and rest:
        bottom = min((y for _, y in layout.values()), default=1.0) - 1
        layout.update({node: (i - (len(rest) - 1) / 2, bottom) for i, node in enumerate(rest)})
    return layout


def ordered_tasks(tasks: Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The tasks in queue order (``position``), a dict by id or a list alike."""
    values = list(tasks.values()) if isinstance(tasks, Mapping) else list(tasks)
    order = {id(t): i for i, t in enumerate(values)}
    return sorted(values, key=lambda t: (tuple(t.get("position") or ()), order[id(t)]))


def task_tree_layout(
    tasks: Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]],
) -> dict[str, tuple[float, float]]:
    """``{task id: (x, y)}`` for an outline tree: one row per task, top down (``y = -row``);
    planned and replanned tasks (no ``parent_id``, or a parent not in ``tasks``) are roots at
    ``x = 0``, each dynamic task on the row right after its parent and the parent's earlier
    children (with their own children), one step to the right (``x = parent's x + 1``).
    Siblings keep queue order (``position``)."""
    listed = ordered_tasks(tasks)
    ids = {t["id"] for t in listed}
    children: dict[str | None, list[str]] = {}
    for task in listed:
        parent = task.get("parent_id")
        children.setdefault(parent if parent in ids and parent != task["id"] else None, []).append(task["id"])
    layout: dict[str, tuple[float, float]] = {}
    stack = [(task_id, 0) for task_id in reversed(children.get(None, []))]
    while stack:
        task_id, depth = stack.pop()
        if task_id in layout:  # a parent cycle in hand-made input: draw each task once
            continue
        layout[task_id] = (float(depth), -float(len(layout)))
        stack.extend((child, depth + 1) for child in reversed(children.get(task_id, [])))
    for task in listed:  # only cycles leave tasks unplaced: show them as roots
        if task["id"] not in layout:
            layout[task["id"]] = (0.0, -float(len(layout)))
    return layout
