"""The structure benchmark (issue 40) computes its figures: the smallest cells of ``--quick``, a table row per agent
and the targets line. Whether the targets are met is what the benchmark measures, not what this test checks."""

from __future__ import annotations

import io
import json

from benchmarks import structure


def test_the_smallest_quick_cells_print_and_save_their_figures(tmp_path):
    """next-5 at N = 19 and pages at N = 300 (replangraph and ReAct), as --quick runs them."""
    out, path = io.StringIO(), tmp_path / "structure.json"
    code = structure.main(["--quick", "--worlds", "next-5", "pages", "--json", str(path)], out=out)
    assert code == 0  # without --strict, missed targets do not fail the run
    text = out.getvalue()
    assert "| next-5 | 19 | replangraph |" in text
    assert "| pages | 300 | ReAct |" in text
    assert text.rstrip().splitlines()[-1].startswith("targets met: ")
    saved = json.loads(path.read_text())
    rows = {(row["world"], row["size"], row["agent"]): row for row in saved["rows"]}
    assert set(rows) == {("next-5", 19, "replangraph"), ("pages", 300, "replangraph"), ("pages", 300, "ReAct")}
    for row in rows.values():
        assert row["error"] is None
        assert 0 < row["recall"] <= 1 and row["recovered"] == round(row["recall"] * row["size"])
        assert row["calls"] > 0 and row["prompt_tokens"] > 0 and len(row["wall_s"]) == 1
    assert rows[("pages", 300, "replangraph")]["subtasks"] >= 1
    assert rows[("pages", 300, "ReAct")]["recall"] == 1.0  # the persona reads every page in a plain loop
    assert saved["targets_applicable"] == len(saved["targets"]) == 3  # recall 1.0 twice, >= ReAct once


def test_a_small_parallel_plan_gets_its_speedup_and_subtasks(monkeypatch):
    monkeypatch.setattr(structure.ParallelWorld, "DELAY_S", 0.01)
    rows, speedup = structure.parallel_plan(4, "questions", 1.0, runs=1)
    assert [row.recall for row in rows] == [1.0, 1.0]
    assert all(row.subtasks and row.first.calls > 0 for row in rows)
    assert speedup.by_min > 0 and speedup.wide.subtasks == 4  # 4 tasks at max_concurrency 32: none merged
