"""The engine benchmark's three measurements, at tiny sizes: structure and correctness, not timing."""

from __future__ import annotations

import io
import os
import sqlite3
import sys
from pathlib import Path

import pytest
from clocks import InFlight, Ticking
from langchain_core.messages import HumanMessage

from benchmarks import bare_parallel, durability_table, engine, splits
from benchmarks.__main__ import BENCHMARKS
from replangraph.testing import ScriptedRequest


def test_engine_is_registered_and_quick_means_one_run():
    assert BENCHMARKS["engine"] == "benchmarks.engine"
    assert engine.parse(["--quick"]).runs == 1
    assert engine.parse([]).runs == 3


def test_overhead_table_has_a_row_per_size_and_the_flatness_line():
    out = io.StringIO()
    medians = engine.overhead_table([5, 10], runs=1, out=out)
    text = out.getvalue()
    assert len(medians) == 2 and all(m > 0 for m in medians)
    assert "| 5 |" in text and "| 10 |" in text
    assert "ms per superstep" in text and "Flatness, max/min" in text


def test_bare_superstep_time_is_the_loops_time_over_its_steps(monkeypatch):
    clock = Ticking(1.0)  # each reading one second after the last: the loop "takes" 1 s
    monkeypatch.setattr(engine, "time", clock)
    assert engine.bare_superstep_seconds(50) == 1.0 / 50
    assert clock.reads == 2  # once before the loop, once after


@pytest.mark.system
def test_scale_child_completes_every_subtask_and_reports_the_database():
    result = engine.scale_in_child(10, max_seconds=60)
    assert result["n"] == 10 and result["completed"] == 10
    assert result["db_bytes"] > 0 and result["rss_kb"] > 0 and result["wall_s"] > 0
    assert engine.scale_row("10", result).endswith("| 10/10 ✓ |")


def test_scale_run_with_a_big_output_completes(tmp_path):
    result = engine.scale_run(3, tmp_path / "db", big_index=2)
    assert result["completed"] == 3 and result["db_bytes"] > 0


@pytest.mark.system
def test_a_child_past_its_limit_is_a_timed_out_row():
    result = engine.scale_in_child(10, max_seconds=0.01)
    assert "timed out" in result["error"]
    assert "timed out" in engine.scale_row("10", result)
    assert "did not finish" in engine.scale_targets([result])


def test_scale_targets_judge_bytes_per_subtask():
    rows = [{"n": n, "wall_s": 1.0, "rss_kb": 100_000, "db_bytes": 1_000 * n} for n in (100, 5000)]
    assert "max/min: 1.00" in engine.scale_targets(rows) and "✗" not in engine.scale_targets(rows)


def test_four_subtasks_run_together_at_concurrency_four(way):
    """Each call waits until all four are running (failing after a minute if they never are); table 3 of the
    benchmark prints what that is worth in time."""
    meter = InFlight(barrier_parties=4)
    engine.parallel_run(4, 4, meter.wrap(engine.sleeper(0)), way)
    assert meter.calls == 4 and meter.peak == 4


def test_under_ainvoke_more_subtasks_run_together_than_asyncio_s_default_pool_holds():
    """What the async nodes are for: asyncio's default pool (cores + 4 threads) no longer caps a run."""
    n = min(32, (os.cpu_count() or 1) + 4) + 1
    meter = InFlight(barrier_parties=n)
    engine.parallel_run(n, n, meter.wrap(engine.sleeper(0)), "ainvoke")
    assert meter.calls == n and meter.peak == n


def test_one_subtask_at_a_time_at_concurrency_one(way):
    meter = InFlight()
    engine.parallel_run(4, 1, meter.wrap(engine.sleeper(0.01)), way)
    assert meter.calls == 4 and meter.peak == 1


def test_parallel_seconds_is_the_runs_time_with_sleeping_tools(monkeypatch, way):
    clock = Ticking(1.0)
    monkeypatch.setattr(engine, "time", clock)  # the tools' sleep too: it moves the clock, it does not wait
    assert engine.parallel_seconds(3, 5.0, concurrency=3, way=way) == 1.0 + 3 * 5.0
    assert clock.slept == [5.0, 5.0, 5.0]


def test_parallel_table_has_a_row_per_slow_part_way_and_concurrency(monkeypatch):
    monkeypatch.setattr(engine, "time", Ticking(1.0))
    out = io.StringIO()
    medians = engine.parallel_table([1, 2], runs=1, out=out, tasks=2)
    ways = ("invoke", "ainvoke", "bare")
    assert set(medians) == {f"{slow} {way}" for slow in ("tool", "model") for way in ways}
    assert all(set(m) == {1, 2} for m in medians.values())
    rows = [line.split("|")[1:4] for line in out.getvalue().splitlines() if line.startswith(("| tool", "| model"))]
    labels = ["`invoke`", "`ainvoke`", "`invoke`, LangGraph alone"]
    assert [[cell.strip() for cell in row] for row in rows] == [
        [slow, label, k] for slow in ("tool", "model") for label in labels for k in ("1", "2")
    ]


def test_langgraph_alone_takes_replangraph_s_supersteps():
    """The bare graph of table 3's LangGraph-alone rows runs the same supersteps per subtask as replangraph."""

    def supersteps(graph, given):
        names = [c["name"] for c in graph.stream(given, stream_mode="tasks") if "input" in c]
        return [name for name in names if name not in ("run_start", "planner", "finalize", "start")]

    ours = supersteps(engine.parallel_graph(2, 2, engine.sleeper(0)), {"messages": [("user", "Work on both.")]})
    bare = supersteps(bare_parallel.bare_parallel_graph(2, 2, engine.sleeper(0)), {})
    calls = ["tool_call", "tool_call"]  # started by the tools node, in its superstep
    checks = ["node_call", "node_call"]  # started by the completion check, in its superstep
    expected = ["executor", "executor", "tools", *calls, "executor", "executor", "tools", "verifier", *checks, "tools"]
    assert ours == [*expected, "goal_check"]
    assert bare == [name.replace("verifier", "verify").replace("goal_check", "check_goal") for name in ours]


def test_langgraph_alone_runs_at_most_its_concurrency_and_checks_every_subtask():
    for concurrency, parties in ((4, 4), (1, None)):
        meter = InFlight(barrier_parties=parties)
        bare_parallel.bare_parallel_run(4, concurrency, meter.wrap(engine.sleeper(0)))
        assert meter.calls == 4 and meter.peak == concurrency


def test_a_slow_model_takes_its_time_over_each_answer(monkeypatch, way):
    clock = Ticking(0.0)
    monkeypatch.setattr(engine, "time", clock)
    awaited: list[float] = []

    async def record(seconds: float) -> None:
        awaited.append(seconds)

    monkeypatch.setattr(engine, "awaited_latency", record)
    engine.parallel_seconds(3, 5.0, concurrency=3, way=way, sleeping="model")
    assert sorted(clock.slept) == [0.0, 0.0, 0.0] + ([5.0] * 3 if way == "invoke" else [])  # the tools take nothing
    assert awaited == ([5.0] * 3 if way == "ainvoke" else [])  # each answer 5 s: awaited on the async path


def test_subtask_index_reads_the_item_from_the_request():
    prompt = HumanMessage("Your subtask (3): Read item 42 and report it")
    request = ScriptedRequest(messages=[prompt], tool_names=("read_item",))
    assert engine.subtask_index(request) == 42


def test_durability_table_has_a_row_per_mode_with_its_writes():
    out = io.StringIO()
    medians = durability_table.durability_table(3, runs=1, out=out)
    text = out.getvalue()
    assert set(medians) == {"sync", "async"} and all(m > 0 for m in medians.values())
    rows = [line for line in text.splitlines() if line.startswith(("| sync |", "| async |"))]
    assert len(rows) == 2 and rows[1].split("|")[3].strip() == "1.00×"
    writes = {row.split("|")[4].strip() for row in rows}
    assert len(writes) == 1  # both modes write the same checkpoints; only when the run waits for them differs


def test_durability_run_counts_the_checkpoints_it_wrote(tmp_path):
    result = durability_table.durability_run(2, tmp_path / "run.sqlite", "sync")
    with sqlite3.connect(tmp_path / "run.sqlite") as connection:
        saved = connection.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    assert result["put"] == saved > 0 and result["put_writes"] > 0
    assert result["wall_s"] > result["put_s"] > 0 and result["put_writes_s"] > 0


def test_splits_is_registered_and_quick_is_two_small_sizes():
    assert BENCHMARKS["splits"] == "benchmarks.splits"
    assert splits.parse(["--quick"]).quick and splits.QUICK_SIZES == (100, 500)


def test_a_split_run_completes_every_subtask_the_check_queues(tmp_path):
    result = splits.split_run(50, tmp_path / "db")
    assert result["subtasks"] == 10 == result["completed"]  # the first subtask and its 9 follow-ups
    assert result["cpu_s"] > 0 and result["wall_s"] > 0 and result["db_bytes"] > 0


def test_with_the_check_off_the_compliant_persona_splits_the_same_shape(tmp_path):
    result = splits.split_run(50, tmp_path / "db", check=False)
    assert result["subtasks"] == 10 == result["completed"] and not result["check"]


def test_split_targets_judge_cpu_and_bytes_per_subtask_and_the_largest_run():
    rows = [
        {"n": n, "subtasks": n // 5, "cpu_s": n / 500, "wall_s": n / 200, "db_bytes": 80 * n} for n in (100, 20_000)
    ]
    verdict = splits.split_targets(rows)
    assert "CPU per subtask, max/min: 1.00" in verdict and "✗" not in verdict
    rows[-1]["cpu_s"] *= 2  # CPU per subtask doubles at 20,000 items
    assert "max/min: 2.00 (target ≤ 1.3) ✗" in splits.split_targets(rows)
    assert "did not finish" in splits.split_targets([*rows, {"n": 5, "check": True, "error": "timed out"}])


@pytest.mark.system
def test_quick_splits_table_runs_each_size_in_a_child_process():
    out = io.StringIO()
    assert splits.main(["--quick"], out=out) == 0
    rows = [line for line in out.getvalue().splitlines() if line.startswith(("| 100 |", "| 500 |"))]
    assert len(rows) == 2 and all("✓ |" in row for row in rows)
    assert "CPU per subtask, max/min" in out.getvalue()


@pytest.mark.system
def test_server_table_runs_each_graph_through_langgraph_dev():
    """Table 5 at a tiny size: a real ``langgraph dev`` serves both graphs; every run completes every subtask."""
    from benchmarks import server_parallel

    if not (Path(sys.executable).parent / "langgraph").exists():
        pytest.skip("no langgraph executable (pip install -e '.[test]')")
    out = io.StringIO()
    medians = server_parallel.server_table([1, 2], runs=1, out=out, tasks=2)
    assert set(medians) == {"tool", "model"} and all(set(m) == {1, 2} for m in medians.values())
    assert "| tool | 2 |" in out.getvalue() and "| model | 2 |" in out.getvalue()
