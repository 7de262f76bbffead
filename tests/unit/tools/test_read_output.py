"""read_output: pages back what was kept out of a window, reading the arguments real models send."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from scripting import workspace_of

from replangraph import AgentConfig
from replangraph.config import resolve_profiles
from replangraph.context.excerpts import NOTE_RE, PAGE_RE, recut
from replangraph.context.fitting import excerpt
from replangraph.context.output_ids import read_saved
from replangraph.context.workspace import open_workspace
from replangraph.nodes.execution.tools_node import ToolRunner
from replangraph.queue.tasks import new_task
from replangraph.testing import tool_call
from replangraph.tools.read_output import page, read_output_tool

TEXT = "".join(f"{n:05d}\n" for n in range(20_000))  # 120,000 characters, every offset recognisable


def reader(page_chars=2_000):
    return read_output_tool(lambda ident: TEXT if ident.strip("'\" ") == "t/c1" else None, lambda: ["t/c1"], page_chars)


def call(tool, **args):
    return tool.invoke({"name": "read_output", "args": args, "id": "r1", "type": "tool_call"}).content


def test_pages_follow_each_other_and_say_where_the_next_starts():
    first = call(reader(), output_id="t/c1")
    header = PAGE_RE.match(first)
    assert header and header.group(2) == "0" and int(header.group(4)) == len(TEXT)
    assert len(first) <= 2_000
    note = NOTE_RE.search(first)
    second = call(reader(), output_id=note.group(1), offset=int(note.group(2)))
    body_first = first[header.end() + 1 : note.start() - 1]
    body_second = second[PAGE_RE.match(second).end() + 1 : NOTE_RE.search(second).start() - 1]
    assert TEXT.startswith(body_first + body_second)


@pytest.mark.parametrize(
    "args",
    [
        {"output_id": "t/c1", "offset": "6,000", "limit": "60"},  # numbers as text
        {"id": ["t/c1"], "offset": 6000.0, "limit": 60},  # another key, a list, a float
        {"output_id": '"t/c1"', "offset": 6000, "limit": 60},  # the id with its quotes
        {"output_id": "t/c1", "start": 6000, "length": 60},  # other names for offset and limit
        {"output_id": "t/c1", "offset": "6000-90000", "max_chars": "60"},  # the range as the note shows it
    ],
)
def test_arguments_are_read_leniently(args):
    text = call(reader(), **args)
    assert text.startswith('output "t/c1", characters 6000-6060 of 120000:\n01000\n')


def test_a_negative_offset_counts_from_the_end_and_the_last_page_has_no_note():
    text = call(reader(), output_id="t/c1", offset=-12)
    assert text.endswith("19998\n19999\n") and not NOTE_RE.search(text)


def test_unknown_ids_and_offsets_past_the_end_get_errors_the_agent_can_act_on():
    assert "no kept output named 'nope'" in call(reader(), output_id="nope") and "t/c1" in call(reader(), output_id="x")
    assert "offset must be below" in call(reader(), output_id="t/c1", offset=999_999)


def test_a_page_is_never_longer_than_a_window_may_hold():
    assert len(page("x" * 80, TEXT, 500, 50_000, max_chars=1_000)) <= 1_000


def test_a_page_cut_again_keeps_a_pointer_to_the_right_place():
    text = page("t/c1", TEXT, 60_000, 3_000, max_chars=4_000)
    smaller, must_save = recut(text, 600, "t/other", kept="t/c1")
    assert not must_save and len(smaller) <= 600
    note = NOTE_RE.search(smaller)
    shown = smaller[PAGE_RE.match(smaller).end() + 1 : note.start() - 1]
    assert TEXT[60_000:].startswith(shown) and int(note.group(2)) == 60_000 + len(shown)


def test_ids_resolve_to_the_goal_results_and_saved_outputs():
    tasks = {
        "a": {**new_task("a", "x", position=[0]), "result": "RESULT-A"},
        "b": new_task("b", "y", position=[1]),
        "a/x": new_task("a/x", "z", position=[2]),
    }
    with open_workspace(workspace_of(b={"call_9": "OUT-9", "history-1": "H1"}, **{"a/x": {"k": "SLASHED"}})):
        check_ids(tasks)


def check_ids(tasks):
    assert read_saved("goal", tasks, "the goal", "b") == "the goal"
    assert read_saved("a/result", tasks, "", "b") == "RESULT-A"
    assert read_saved("b/call_9", tasks, "", "a") == "OUT-9"
    assert read_saved("call_9", tasks, "", "b") == "OUT-9"  # the bare key, in the current subtask
    assert read_saved("b/history-1", tasks, "", "b") == "H1"
    assert read_saved("a/x/k", tasks, "", "b") == "SLASHED"  # a task id with a slash
    assert read_saved("b/missing", tasks, "", "b") is None


def test_the_tools_node_serves_read_output_from_the_task_record():
    profiles = resolve_profiles(None, ())
    task = {**new_task("1", "read", position=[0]), "status": "in_progress"}
    shown = excerpt(TEXT, 1_000, "1/c1")
    window = [
        SystemMessage("s"),
        HumanMessage("h"),
        AIMessage("", tool_calls=[tool_call("dump", {}, call_id="c1")]),
        ToolMessage(shown, tool_call_id="c1", name="dump"),
        AIMessage("", tool_calls=[tool_call("read_output", {"output_id": "1/c1", "offset": 90_000}, call_id="r")]),
    ]
    update = ToolRunner(profiles, AgentConfig(max_observation_chars=1_000))(
        {"tasks": {"1": task}, "windows": {"1": window}, "goal": "g", "workspace": workspace_of(**{"1": {"c1": TEXT}})}
    )
    reply = update["windows"]["1"][-1]
    assert reply.content.startswith('output "1/c1", characters 90000-') and "15000\n" in reply.content
    assert len(reply.content) <= 1_000 and "workspace" not in update  # a page is never kept again
