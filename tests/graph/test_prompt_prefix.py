"""Every worker request starts with the same instructions and tool schemas, so providers can cache them:
whatever belongs to one subtask (its id, its instructions, its inputs) comes after that shared prefix."""

from __future__ import annotations

import json

from langchain_core.messages import HumanMessage, SystemMessage
from scripting import make_model, plan_of

from benchmarks.harness import SUBTASK_MARK, Meter, Prefix, serialized
from replangraph import AgentConfig, build_graph
from replangraph.testing import ScriptedRequest, tool_call


def lookup(start: int, count: int = 5) -> str:
    """Read `count` records from record `start`."""
    return "\n".join(f"record-{n}: value {n * 7}" for n in range(start, start + count))


def work(request: ScriptedRequest):
    """Split the big subtask once, read one page in the others, then answer with what was read."""
    if "records 1-8" in request.prompt and not request.tool_results:
        return tool_call("lookup", {"start": 1, "count": 4})
    if "records 1-8" in request.prompt:
        tasks = json.dumps([{"content": "Read records 5-8."}])
        return tool_call("replan_split_and_handoff", {"summary": request.tool_results[-1].content, "tasks": tasks})
    if not request.tool_results:
        start = 5 if "records 5-8" in request.prompt else 9
        return tool_call("lookup", {"start": start, "count": 4})
    return str(request.tool_results[-1].content)


def worker_prefix(verify: bool) -> Prefix:
    plan = plan_of(
        {"id": "read", "content": "Read records 1-8.", "depends_on": []},
        {"id": "more", "content": "Read records 9-12, two days after the first reading.", "depends_on": []},
        {"id": "sum", "content": "Add up every value read.", "depends_on": ["read", "more"]},
    )
    graph = build_graph(make_model(plan, work), tools=[lookup], config=AgentConfig(verify_results=verify))
    meter = Meter()
    graph.invoke({"messages": [("user", "Read 12 records and add up their values.")]}, {"callbacks": [meter]})
    return meter.prefix


def test_worker_requests_share_the_instructions_and_schemas_up_to_the_subtask_text():
    for verify in (False, True):
        prefix = worker_prefix(verify)
        assert prefix.requests >= 8  # four subtasks (one a split child, one with inputs), two turns or more each
        assert prefix.breaks_early is False, prefix.first[prefix.length - 80 : prefix.length + 80]
        shared = prefix.first[: prefix.length]
        assert "replan_split_and_handoff" in shared and "Read 12 records" in shared  # the schemas, the goal
        assert shared.endswith(SUBTASK_MARK)  # the ids differ from there on


def test_the_prefix_check_sees_subtask_text_in_the_instructions():
    prefix = Prefix()
    schemas = [{"type": "function", "function": {"name": "lookup"}}]
    for task_id in ("a", "b"):
        system = SystemMessage(f"You work on subtask {task_id}.")
        prefix.add(serialized([system, HumanMessage(f"{SUBTASK_MARK}{task_id}): read")], schemas))
    assert prefix.breaks_early is True
    assert 0 < prefix.share < 1
