"""Every one-shot request (planner, replanner, verifier, finalizer) fits the window, and nothing is lost."""

from __future__ import annotations

import re

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from pydantic import Field
from scripting import is_replan, plan_of, result_text, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.config import resolve_profiles
from replangraph.context.summarizing import pack, split_text
from replangraph.context.window_monitor import ContextMonitor
from replangraph.nodes.finalize.prompts import FINALIZER_PROMPT
from replangraph.nodes.planning.replanner import Replanner, fit_replan_prompt
from replangraph.nodes.verification.prompts import VERIFY_EXCERPT_NOTE
from replangraph.queue.tasks import new_task
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

SMALL = AgentConfig(context_window=8_000, reserved_output=1_000, retry_backoff_s=0.0)
BUDGET = ContextMonitor(SMALL).budget  # 6,300 tokens
KEPT = "the full text is kept"
REPORT = "The run for this goal stopped before it was finished"


class Recording(ScriptedChatModel):
    """A scripted model that logs every request with its token count (tools included), refused ones too."""

    log: list = Field(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        names = tuple(t["function"]["name"] for t in self.bound_tools)
        tokens = count_tokens_approximately(messages, tools=self.bound_tools or None)
        self.log.append((kind(ScriptedRequest(list(messages), names)), tokens, list(messages)))
        return super()._generate(messages, stop, run_manager, **kwargs)

    def tokens(self, of: str) -> list[int]:
        return [tokens for k, tokens, _ in self.log if k == of]

    def prompts(self, of: str) -> list[str]:
        return [ScriptedRequest(messages, ()).prompt for k, _, messages in self.log if k == of]


def kind(request: ScriptedRequest) -> str:
    if "Verdict" in request.tool_names:
        return "goal check" if request.prompt.startswith("Goal:") else "verifier"
    if is_replan(request):
        return "replanner"
    if "Plan" in request.tool_names:
        return "planner"
    if request.tool_names:
        return "executor"
    return "finalizer" if request.system == FINALIZER_PROMPT else "other"


def items(text: str) -> list[str]:
    return re.findall(r"ITEM-\d+", text)


def list_items(request: ScriptedRequest) -> str:
    """A finalizer that lists every item code it sees (and says whether it merged parts)."""
    merged = "MERGED\n" if "Join them into one final answer" in request.prompt else ""
    return merged + "\n".join(dict.fromkeys(items(request.prompt)))


def batch_result(batch: int, per_batch: int = 25, filler: int = 280) -> str:
    lines = [f"ITEM-{batch * 100 + n} " + "lorem ipsum dolor " * (filler // 18) for n in range(per_batch)]
    return "\n".join(lines)


def batches_model(count: int, final=list_items, result=batch_result) -> Recording:
    # Batches named b0, b1...: big subtasks the planner must not merge as one task per item would be.
    plan = plan_of(*({"id": str(b), "content": f"Collect batch b{b}"} for b in range(count)))

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return plan
        if "Verdict" in request.tool_names:
            return tool_call("Verdict", {"complete": True, "reason": "all there", "remaining_tasks": []})
        if request.tool_names:
            return result(int(subtask_of(request).rsplit(" b", 1)[1]))
        return final(request)

    return Recording(respond=respond)


# --------------------------------------------------------------------------- planner


def test_planner_shows_a_huge_goal_as_an_excerpt_and_its_retry_fits_too():
    goal = "Collect the batch. " + "background " * 18_000 + "END-OF-GOAL"  # ~200,000 characters
    plan = plan_of({"id": "1", "content": "Collect the batch"})

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            return plan if "could not be used" in request.prompt else "no plan today"  # retried once
        if request.tool_names:
            return "ITEM-1"
        return list_items(request)

    model = Recording(respond=respond)
    state, _ = run(build_graph(model, config=SMALL), goal=goal)
    planner = model.tokens("planner")
    assert len(goal) > 190_000 and len(planner) == 2
    assert max(planner) <= BUDGET
    assert all(tokens <= BUDGET for _, tokens, _ in model.log)
    first = model.prompts("planner")[0]
    assert first.startswith("Collect the batch.") and first.rstrip().endswith("END-OF-GOAL")
    assert 'output "goal"' in first and KEPT in first
    system = ScriptedRequest(model.log[0][2], ()).system
    assert "You are the planner" in system and "- default:" in system  # never cut
    assert state["tasks"]["1"]["status"] == "completed" and state["final_answer"] == "ITEM-1"
    assert state["goal"] == goal  # the state keeps it whole
    assert 'output "goal"' in model.prompts("finalizer")[0]


# --------------------------------------------------------------------------- replanner


def long_queue(completed: int = 290, pending: int = 9, partial_chars: int = 50_000) -> dict:
    tasks = {}
    for n in range(completed):
        task = new_task(str(n), f"Collect batch {n} of the catalogue with every field of each entry", position=[n])
        tasks[str(n)] = {**task, "status": "completed", "result": f"batch {n}: " + "data " * 100}
    flagged = new_task("f", "Collect the remaining catalogue", position=[completed])
    partial = "PARTIAL-START " + "found " * (partial_chars // 6) + " PARTIAL-END"
    tasks["f"] = {
        **flagged,
        "status": "completed",
        "result": partial,
        "replan_request": {"trigger": "marker", "reason": "the catalogue moved"},
    }
    for n in range(pending):
        tasks[f"p{n}"] = new_task(f"p{n}", f"Pending work {n}", position=[completed + 1 + n], depends_on=["f"])
    return tasks


def test_replanner_fits_a_300_task_plan_and_a_huge_partial_result_and_keeps_pending_lines():
    tasks = long_queue()
    model = Recording(respond=lambda request: plan_of({"id": "n1", "content": "Collect it from the new place"}))
    replanner = Replanner(model, resolve_profiles(None, []), SMALL, ContextMonitor(SMALL))
    update = replanner({"tasks": tasks, "goal": "Collect the whole catalogue", "replans": []})
    [(_, tokens, _)] = model.log
    prompt = model.prompts("replanner")[0]
    assert len(tasks) == 300 and tokens <= BUDGET
    for n in range(9):
        assert f"[ ] p{n}: Pending work {n}" in prompt  # the new plan replaces these: they are shown
    assert "(… 291 completed subtasks: 0, 1, 2," in prompt and "their results are kept" in prompt
    assert 'output "f/result"' in prompt and KEPT in prompt
    assert "PARTIAL-START" in prompt and "PARTIAL-END" in prompt
    assert update["replans"][-1]["outcome"] == "replanned" and "n1" in update["tasks"]


def test_replanner_shortens_previews_before_it_cuts_anything_else():
    tasks = long_queue(completed=30, pending=3, partial_chars=1_500)
    monitor = ContextMonitor(SMALL)
    full = fit_replan_prompt("goal", tasks, [tasks["f"]], 160, lambda _: True).request
    limit = monitor.tokens([HumanMessage(full)]) - 200
    fitted = fit_replan_prompt("goal", tasks, [tasks["f"]], 160, lambda t: monitor.tokens([HumanMessage(t)]) <= limit)
    assert fitted.fits and fitted.cut == ["previews"]
    assert "[X] 29: Collect batch 29" in fitted.request and "PARTIAL-END" in fitted.request


# --------------------------------------------------------------------------- verifier


def test_verifier_shows_a_huge_result_as_an_excerpt_and_says_it_is_not_missing():
    instructions = "Extract items 1-12 from the catalogue." + " Keep their order and their codes exactly." * 40
    result = "ITEM-1 " + "catalogue entry " * 8_000 + "ITEM-12"

    def respond(request: ScriptedRequest):
        if "Verdict" in request.tool_names:
            return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "all there"})
        if "Plan" in request.tool_names:
            return plan_of({"id": "1", "content": instructions})
        if request.tool_names:
            return result
        return list_items(request)

    model = Recording(respond=respond)
    state, _ = run(build_graph(model, config=SMALL.model_copy(update={"verify_results": True})))
    [tokens] = model.tokens("verifier")
    [prompt] = model.prompts("verifier")
    assert len(result) > 4 * 8_000 and tokens <= BUDGET
    assert instructions in prompt  # never cut
    assert 'output "1/result"' in prompt and KEPT in prompt and VERIFY_EXCERPT_NOTE.strip() in prompt
    assert "ITEM-1 " in prompt and prompt.rstrip().endswith("ITEM-12" + VERIFY_EXCERPT_NOTE.rstrip())
    assert result_text(state, "1") == result and state["tasks"]["1"]["verdict"]["complete"]
    assert len(state["tasks"]["1"]["result"]) <= 2_000 and state["tasks"]["1"]["result_ref"]["chars"] == len(result)
    assert items(state["final_answer"]) == ["ITEM-1", "ITEM-12"]


# --------------------------------------------------------------------------- finalizer


def test_finalizer_keeps_every_item_of_results_four_times_the_window():
    model = batches_model(20)
    state, _ = run(build_graph(model, config=SMALL))
    expected = [f"ITEM-{b * 100 + n}" for b in range(20) for n in range(25)]
    total = count_tokens_approximately([HumanMessage("\n".join(result_text(state, t) for t in state["tasks"]))])
    finals = model.tokens("finalizer")
    assert total > 4 * 8_000
    assert len(finals) > 4 and max(finals) <= BUDGET
    assert all(tokens <= BUDGET for _, tokens, _ in model.log)
    assert items(state["final_answer"]) == expected  # every item, in queue order, once


def test_finalizer_merges_short_partial_answers_with_one_more_call():
    model = batches_model(6, result=lambda b: batch_result(b, per_batch=10, filler=600))
    state, _ = run(build_graph(model, config=SMALL))
    finals = model.prompts("finalizer")
    assert len(finals) >= 3 and "Join them into one final answer" in finals[-1]
    assert max(model.tokens("finalizer")) <= BUDGET
    assert state["final_answer"].startswith("MERGED")
    assert items(state["final_answer"]) == [f"ITEM-{b * 100 + n}" for b in range(6) for n in range(10)]


def test_finalizer_splits_a_single_result_bigger_than_the_window_into_pieces():
    big = "\n".join(f"ITEM-{n} " + "very long entry text " * 10 for n in range(300))  # ~66,000 characters
    model = batches_model(1, result=lambda _: big)
    state, _ = run(build_graph(model, config=SMALL))
    finals = model.prompts("finalizer")
    assert count_tokens_approximately([HumanMessage(big)]) > 8_000
    assert max(model.tokens("finalizer")) <= BUDGET
    assert any("[0] Collect batch b0 (part 2 of " in p for p in finals)
    assert items(state["final_answer"]) == [f"ITEM-{n}" for n in range(300)]


def test_finalizer_retries_in_stages_with_half_the_budget_after_a_context_overflow():
    refused: list[int] = []

    def provider(request: ScriptedRequest):  # the provider's window is smaller than we were told
        tokens = count_tokens_approximately(request.messages)
        if tokens > 0.16 * BUDGET:  # room-bounded parts of the first try are over it; halved ones are not
            refused.append(tokens)
            raise ContextOverflowError(f"{tokens} tokens is too long")
        return list_items(request)

    model = batches_model(3, final=provider, result=lambda b: batch_result(b, per_batch=10, filler=600))
    state, _ = run(build_graph(model, config=SMALL))
    assert len(refused) == 1 and refused[0] <= BUDGET
    assert len(model.tokens("finalizer")) > 2 and max(model.tokens("finalizer")[1:]) <= BUDGET // 2
    assert not state["final_answer"].startswith(REPORT)
    assert items(state["final_answer"]) == [f"ITEM-{b * 100 + n}" for b in range(3) for n in range(10)]


def test_a_finalizer_failing_in_a_stage_gives_the_report_with_every_result():
    calls: list[int] = []

    def flaky(request: ScriptedRequest):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("model down")
        return list_items(request)

    model = batches_model(20, final=flaky)
    state, _ = run(build_graph(model, config=SMALL))
    assert state["final_answer"].startswith(REPORT) and "RuntimeError: model down" in state["final_answer"]
    assert set(items(state["final_answer"])) == {f"ITEM-{b * 100 + n}" for b in range(20) for n in range(25)}


# --------------------------------------------------------------------------- helpers


def test_split_text_and_pack_keep_every_character_in_order():
    text = "".join(f"line {n}\n" for n in range(500))
    pieces = split_text(text, 300)
    assert "".join(pieces) == text and max(map(len, pieces)) <= 300
    groups = pack(pieces, lambda group: sum(map(len, group)) <= 1_000)
    assert [p for g in groups for p in g] == pieces and all(sum(map(len, g)) <= 1_000 for g in groups)
