"""The completion check (verify_results): complete, incomplete, garbage, failing, limits, cost."""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import AIMessage
from scripting import plan_of, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.queue.tasks import ordered
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

FAST = {"retry_backoff_s": 0.0, "verify_results": True, "batch_size": 4}  # the lazy worker reads 4 a round
ITEMS = [f"item-{i}" for i in range(1, 13)]


def wanted_range(text: str) -> tuple[int, int]:
    found = re.search(r"items (\d+)-(\d+)", text)
    return int(found.group(1)), int(found.group(2))


def lazy_worker(request: ScriptedRequest):
    """Reads the first 4 items of its range and stops, as lazy agents do."""
    first, last = wanted_range(subtask_of(request))
    got = ", ".join(ITEMS[first - 1 : min(first + 3, last)])
    return f"I have collected enough data: {got}"


def fair_check(request: ScriptedRequest):
    """A Verdict that compares the items asked for with the items in the result."""
    first, last = wanted_range(request.prompt.split("Result:")[0])
    result = request.prompt.split("Result:", 1)[1]
    seen = [int(n) for n in re.findall(r"item-(\d+)", result)]
    upto = max(seen, default=first - 1)
    if upto >= last:
        return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "all items are there"})
    rest = [f"Extract items {lo}-{min(lo + 3, last)}" for lo in range(upto + 1, last + 1, 4)]
    reason = f"items {upto + 1}-{last} missing"
    return tool_call("Verdict", {"complete": False, "remaining_tasks": rest, "reason": reason})


def model(verdict=fair_check, worker=lazy_worker, replan=None):
    def respond(request: ScriptedRequest):
        if "Verdict" in request.tool_names:
            return verdict(request)
        if replan and "Plan" in request.tool_names and "replanner" in request.system:
            return replan(request)
        if "Plan" in request.tool_names:
            return plan_of({"id": "1", "content": "Extract items 1-12", "depends_on": []})
        if request.tool_names:
            return worker(request)
        return "FINAL:\n" + request.prompt

    return ScriptedChatModel(respond=respond)


def items_in(text: str) -> set[str]:
    return set(re.findall(r"item-\d+", text))


def test_incomplete_results_get_follow_ups_that_are_checked_too():
    state, events = run(build_graph(model(), config=AgentConfig(**FAST)))
    assert items_in(state["final_answer"]) == set(ITEMS)
    tasks = state["tasks"]
    assert [t["id"] for t in ordered(tasks)] == ["1", "1_dyn_0", "1_dyn_1"]
    assert tasks["1"]["status"] == "completed" and tasks["1"]["result"].endswith("item-1, item-2, item-3, item-4")
    assert tasks["1"]["verdict"]["complete"] is False
    assert tasks["1"]["verdict"]["follow_up_ids"] == ["1_dyn_0", "1_dyn_1"]
    assert all(tasks[i]["verdict"]["complete"] for i in ("1_dyn_0", "1_dyn_1"))
    added = [e for e in events if e["event"] == "dynamic_tasks_added"]
    assert [(e["parent_id"], e["source"]) for e in added] == [("1", "verifier")]
    checked = [e for e in events if e["event"] == "step_verified"]
    assert [(e["task_id"], e["complete"]) for e in checked] == [("1", False), ("1_dyn_0", True), ("1_dyn_1", True)]
    # the check's calls count: one turn and one check per subtask
    assert [tasks[i]["model_calls"] for i in ("1", "1_dyn_0", "1_dyn_1")] == [2, 2, 2]


def test_without_the_check_a_lazy_agent_loses_the_rest():
    state, _ = run(build_graph(model(), config=AgentConfig(retry_backoff_s=0, verify_results=False)))
    assert items_in(state["final_answer"]) == set(ITEMS[:4])


def test_a_complete_result_is_accepted_as_it_is():
    state, events = run(build_graph(model(worker=diligent), config=AgentConfig(**FAST)))
    assert list(state["tasks"]) == ["1"] and state["tasks"]["1"]["verdict"]["complete"] is True
    assert items_in(state["final_answer"]) == set(ITEMS)


@pytest.mark.parametrize(
    "answer, why",
    [
        ("Looks fine to me!", "could not be read"),
        (tool_call("Verdict", {"reason": "hmm"}), "neither whether"),
        (AIMessage(content=[{"type": "text", "text": '```json\n{"verdict": 1}\n```'}]), "neither whether"),
    ],
)
def test_garbage_from_the_check_lets_the_result_stand(answer, why):
    state, _ = run(build_graph(model(verdict=lambda r: answer), config=AgentConfig(**FAST)))
    task = state["tasks"]["1"]
    assert task["status"] == "completed" and why in task["verdict"]["error"]
    assert list(state["tasks"]) == ["1"]


def test_a_failing_check_never_fails_the_subtask():
    def down(request):
        raise ConnectionError("verifier unreachable")

    state, _ = run(build_graph(model(verdict=down), config=AgentConfig(**FAST, model_retries=1)))
    task = state["tasks"]["1"]
    assert task["status"] == "completed" and "verifier unreachable" in task["verdict"]["error"]
    assert task["model_calls"] == 1 + 2  # the turn, and the check tried twice
    assert not state["final_answer"].startswith("The run for this goal stopped")


def test_lenient_verdicts_are_understood():
    answer = AIMessage(
        content=[
            {
                "type": "text",
                "text": '```json\n{"complete": "no", "remaining_tasks": "- Extract items 5-8\\n- Extract items 9-12", '
                '"reason": "stopped at 4"}\n```',
            }
        ]
    )
    calls = []

    def verdict(request):
        calls.append(1)
        return answer if len(calls) == 1 else fair_check(request)

    state, _ = run(build_graph(model(verdict=verdict), config=AgentConfig(**FAST)))
    assert state["tasks"]["1"]["verdict"]["remaining_tasks"] == ["Extract items 5-8", "Extract items 9-12"]
    assert items_in(state["final_answer"]) == set(ITEMS)


def test_check_follow_ups_continue_the_same_work_at_its_depth():
    """Each round of the lazy worker gets 4 items further: the follow-ups are not deeper splits, so even
    max_split_depth=0 lets the rounds go on until nothing is missing."""

    def rest_in_one(request):
        verdict = fair_check(request)
        rest = verdict["args"]["remaining_tasks"]
        if rest:  # "Extract items 5-12", not in pieces: each round is nested in the one before
            verdict["args"]["remaining_tasks"] = [f"Extract items {wanted_range(rest[0])[0]}-12"]
        return verdict

    state, _ = run(build_graph(model(verdict=rest_in_one), config=AgentConfig(**FAST, max_split_depth=0)))
    rounds = [t for t in ordered(state["tasks"]) if t["id"] != "1"]
    assert [t["content"] for t in rounds] == ["Extract items 5-12", "Extract items 9-12"]
    assert rounds[1]["parent_id"] == rounds[0]["id"] and {t["depth"] for t in rounds} == {0}
    assert items_in(state["final_answer"]) == set(ITEMS)


def test_missing_work_a_limit_refuses_goes_to_the_replanner():
    """max_tasks=2 leaves no room for the check's two follow-ups: the answer is kept as the partial result and
    the replanner plans the rest."""

    def worker(request):
        return lazy_worker(request) if subtask_of(request) == "Extract items 1-12" else diligent(request)

    def replan(request):
        assert "the completion check found the result incomplete (items 5-12 missing)" in request.prompt
        return plan_of({"id": "b", "content": "Extract items 5-12", "depends_on": []})

    config = AgentConfig(**FAST, max_tasks=2)
    state, events = run(build_graph(model(worker=worker, replan=replan), config=config))
    task = state["tasks"]["1"]
    assert task["status"] == "completed" and "max_tasks=2 left no room" in task["verdict"]["error"]
    assert task["limits_hit"] == {"max_tasks": 3}
    [replanning] = [e for e in events if e["event"] == "replanning"]
    assert replanning["trigger"] == "check" and replanning["outcome"] == "replanned"
    assert items_in(state["final_answer"]) == set(ITEMS)


def diligent(request):
    first, last = wanted_range(subtask_of(request))
    return ", ".join(ITEMS[first - 1 : last])


def test_a_check_that_asks_for_the_whole_subtask_again_stands_down_when_a_redo_cannot_find_more():
    """An over-critical check (a weak judge) calls every result incomplete and asks for the subtask again. The
    worker here answers from its instructions alone (no tool of its own): going over them again would find
    nothing new, so the check stands down at once and the result stands: no redo, no replanning."""

    def over_critical(request):
        if request.prompt.startswith("Goal:"):
            return tool_call("Verdict", {"complete": False, "remaining_tasks": ["do it"], "reason": "not all there"})
        asked = re.search(r"^Subtask \([^)]*\): (.*)$", request.prompt, flags=re.M).group(1)
        return tool_call("Verdict", {"complete": False, "remaining_tasks": [asked], "reason": "not all there"})

    state, events = run(build_graph(model(verdict=over_critical, worker=diligent), config=AgentConfig(**FAST)))
    tasks = state["tasks"]
    assert list(tasks) == ["1"] and "used no tools of its own" in tasks["1"]["verdict"]["stood_down"]
    assert [e["task_id"] for e in events if e["event"] == "check_stood_down"] == ["1"]
    assert not state["replans"] and tasks["1"]["status"] == "completed"
    assert "the goal itself" in state["goal_check"]["notes"][0] and not state["goal_check"]["task_ids"]
    assert items_in(state["final_answer"]) == set(ITEMS)


def test_an_incomplete_verdict_that_names_no_work_is_not_accepted_silently():
    def vague(request):
        if "items 1-12" in request.prompt.split("Result:")[0]:
            return tool_call("Verdict", {"complete": False, "reason": "it stopped early"})
        return fair_check(request)

    def replan(request):
        return plan_of({"id": "b", "content": "Extract items 5-8", "depends_on": []})

    state, events = run(build_graph(model(verdict=vague, replan=replan), config=AgentConfig(**FAST)))
    assert state["tasks"]["1"]["verdict"]["error"] == "not queued: it named no remaining tasks"
    assert [e["trigger"] for e in events if e["event"] == "replanning"] == ["check"]
    assert items_in(state["final_answer"]) == set(ITEMS[:8])


def test_when_nothing_can_take_the_missing_work_the_report_says_so():
    state, _ = run(build_graph(model(replan=lambda r: plan_of()), config=AgentConfig(**FAST, max_tasks=2)))
    task = state["tasks"]["1"]
    assert task["status"] == "failed" and task["result"].endswith("item-4")  # the partial result is kept
    assert "max_tasks=2 refused follow-up tasks; max_tasks=3 would have let them in" in state["final_answer"]
    assert "item-4" in state["final_answer"]


@pytest.mark.parametrize(
    "args, remaining",
    [
        ({"complete": False, "remaining_tasks": [{"range": "5-12"}], "reason": "x"}, []),  # unreadable rest
        ({"complete": "partially", "remaining_tasks": ["Extract items 5-12"], "reason": "x"}, ["Extract items 5-12"]),
        ({"verdict": {"complete": False, "remaining_tasks": "- Extract items 5-12"}}, ["Extract items 5-12"]),
        ({"complete": True, "remaining_tasks": "None", "reason": "x"}, []),
    ],
)
def test_verdict_shapes(args, remaining):
    from replangraph.nodes.verification.verifier import read_verdict

    complete, _, rest, _ = read_verdict({"raw": AIMessage("", tool_calls=[tool_call("Verdict", args)])})
    assert rest == remaining and complete is (args.get("complete") is True)


def test_a_handoff_is_not_checked():
    def splitter(request):
        if "1_dyn" in request.prompt:
            return "item-5, item-6, item-7, item-8, item-9, item-10, item-11, item-12"
        args = {"summary": "item-1, item-2, item-3, item-4", "tasks": ["items 5-12"]}
        return tool_call("replan_split_and_handoff", args)

    state, events = run(build_graph(model(worker=splitter), config=AgentConfig(**FAST)))
    assert "verdict" not in state["tasks"]["1"] and state["tasks"]["1_dyn_0"]["verdict"]["complete"]
    assert items_in(state["final_answer"]) == set(ITEMS)


def test_an_answer_waiting_for_the_check_is_kept_when_the_budget_stops_the_run():
    state, _ = run(build_graph(model(), config=AgentConfig(**FAST, max_steps=1)))
    task = state["tasks"]["1"]
    assert task["status"] == "failed" and "item-4" in task["result"]
    assert "item-4" in state["final_answer"]


def test_parallel_subtasks_are_checked_together():
    def respond(request: ScriptedRequest):
        if "Verdict" in request.tool_names:
            return fair_check(request)
        if "Plan" in request.tool_names:
            return plan_of(
                {"id": "a", "content": "Extract items 1-4", "depends_on": []},
                {"id": "b", "content": "Extract items 5-8", "depends_on": []},
            )
        if request.tool_names:
            first, last = wanted_range(subtask_of(request))
            return ", ".join(ITEMS[first - 1 : last])
        return "FINAL:\n" + request.prompt

    graph = build_graph(ScriptedChatModel(respond=respond), config=AgentConfig(**FAST, max_concurrency=2))
    state, events = run(graph)
    assert {e["task_id"] for e in events if e["event"] == "step_verified"} == {"a", "b"}
    assert items_in(state["final_answer"]) == set(ITEMS[:8])


PARROT = {
    "complete": True,
    "remaining_tasks": [],
    "reason": "What is missing, or why the result is complete.",  # the schema's own field description
}


@pytest.mark.parametrize(
    "parrot",
    [
        tool_call("Verdict", PARROT),
        tool_call("Verdict", {**PARROT, "reason": "`reason`: what is missing, or why it is complete, in one sentence"}),
        tool_call(
            "Verdict",
            {"complete": False, "remaining_tasks": ["Instructions for exactly the missing work; empty when complete."]},
        ),
    ],
    ids=["field description", "prompt echoed", "remaining task echoed"],
)
def test_a_parroted_verdict_is_no_verdict_and_is_asked_again(parrot):
    def check(request):
        return fair_check(request) if "could not be used" in request.prompt else parrot

    state, _ = run(build_graph(model(verdict=check), config=AgentConfig(**FAST)))
    assert items_in(state["final_answer"]) == set(ITEMS)  # the real verdict found the missing items
    first = state["tasks"]["1"]
    assert first["verdict"]["complete"] is False and first["model_calls"] == 1 + 2  # the turn, two asks


def test_a_verdict_parroted_every_time_lets_the_result_stand_and_says_why():
    state, _ = run(build_graph(model(verdict=lambda r: tool_call("Verdict", PARROT)), config=AgentConfig(**FAST)))
    task = state["tasks"]["1"]
    assert task["status"] == "completed" and "repeats the tool's field descriptions" in task["verdict"]["error"]
    assert list(state["tasks"]) == ["1"]


def test_a_reasoning_verifier_judges_the_answer_without_its_think_block():
    def worker(request):
        first, last = wanted_range(subtask_of(request))
        return "<think>all of them? item-99</think>" + ", ".join(ITEMS[first - 1 : last])

    seen = []

    def check(request):
        seen.append(request.prompt.split("Result:", 1)[1])
        return "<think>looks fine</think>" + '{"complete": true, "remaining_tasks": [], "reason": "every item"}'

    state, _ = run(build_graph(model(verdict=check, worker=worker), config=AgentConfig(**FAST)))
    assert "item-99" not in seen[0] and "think" not in state["tasks"]["1"]["result"]
    assert state["tasks"]["1"]["verdict"]["reason"] == "every item"


def test_prose_remaining_tasks_are_read_one_a_line_only_with_the_text_policy():
    from replangraph.nodes.verification.verifier import read_verdict

    answer = {"raw": AIMessage("", tool_calls=[tool_call("Verdict", {"complete": False, "remaining_tasks": PROSE})])}
    assert read_verdict(answer)[2] == ["Extract items 5-12", "Extract items 13-20"]
    complete, _, rest, note = read_verdict(answer, lines=False)  # the policy off: no reading of prose
    assert complete is False and rest == [] and "could not be read" in note
    listed = {"complete": False, "remaining_tasks": ["Extract items 5-12", "Extract items 13-20"]}
    assert read_verdict({"raw": AIMessage("", tool_calls=[tool_call("Verdict", listed)])}, lines=False)[2] == [
        "Extract items 5-12",
        "Extract items 13-20",
    ]


PROSE = "- Extract items 5-12\n- Extract items 13-20"
