"""A turn whose calls include a hand-off (or a replan request): every other call of that turn still runs,
and what it returned reaches the subtask's result, its kept outputs, or both."""

from __future__ import annotations

import json
import threading
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from scripting import kept

from replangraph import AgentConfig
from replangraph.config import AgentProfile, resolve_profiles
from replangraph.nodes.execution.tools_node import ToolRunner
from replangraph.nodes.human.hooks import ScreenQuestions
from replangraph.queue.index import apply_writes
from replangraph.queue.plans import find_cycle
from replangraph.queue.tasks import new_task, ordered
from replangraph.testing import tool_call
from replangraph.tools import REQUEST_REPLAN_TOOL, REVIEW_TOOL, SPLIT_TOOL
from replangraph.tools.replan_toolkit.toolkit import ANOTHER_SUMMARY, TURN_OUTPUTS


def running_queue():
    return {
        "1": {**new_task("1", "extract 19 products", position=[0], agent_type="browser"), "status": "in_progress"},
        "2": new_task("2", "write the report", position=[1], depends_on=["1"]),
    }


def turn(*calls):
    window = [SystemMessage("s"), HumanMessage("h"), AIMessage("", tool_calls=list(calls))]
    return {"tasks": running_queue(), "windows": {"1": window}, "goal": "top 19"}


def fetch(start: int, count: int = 5) -> str:
    """Reads `count` products from rank `start`."""
    if start < 0:
        raise ValueError(f"no rank {start}")
    return "\n".join(f"item-{n}" for n in range(start, start + count))


def runner(*tools, wrappers=(), **config):
    profiles = resolve_profiles({"browser": AgentProfile(tools=[fetch, *tools])}, ())
    return ToolRunner(profiles, AgentConfig(**config), feature_wrappers=list(wrappers))


def handoff(*contents, summary="products 1-5 were read earlier", call_id="split"):
    args = {"summary": summary, "tasks": json.dumps([{"content": c} for c in contents])}
    return tool_call(SPLIT_TOOL, args, call_id=call_id)


def result(update, task_id="1") -> str:
    """The whole result the update keeps for a task."""
    entry = update["workspace"][f"plan:1:step:{task_id}"][":result"]
    return entry["content"]


def children(update) -> dict:
    return {k: v for k, v in update["tasks"].items() if k.startswith("1_dyn_")}


def test_the_calls_before_and_after_a_handoff_run_and_follow_its_summary_in_the_result():
    update = runner()(
        turn(
            tool_call("fetch", {"start": 1}, call_id="before"),
            handoff("products 11-15", "products 16-19"),
            tool_call("fetch", {"start": 6}, call_id="after"),
        )
    )
    own = update["tasks"]["1"]
    assert own["status"] == "completed" and not own.get("replan_request")
    text = result(update)
    assert text.startswith("products 1-5 were read earlier\n\n" + TURN_OUTPUTS)  # the summary stays the head
    assert all(f"item-{n}" in text for n in range(1, 11))
    assert '[fetch {"start": 1}] (output 1/before)' in text and '[fetch {"start": 6}] (output 1/after)' in text
    assert kept(update, "1")["after"] == fetch(6)  # readable with read_output too
    assert sorted(children(update)) == ["1_dyn_0", "1_dyn_1"] and update["windows"] == {"1": None}


def test_a_long_output_of_a_handoff_turn_is_an_excerpt_pointing_at_its_kept_text():
    update = runner(max_observation_chars=200)(
        turn(handoff("products 6-10"), tool_call("fetch", {"start": 1, "count": 300}, call_id="big"))
    )
    text = result(update)
    assert 'read_output(output_id="1/big"' in text and "item-1\n" in text and "item-300" in text
    assert len(text) < 200 + 400  # the summary, the labels and one excerpt: not the whole output
    assert kept(update, "1")["big"] == fetch(1, 300)


def test_two_handoffs_in_one_turn_queue_both_and_keep_both_summaries():
    events = []
    with patch("replangraph.events.get_stream_writer", return_value=events.append):
        update = runner()(
            turn(
                handoff("products 6-10", "products 11-15", summary="A", call_id="s1"),
                handoff("products 11-15", "products 16-19", summary="B", call_id="s2"),
            )
        )
    assert [e["event"] for e in events] == ["dynamic_tasks_added", "step_completed"]  # one ending, announced once
    assert events[0]["task_ids"] == ["1_dyn_0", "1_dyn_1", "1_dyn_2"]
    assert [t["content"] for t in ordered(children(update))] == ["products 6-10", "products 11-15", "products 16-19"]
    assert result(update) == f"A\n\n{ANOTHER_SUMMARY}\nB"
    assert not update["tasks"]["1"].get("replan_request")


def test_a_second_handoff_that_is_refused_keeps_what_it_sent_and_flags_the_replanner():
    bad = tool_call(SPLIT_TOOL, {"summary": "B: item-7", "tasks": '{"range": "16-19"}'}, call_id="s2")
    update = runner()(turn(handoff("products 6-15", summary="A", call_id="s1"), bad))
    own = update["tasks"]["1"]
    assert own["status"] == "completed" and list(children(update)) == ["1_dyn_0"]
    text = result(update)
    assert text.startswith("A\n\n") and "(failed)" in text and "Summary it sent: B: item-7" in text
    assert "still yours" not in text  # it is not: the subtask has ended
    assert "keys given: range" in own["replan_request"]["reason"]


def test_a_handoff_and_a_replan_request_in_either_order_hand_off_and_ask_the_replanner():
    for calls in (
        [handoff("products 6-19"), tool_call(REQUEST_REPLAN_TOOL, {"reason": "the site changed"}, call_id="r")],
        [tool_call(REQUEST_REPLAN_TOOL, {"reason": "the site changed"}, call_id="r"), handoff("products 6-19")],
    ):
        update = runner()(turn(*calls))
        own = update["tasks"]["1"]
        assert own["status"] == "completed" and list(children(update)) == ["1_dyn_0"]
        assert own["replan_request"] == {"trigger": "tool", "reason": "the site changed"}
        assert not own.get("error")


def test_a_replan_request_keeps_the_turns_outputs_as_its_partial_result():
    update = runner()(
        turn(tool_call(REQUEST_REPLAN_TOOL, {"reason": "blocked"}), tool_call("fetch", {"start": 1}, call_id="f"))
    )
    own = update["tasks"]["1"]
    assert own["status"] == "failed" and own["replan_request"]["trigger"] == "tool"
    assert result(update).startswith(TURN_OUTPUTS) and "item-5" in result(update)


def test_a_question_in_a_handoff_turn_is_not_asked_and_kept_in_the_result():
    config = AgentConfig(max_clarifications=2)
    update = runner(wrappers=[ScreenQuestions(config)], max_clarifications=2)(
        turn(tool_call("ask_user", {"question": "Which currency?"}, call_id="q"), handoff("products 6-19"))
    )
    assert update["tasks"]["1"]["status"] == "completed" and not update["tasks"]["1"].get("replan_request")
    text = result(update)
    assert '[ask_user {"question": "Which currency?"}] (failed) (output 1/q)' in text
    assert "nobody waits for the answer" in text


def test_a_question_without_a_handoff_still_waits_for_the_user():
    config = AgentConfig(max_clarifications=2)
    update = runner(wrappers=[ScreenQuestions(config)], max_clarifications=2)(
        turn(tool_call("ask_user", {"question": "Which currency?"}, call_id="q"), tool_call("fetch", {"start": 1}))
    )
    window = update["windows"]["1"]
    assert [m.name for m in window if isinstance(m, ToolMessage)] == ["fetch"]  # the ask node answers the question


def test_a_failing_tool_in_a_handoff_turn_is_in_the_result_and_flags_the_replanner():
    update = runner()(turn(tool_call("fetch", {"start": -1}, call_id="bad"), handoff("products 6-19")))
    own = update["tasks"]["1"]
    assert own["status"] == "completed" and own["replan_request"]["trigger"] == "failure"
    assert 'the fetch call {"start": -1} failed' in own["replan_request"]["reason"]
    assert "[fetch" in result(update) and "(failed)" in result(update) and "no rank -1" in result(update)


def test_a_review_after_the_handoff_is_not_a_failure():
    update = runner()(turn(handoff("products 6-19"), tool_call(REVIEW_TOOL, {})))
    assert not update["tasks"]["1"].get("replan_request") and result(update) == "products 1-5 were read earlier"


@pytest.fixture
def stuck():
    """A tool that blocks until the test ends (a call past the step's deadline)."""
    release = threading.Event()

    def stuck() -> str:
        """Waits until released."""
        release.wait(30)
        return "late"

    yield stuck
    release.set()


def test_a_tool_past_the_step_deadline_does_not_undo_the_handoff(stuck):
    update = runner(stuck, step_timeout_s=1.0)(
        turn(
            tool_call("stuck", {}, call_id="slow"),
            handoff("products 6-19"),
            tool_call("fetch", {"start": 1}, call_id="later"),
        )
    )
    own = update["tasks"]["1"]
    assert own["status"] == "completed" and list(children(update)) == ["1_dyn_0"]
    assert "step exceeded step_timeout_s=1 in tool 'stuck'" in own["replan_request"]["reason"]
    text = result(update)
    assert "it did not finish" in text and "Not run: the step had no time left" in text


def test_a_timeout_after_the_agent_read_something_hands_the_rest_off_as_a_continuation(stuck):
    update = runner(stuck, step_timeout_s=1.0)(
        turn(tool_call("fetch", {"start": 1}, call_id="f"), tool_call("stuck", {}, call_id="slow"))
    )
    own = update["tasks"]["1"]
    assert own["status"] == "completed" and all(f"item-{n}" in result(update) for n in range(1, 6))
    [child] = children(update).values()
    assert child["follow_up"] == {"kind": "continuation", "by": "limit"} and child["depth"] == 0
    assert child["content"].startswith("extract 19 products\n\n(This continues subtask 1")
    assert 'fetch {"start": 1}' in child["content"] and "step_timeout_s=1" in child["content"]
    assert kept(update, "1")["f"] == fetch(1)
    # it goes on at once in its parent's conversation: the calls and what they returned, then a note
    assert child["status"] == "in_progress" and update["windows"]["1"] is None
    *conversation, note = update["windows"][child["id"]]
    assert [m.type for m in conversation] == ["system", "human", "ai", "tool", "tool"]
    assert conversation[3].content == fetch(1) and note.type == "human" and child["id"] in note.content


def test_a_timeout_before_the_agent_read_anything_fails_the_step(stuck):
    update = runner(stuck, step_timeout_s=1.0)(turn(tool_call("stuck", {}, call_id="slow")))
    assert update["tasks"]["1"]["status"] == "failed" and "step_timeout_s" in update["tasks"]["1"]["error"]
    assert not children(update)


# --------------------------------------------------------------------------- property: nothing is lost

CALL = st.one_of(
    st.tuples(st.just("fetch"), st.integers(0, 40), st.sampled_from([1, 3, 60])),
    st.tuples(st.just("split"), st.sampled_from(["6-10", "11-15", "16-19"]), st.sampled_from(["A", "B"])),
    st.tuples(st.just("replan"), st.just(""), st.just("")),
    st.tuples(st.just("error"), st.integers(0, 3), st.just("")),
    st.tuples(st.just("review"), st.just(""), st.just("")),
)


def build_calls(specs):
    calls = []
    for i, (kind, a, b) in enumerate(specs):
        call_id = f"c{i}"
        if kind == "fetch":
            calls.append(tool_call("fetch", {"start": a * 100, "count": b}, call_id=call_id))
        elif kind == "split":
            calls.append(handoff(f"products {a}", summary=f"summary {b}", call_id=call_id))
        elif kind == "replan":
            calls.append(tool_call(REQUEST_REPLAN_TOOL, {"reason": "stuck"}, call_id=call_id))
        elif kind == "error":
            calls.append(tool_call("fetch", {"start": -1 - a}, call_id=call_id))
        else:
            calls.append(tool_call(REVIEW_TOOL, {}, call_id=call_id))
    return calls


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(CALL, min_size=1, max_size=7))
def test_every_item_a_call_returned_is_reachable_and_the_queue_stays_valid(specs):
    calls = build_calls(specs)
    state = turn(*calls)
    update = runner(max_observation_chars=300)(state)
    tasks = apply_writes(state["tasks"], [update.get("tasks") or {}])
    own = tasks["1"]
    ended = "1" in (update.get("windows") or {}) and update["windows"]["1"] is None
    kinds = [kind for kind, _, _ in specs]

    # Every item any data call returned is reachable: the result, the kept outputs, or the open window.
    items = {f"item-{n}" for kind, a, b in specs if kind == "fetch" for n in range(a * 100, a * 100 + b)}
    window = "" if ended else "\n".join(str(m.content) for m in update["windows"]["1"])
    reachable = "\n".join([result(update) if own.get("result_ref") else "", *kept(update, "1").values(), window])
    assert {i for i in items if i not in reachable.split()} == set()

    # The subtask ends exactly when a hand-off or a replan request ran; a hand-off wins.
    assert ended == ("split" in kinds or "replan" in kinds)
    if "split" in kinds:
        assert own["status"] == "completed" and result(update).startswith("summary ")
        assert own["replan_request"] is None or ("replan" in kinds or "error" in kinds)
    elif "replan" in kinds:
        assert own["status"] == "failed" and own["replan_request"]["trigger"] == "tool"
    else:
        assert own["status"] == "in_progress"
        answered = {m.tool_call_id for m in update["windows"]["1"] if isinstance(m, ToolMessage)}
        assert answered == {c["id"] for c in calls}  # every call has its answer
    if ended and "error" in kinds:
        assert "failed" in own["replan_request"]["reason"]  # the replanner hears of what the agent never saw

    # The queue stays valid: one child per distinct task handed off, after the parent, nothing dangling.
    handed = {f"products {a}" for kind, a, _ in specs if kind == "split"}
    kids = [t for t in tasks.values() if t.get("parent_id") == "1"]
    assert sorted(t["content"] for t in kids) == sorted(handed)
    assert all(t["depends_on"] == ["1"] and t["status"] == "pending" for t in kids)
    assert [t["id"] for t in ordered(tasks)] == ["1", *sorted(t["id"] for t in kids), "2"]
    assert find_cycle({k: t["depends_on"] for k, t in tasks.items()}) is None
    assert all(d in tasks for t in tasks.values() for d in t["depends_on"])
    assert len({tuple(t["position"]) for t in tasks.values()}) == len(tasks)


# --------------------------------------------------------------------------- nothing of the ending turn is cut


def test_a_long_question_beside_a_handoff_is_in_the_result_in_full():
    question = "Which currency should the prices be in? " + "Say which market you mean, please. " * 20
    assert len(question) > 700
    config = AgentConfig(max_clarifications=2)
    update = runner(wrappers=[ScreenQuestions(config)], max_clarifications=2)(
        turn(tool_call("ask_user", {"question": question}, call_id="q"), handoff("products 6-19"))
    )
    assert question in result(update)


def write_file(path: str, content: str) -> str:
    """Writes a file."""
    return f"wrote {len(content)} characters to {path}"


@pytest.mark.parametrize("said", ["I wrote the table and hand off the rest.", ""])
def test_the_ending_turns_message_and_whole_calls_are_kept_and_cited_from_the_result(said):
    content = "".join(f"row {n}; " for n in range(200))
    calls = [tool_call("write_file", {"path": "out.csv", "content": content}, call_id="w"), handoff("products 6-19")]
    state = turn(*calls)
    state["windows"]["1"][-1] = AIMessage(said, tool_calls=calls)
    update = runner(write_file)(state)
    text = result(update)
    assert content not in text  # the result stays short: the label is a preview
    cited = [key for key in kept(update, "1") if f"output 1/{key}" in text and key not in ("w", "split")]
    assert len(cited) == 1, text
    record = kept(update, "1")[cited[0]]
    assert content in record and said in record


def test_a_handoff_alone_keeps_no_turn_record():
    update = runner()(turn(handoff("products 6-19")))
    assert result(update) == "products 1-5 were read earlier" and kept(update, "1") == {}


def test_the_ending_turns_outputs_reach_the_result_whole_with_more_calls_than_max_observations():
    calls = [tool_call("fetch", {"start": s}, call_id=f"f{s}") for s in (1, 6, 11)]
    update = runner(max_observations=1)(turn(*calls, handoff("products 16-19")))
    text = result(update)
    assert "removed from context" not in text and "read_output" not in text
    assert all(f"item-{n}" in text for n in range(1, 16))


def test_a_timeout_in_a_handoff_turn_is_reported_once_to_the_replanner(stuck):
    update = runner(stuck, step_timeout_s=1.0)(turn(tool_call("stuck", {}, call_id="slow"), handoff("products 6")))
    reason = update["tasks"]["1"]["replan_request"]["reason"]
    assert reason.count("step exceeded") == 1, reason
