"""Every worker request starts with the same instructions and tool schemas, so providers can cache them:
whatever belongs to one subtask (its id, its instructions, its inputs) comes after that shared prefix."""

from __future__ import annotations

import json
import re

from langchain_core.messages import HumanMessage, SystemMessage
from scripting import make_model, plan_of, subtask_of

from benchmarks.harness import SUBTASK_MARK, Meter, Prefix, serialized
from replangraph import AgentConfig, build_graph
from replangraph.context.fitting import DEPENDENCIES_HEADER
from replangraph.testing import ScriptedRequest, tool_call


def lookup(start: int, count: int = 5) -> str:
    """Read `count` records from record `start`."""
    return "\n".join(f"record-{n}: value {n * 7}" for n in range(start, start + count))


def work(request: ScriptedRequest):
    """Split the big subtask once, read one page in the others, add up what the inputs hold; the check
    finds every result complete. Each reply is picked from the subtask's own instructions."""
    if "Verdict" in request.tool_names:
        return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "every record is there"})
    own = subtask_of(request)
    if own == "Read records 1-8." and not request.tool_results:
        return tool_call("lookup", {"start": 1, "count": 4})
    if own == "Read records 1-8.":
        tasks = json.dumps([{"content": "Read records 5-8."}])
        return tool_call("replan_split_and_handoff", {"summary": request.tool_results[-1].content, "tasks": tasks})
    if own.startswith("Read records") and not request.tool_results:
        return tool_call("lookup", {"start": 5 if "records 5-8" in own else 9, "count": 4})
    if own.startswith("Read records"):
        return str(request.tool_results[-1].content)
    values = [int(v) for v in re.findall(r"value (\d+)", request.prompt)]
    return f"Total: {sum(values)}"


def worker_run(verify: bool) -> tuple[Prefix, dict[str, str]]:
    """The prefix of a run's worker requests, and each subtask's opening text (its first request's prompt)."""
    plan = plan_of(
        {"id": "read", "content": "Read records 1-8.", "depends_on": []},
        {"id": "more", "content": "Read records 9-12, two days after the first reading.", "depends_on": []},
        {"id": "sum", "content": "Add up every value read.", "depends_on": ["read", "more"]},
    )
    openings: dict[str, str] = {}

    def recorded(request: ScriptedRequest):
        found = re.search(r"Your subtask \(([^)]*)\)", request.prompt)
        if found and "Verdict" not in request.tool_names:
            openings.setdefault(found.group(1), request.prompt)
        return work(request)

    graph = build_graph(make_model(plan, recorded), tools=[lookup], config=AgentConfig(verify_results=verify))
    meter = Meter()
    graph.invoke({"messages": [("user", "Read 12 records and add up their values.")]}, {"callbacks": [meter]})
    return meter.prefix, openings


def test_worker_requests_share_the_instructions_and_schemas_up_to_the_subtask_text():
    for verify in (False, True):
        prefix, openings = worker_run(verify)
        assert set(openings) == {"read", "read_dyn_0", "more", "sum"}  # a split child, a subtask with inputs
        assert prefix.requests >= 7  # two turns each, one for the sum
        assert prefix.breaks_early is False, prefix.first[prefix.length - 80 : prefix.length + 80]
        shared = prefix.first[: prefix.length]
        assert "replan_split_and_handoff" in shared and "Read 12 records" in shared  # the schemas, the goal
        assert shared.endswith(SUBTASK_MARK)  # the ids differ from there on


def test_a_handed_off_task_gets_its_parents_inputs_not_its_parents_result():
    _, openings = worker_run(verify=True)
    assert "record-1: value 7" not in openings["read_dyn_0"]  # what read handed off is in its own instructions
    assert DEPENDENCIES_HEADER not in openings["read_dyn_0"]  # read built on nothing
    for n in range(1, 13):  # sum gets read's result, the work it handed off, and more's
        assert f"record-{n}: value {n * 7}" in openings["sum"]
    assert openings["sum"].count("record-1: value 7") == 1


def test_the_prefix_check_sees_subtask_text_in_the_instructions():
    prefix = Prefix()
    schemas = [{"type": "function", "function": {"name": "lookup"}}]
    for task_id in ("a", "b"):
        system = SystemMessage(f"You work on subtask {task_id}.")
        prefix.add(serialized([system, HumanMessage(f"{SUBTASK_MARK}{task_id}): read")], schemas))
    assert prefix.breaks_early is True
    assert 0 < prefix.share < 1
