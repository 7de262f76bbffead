"""Rule-based decomposition: a useful plan from the goal's verbs when the planner model fails.

"Find X and Y, compare them and write a report" becomes a gather step, an
analysis step that depends on it, and a final step that depends on the analysis.
"""

from __future__ import annotations

import re

from replangraph.queue.tasks import preview

GATHER = ("search", "find", "look up", "lookup", "research", "collect", "gather", "extract", "fetch", "list", "get")
ANALYSE = ("analyse", "analyze", "compare", "evaluate", "assess", "rank", "review", "contrast")
WRITE = ("write", "report", "summarise", "summarize", "draft", "present", "compose", "produce")
CLAUSE_PREVIEW_CHARS = 300
KINDS = (("gather", GATHER), ("analysis", ANALYSE), ("final", WRITE))
CLAUSE_BREAK = re.compile(r"\s*(?:[;,.]\s*(?:and\s+|then\s+|and then\s+)?|\s+and then\s+|\s+then\s+|\s+and\s+(?=\w+))")


def clause_kind(clause: str) -> str | None:
    """gather / analysis / final by the clause's leading verb, else None."""
    words = clause.lower().strip()
    for kind, verbs in KINDS:
        if any(words == v or words.startswith(v + " ") for v in verbs):
            return kind
    return None


def split_clauses(goal: str) -> list[str]:
    """The goal cut at commas, semicolons, 'and', 'then'; parts without a known verb join the previous one."""
    parts = [p.strip() for p in CLAUSE_BREAK.split(goal) if p and p.strip()]
    clauses: list[str] = []
    for part in parts:
        if clauses and clause_kind(part) is None:
            clauses[-1] = f"{clauses[-1]} and {part}"
        else:
            clauses.append(part)
    return clauses


def rule_based_plan(goal: str, max_tasks: int | None = None) -> list[dict] | None:
    """Plan specs (id, content, agent_type, depends_on) from the goal's verbs, or None if none is recognised.

    More clauses than ``max_tasks`` are merged into one task per kind; each task holds a
    preview of its clause (the whole goal is in every subtask's prompt anyway).
    """
    steps: dict[str, list[str]] = {"gather": [], "analysis": [], "final": []}
    for clause in split_clauses(goal):
        kind = clause_kind(clause)
        if kind is None:  # only the first clause can lack a verb; later ones were merged
            return None
        steps[kind].append(clause)
    if max_tasks is not None and sum(map(len, steps.values())) > max_tasks:
        steps = {kind: ["; ".join(clauses)] if clauses else [] for kind, clauses in steps.items()}
        if sum(map(len, steps.values())) > max_tasks:
            return None
    return _plan(steps)


def _plan(steps: dict[str, list[str]]) -> list[dict] | None:
    if sum(map(len, steps.values())) < 2:
        return None  # one recognised step is no better than the single-task fallback
    specs: list[dict] = []
    previous: list[str] = []
    for kind in ("gather", "analysis", "final"):
        ids = []
        for clause in steps[kind]:
            task_id = str(len(specs) + 1)
            content = preview(f"{clause[0].upper()}{clause[1:]}", CLAUSE_PREVIEW_CHARS)
            specs.append({"id": task_id, "content": content, "agent_type": "default", "depends_on": list(previous)})
            ids.append(task_id)
        if ids:
            previous = ids
    return specs
