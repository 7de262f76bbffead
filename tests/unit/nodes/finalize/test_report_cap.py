"""The fallback report has a size cap whatever the queue holds (issue 23): long lists end in a line naming
the output id their whole list is kept under, long results are excerpts naming theirs."""

from __future__ import annotations

import re

from scenarios import huge_queue

from replangraph import AgentConfig
from replangraph.durable import kept_output, kept_output_ids
from replangraph.nodes.finalize.finalizer import Finalizer
from replangraph.nodes.finalize.report import REPORT_LISTED, REPORT_MAX_CHARS, report_with_lists
from replangraph.queue.tasks import new_task
from replangraph.testing import ScriptedChatModel

DONE, FAILED, WAITING = 3_000, 1_500, 500


def test_the_report_of_a_huge_queue_is_capped_and_its_whole_lists_are_kept():
    tasks = huge_queue(DONE, FAILED, WAITING)
    goal = "Extract the whole catalogue " * 2_000
    finalizer = Finalizer(ScriptedChatModel(respond=lambda request: "unused"), AgentConfig())
    update = finalizer({"tasks": tasks, "goal": goal, "replans": [{"outcome": "gave_up"}] * 2})
    report = update["final_answer"]
    assert update["stop_reason"] and report.startswith("The run for this goal stopped")
    assert len(report) <= REPORT_MAX_CHARS, len(report)
    assert "## Completed" in report and "## Not finished" in report and "## Suggested next steps" in report
    assert f"- … and {DONE - REPORT_LISTED} more; the whole list is kept as output report-1/completed" in report
    not_finished = (
        f"- … and {FAILED + WAITING - REPORT_LISTED} more; the whole list is kept as output report-1/not-finished"
    )
    assert not_finished in report
    state = {"tasks": tasks, "goal": goal, "workspace": update["workspace"]}
    assert kept_output_ids(state, None, "t")[-2:] == ["report-1/completed", "report-1/not-finished"]
    completed = kept_output(state, None, "t", "report-1/completed")
    unfinished = kept_output(state, None, "t", "report-1/not-finished")
    assert re.findall(r"^- (t\d+) \(completed\)", completed, re.M) == [f"t{n}" for n in range(DONE)]
    listed = re.findall(r"^- (t\d+) \((failed|skipped)\)", unfinished, re.M)
    assert [t for t, _ in listed] == [f"t{n}" for n in range(DONE, DONE + FAILED + WAITING)]
    assert "Result (t0/result): PAGE-0: " in completed and "Why: shop refused page 3000" in unfinished
    assert len(completed) + len(unfinished) < 3_000_000  # one short line a subtask: the results stay where they are
    assert 'read them with read_output(output_id="t0/result"' in report  # a long result points at its whole text
    assert "every result and partial result, whole, in plan order, is output results (" in report
    whole = kept_output(state, None, "t", "results")  # read from the results, not kept twice
    assert whole.count("price, size, colour; " * 300) == DONE and whole.count("half " * 500) == FAILED
    assert re.findall(r"^\[(t\d+)\] ", whole, re.M) == [f"t{n}" for n in range(DONE + FAILED)]


def test_a_small_queue_s_report_shows_every_result_whole_and_keeps_no_list():
    tasks = {f"t{n}": new_task(f"t{n}", f"page {n}", position=[n]) for n in range(3)}
    tasks["t0"].update(status="completed", result="PAGE-0 " * 2_000)
    tasks["t1"].update(status="failed", error="refused", result="PAGE-1 half")
    report = report_with_lists("the catalogue", tasks, "stopped")[0]
    assert "Result: " + "PAGE-0 " * 2_000 + "\n" in report
    assert "Partial result: PAGE-1 half" in report and "whole list" not in report and "output results" not in report
    assert "- Run the unfinished subtasks (t2)" in report
