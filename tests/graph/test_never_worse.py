"""Never worse than the model's own work (issue 31): what real models do, scripted, and what the graph makes of it.

Each test scripts one behaviour of real models (the rest handed off as one task, one tool call per turn, a
paraphrased summary, a range off by one, an over-critical check, a call announced instead of made, a final answer
cut short) and asserts the property that keeps the items: continuations at their parent's depth, the turn limit's
hand-off, what was read carried into the result, repeats not run twice, gaps queued, the goal checked once.
"""

from __future__ import annotations

import json
import re

from scripting import plan_of, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.context.carried import READS_HEAD
from replangraph.nodes.execution.endings import NUDGE
from replangraph.nodes.finalize.prompts import ADDED_ITEMS
from replangraph.queue.tasks import ordered
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call
from replangraph.tools import SPLIT_TOOL

FAST = {"retry_backoff_s": 0.0}


def item(n: int) -> str:
    return f"item-{n}: code C{n * 7919}"


def read_items(start: int, count: int = 5) -> str:
    """Read up to 5 items from item `start` (1-based)."""
    return "\n".join(item(n) for n in range(start, start + min(count, 5)))


def items_in(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"item-(\d+): code C\d+", text)}


def span(text: str) -> tuple[int, int] | None:
    found = re.search(r"items (\d+)-(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def read_so_far(request: ScriptedRequest) -> set[int]:
    return {n for m in request.tool_results if request.tool_name(m) == "read_items" for n in items_in(m.text)}


def fair_verdict(request: ScriptedRequest):
    """A check that compares the items asked for (the subtask's range, or the goal's 1..N) with those shown."""
    if request.prompt.startswith("Goal:"):
        wanted = (1, int(re.search(r"all (\d+) items", request.prompt).group(1)))
        shown = items_in(request.prompt)
    else:
        instruction, _, result = request.prompt.partition("\nResult:")
        wanted = span(instruction) or (1, 0)
        shown = items_in(result)
    missing = [n for n in range(wanted[0], wanted[1] + 1) if n not in shown]
    rest = [f"List items {n}-{n}" for n in missing]
    return tool_call("Verdict", {"complete": not missing, "remaining_tasks": rest, "reason": f"{len(missing)} missing"})


def listing(request: ScriptedRequest) -> str:
    """The final answer: every item the request shows, one per line."""
    return "\n".join(item(n) for n in sorted(items_in(request.prompt)))


def model(work, verdict=fair_verdict, final=listing, plan=None, replan=None) -> ScriptedChatModel:
    def respond(request: ScriptedRequest):
        if "Verdict" in request.tool_names:
            return verdict(request)
        if "Plan" in request.tool_names and "replanner" in request.system:
            return replan(request) if replan else plan_of()
        if "Plan" in request.tool_names:
            return plan or plan_of({"id": "1", "content": f"List items 1-{GOAL_ITEMS}"})
        if request.tool_names:
            return work(request)
        return final(request)

    return ScriptedChatModel(respond=respond)


GOAL_ITEMS = 30
GOAL = f"List all {GOAL_ITEMS} items with their codes."


def graph(work, **settings):
    kwargs = {k: settings.pop(k) for k in ("verdict", "final", "plan", "replan") if k in settings}
    return build_graph(model(work, **kwargs), tools=[read_items], config=AgentConfig(**{**FAST, **settings}))


def found(state) -> set[int]:
    return items_in(state["final_answer"])


# --------------------------------------------------------------------------- continuations are not nesting


def rest_as_one(request: ScriptedRequest):
    """Reads one page, then hands off "the rest" as ONE follow-up: the most natural lazy hand-off."""
    first, last = span(subtask_of(request))
    read = read_so_far(request)
    if not read:
        return tool_call("read_items", {"start": first})
    summary = "\n".join(item(n) for n in sorted(read))
    if max(read) >= last:
        return summary
    rest = json.dumps([{"content": f"List items {max(read) + 1}-{last}"}])
    return tool_call(SPLIT_TOOL, {"summary": summary, "tasks": rest})


def test_a_chain_of_continuations_outlives_max_split_depth_at_its_parents_depth():
    state, _ = run(graph(rest_as_one, max_split_depth=1), goal=GOAL)
    chain = ordered(state["tasks"])
    assert len(chain) == 6 and all(t["status"] == "completed" for t in chain)  # 1-30, 6-30, ..., 26-30
    assert {t["depth"] for t in chain} == {0}  # the length of a chain is not nesting
    assert all(t["follow_up"] == {"kind": "continuation", "by": "handoff"} for t in chain[1:])
    assert found(state) == set(range(1, GOAL_ITEMS + 1))


def test_a_hand_off_without_work_of_its_own_splits_one_level_deeper():
    def delegate(request):
        first, last = span(subtask_of(request))
        if last - first < 10:
            return "\n".join(item(n) for n in range(first, last + 1))
        half = (first + last) // 2
        parts = [{"content": f"List items {first}-{half}"}, {"content": f"List items {half + 1}-{last}"}]
        return tool_call(SPLIT_TOOL, {"summary": "split in two", "tasks": json.dumps(parts)})

    state, _ = run(graph(delegate), goal=GOAL)
    children = [t for t in state["tasks"].values() if t.get("parent_id") == "1"]
    assert [t["follow_up"]["kind"] for t in children] == ["split", "split"] and {t["depth"] for t in children} == {1}


# --------------------------------------------------------------------------- the turn limit hands off


def one_call_per_turn(request: ScriptedRequest):
    """One tool call per turn, never a hand-off: the page after the highest item its conversation shows."""
    first, last = span(subtask_of(request))
    read = read_so_far(request)
    nxt = max(read, default=first - 1) + 1
    if nxt > last:
        return "\n".join(item(n) for n in sorted(read))
    return tool_call("read_items", {"start": nxt, "count": 5})


def test_the_turn_limit_hands_the_rest_off_and_what_was_read_is_the_result(way):
    state, events = run(graph(one_call_per_turn, max_step_iterations=3), goal=GOAL, way=way)
    first = state["tasks"]["1"]
    assert first["status"] == "completed" and items_in(first["result"]) == set(range(1, 16))  # 3 turns, 3 pages
    after = state["tasks"]["1_dyn_0"]
    assert after["follow_up"] == {"kind": "continuation", "by": "limit"} and after["depth"] == 0
    assert after["content"].startswith("List items 1-30\n\n(This continues subtask 1")
    assert "read_items ×3 with count 5, start 1-11 step 5" in after["content"]  # every call of the chain
    assert items_in(after["result"]) == set(range(16, 31))  # it went on in its conversation: its own reads
    assert any(e["event"] == "dynamic_tasks_added" and e["source"] == "limit" for e in events)
    assert found(state) == set(range(1, GOAL_ITEMS + 1))


def test_the_turn_limit_fails_a_subtask_that_read_nothing():
    def review_forever(request):
        return tool_call("replan_review_context", {})

    state, _ = run(graph(review_forever, max_step_iterations=3, verify_results=False), goal=GOAL)
    first = state["tasks"]["1"]
    assert first["status"] == "failed" and "max_step_iterations=3" in first["error"]
    assert not [t for t in state["tasks"].values() if t.get("parent_id") == "1"]


# --------------------------------------------------------------------------- what a subtask read reaches the answer


def paraphrasing(request: ScriptedRequest):
    """Reads its range page by page, then says what it did instead of what it found."""
    first, last = span(subtask_of(request))
    read = read_so_far(request)
    nxt = max(read, default=first - 1) + 1
    if nxt <= last:
        return tool_call("read_items", {"start": nxt})
    return f"Listed items {first}-{last} with their codes."


def test_a_paraphrased_answer_carries_what_its_agent_read(way):
    state, _ = run(graph(paraphrasing, verify_results=way == "invoke"), goal=GOAL, way=way)  # check on, and off
    result = state["tasks"]["1"]["result"]
    assert result.startswith("Listed items 1-30 with their codes.\n\n" + READS_HEAD)
    assert items_in(result) == set(range(1, GOAL_ITEMS + 1)) and found(state) == set(range(1, GOAL_ITEMS + 1))


def test_replanned_work_gets_what_the_failed_subtask_read():
    def give_up_after_two_pages(request):
        if subtask_of(request).startswith("Finish"):
            return "\n".join(item(n) for n in range(11, 31))
        read = read_so_far(request)
        return tool_call("read_items", {"start": len(read) + 1}) if len(read) < 10 else "[REPLAN] the site blocked me"

    def replan(request):
        return plan_of({"id": "2", "content": "Finish listing items 11-30"})

    state, _ = run(graph(give_up_after_two_pages, replan=replan), goal=GOAL)
    failed, again = state["tasks"]["1"], state["tasks"]["2"]
    assert failed["status"] == "failed" and items_in(failed["result"]) == set(range(1, 11))  # its reads are kept
    assert again["builds_on"] == ["1"] and found(state) == set(range(1, GOAL_ITEMS + 1))


def test_an_over_critical_check_gets_one_redo_from_a_reading_agent_then_stands_down():
    def over_critical(request):
        if request.prompt.startswith("Goal:"):
            return tool_call("Verdict", {"complete": False, "remaining_tasks": [GOAL], "reason": "not all there"})
        asked = re.search(r"^Subtask \([^)]*\): (.*)$", request.prompt, flags=re.M).group(1)
        return tool_call("Verdict", {"complete": False, "remaining_tasks": [asked], "reason": "not all there"})

    state, events = run(graph(one_call_per_turn, verdict=over_critical, max_step_iterations=40), goal=GOAL)
    redo = state["tasks"]["1_dyn_0"]
    assert list(state["tasks"]) == ["1", "1_dyn_0"] and redo["content"] == "List items 1-30"  # one redo
    assert redo["follow_up"] == {"kind": "continuation", "by": "check"} and redo["progress"] is False
    assert [e["task_id"] for e in events if e["event"] == "check_stood_down"] == ["1_dyn_0"]
    assert not state["replans"] and found(state) == set(range(1, GOAL_ITEMS + 1))


# --------------------------------------------------------------------------- repeats, gaps and the goal


def test_follow_ups_are_queued_as_written_but_the_goal_itself_and_a_skipped_part_is_queued():
    def sloppy(request):
        first, last = span(subtask_of(request))
        read = read_so_far(request)
        if not read:
            return tool_call("read_items", {"start": first})
        if max(read) >= last or subtask_of(request) != "List items 1-30":
            return (
                "\n".join(item(n) for n in sorted(read))
                if max(read) >= last
                else tool_call("read_items", {"start": max(read) + 1})
            )
        rest = [GOAL, "List items 4-15", "List items 21-30", "List items 21-30"]  # goal, overlap, gap 16-20, twice
        return tool_call(SPLIT_TOOL, {"summary": "\n".join(item(n) for n in sorted(read)), "tasks": json.dumps(rest)})

    state, events = run(graph(sloppy), goal=GOAL)
    queued = [t["content"] for t in ordered(state["tasks"]) if t.get("parent_id") == "1"]
    # every follow-up as sent, the identical two as well (the engine cannot know they are the same work)
    assert queued == ["List items 4-15", "List items 21-30", "List items 21-30", "List items 16-20"]
    assert state["tasks"]["1_dyn_3"]["follow_up"]["by"] == "coverage"
    [added] = [e for e in events if e["event"] == "dynamic_tasks_added" and e["parent_id"] == "1"]
    assert any("the goal itself" in n for n in added["notes"]) and not any("dropped" in n for n in added["notes"])
    assert found(state) == set(range(1, GOAL_ITEMS + 1))


def test_the_goal_check_queues_what_a_short_plan_left_out_once(way):
    short = plan_of({"id": "1", "content": "List items 1-20"})
    state, events = run(graph(one_call_per_turn, plan=short), goal=GOAL, way=way)
    first, *again = [e for e in events if e["event"] == "goal_checked"]
    # ten one-item follow-ups, queued as the check wrote them (never merged)
    assert first["complete"] is False and [state["tasks"][t]["content"] for t in first["task_ids"]] == [
        f"List items {n}-{n}" for n in range(21, 31)
    ]
    # the work it queued read new items, so it judged once more: complete, nothing more queued
    assert [(e["complete"], e["task_ids"]) for e in again] == [(True, [])] and state["goal_check"]["complete"]
    assert found(state) >= set(range(1, GOAL_ITEMS + 1))


def test_the_goal_check_finds_the_items_off_by_one_hand_offs_skipped():
    def skips_one(request):
        first, last = span(subtask_of(request))
        read = read_so_far(request)
        nxt = max(read, default=first - 1) + 1
        if nxt <= min(last, first + 9):
            return tool_call("read_items", {"start": nxt})
        summary = "\n".join(item(n) for n in sorted(read))
        if max(read) >= last:
            return summary
        rest = json.dumps([{"content": f"List items {max(read) + 2}-{last}"}])  # one item too late
        return tool_call(SPLIT_TOOL, {"summary": summary, "tasks": rest})

    state, events = run(graph(skips_one), goal=GOAL)
    first = next(e for e in events if e["event"] == "goal_checked")
    gaps = [state["tasks"][t]["content"] for t in first["task_ids"]]
    assert gaps == ["List items 11-11", "List items 22-22"]  # each hand-off skipped one item
    assert found(state) >= set(range(1, GOAL_ITEMS + 1))


# --------------------------------------------------------------------------- answers are answers


def test_an_announced_call_gets_one_nudge_in_the_same_conversation():
    seen = []

    def announcer(request):
        seen.append([m.type for m in request.messages])
        if request.messages[-1].type == "human" and request.messages[-1].text == NUDGE:
            return one_call_per_turn(request)
        if not request.tool_results:
            return "I'll now call read_items to fetch the first items."
        return one_call_per_turn(request)

    state, _ = run(graph(announcer, verify_results=False), goal=GOAL)
    assert ["system", "human", "ai", "human"] in seen  # the announcement, then the nudge
    assert found(state) == set(range(1, GOAL_ITEMS + 1))


def test_an_announcement_after_the_nudge_is_the_answer():
    def stubborn(request):
        return "Let me fetch the items first."

    state, _ = run(graph(stubborn, verify_results=False), goal=GOAL)
    assert state["tasks"]["1"]["result"] == "Let me fetch the items first."
    assert state["tasks"]["1"]["model_calls"] == 2  # the announcement, the nudge's answer


def test_a_final_answer_cut_short_is_asked_again_then_completed_word_for_word():
    finals = []

    def cut_short(request):
        finals.append(request)
        shown = sorted(items_in(request.messages[1].text if len(request.messages) > 2 else request.prompt))
        return "\n".join(item(n) for n in shown[:10]) + f"\n... and {len(shown) - 10} more."

    state, events = run(graph(one_call_per_turn, final=cut_short, max_step_iterations=40), goal=GOAL)
    assert len(finals) == 2 and "leaves out 20 items" in finals[1].prompt  # asked once more, in the same conversation
    answer = state["final_answer"]
    assert answer.index("... and 20 more.") < answer.index(ADDED_ITEMS) and found(state) == set(range(1, 31))
    assert [e["items"] for e in events if e["event"] == "answer_completed"] == [20]


def test_a_budget_stop_reports_every_completed_result():
    state, _ = run(graph(rest_as_one, max_steps=6), goal=GOAL)
    report = state["final_answer"]
    assert report.startswith("The run for this goal stopped before it was finished")
    done = [t for t in state["tasks"].values() if t["status"] == "completed"]
    assert done and all(t["id"] in report for t in done)
    assert items_in(report) >= {n for t in done for n in items_in(t["result"])}
