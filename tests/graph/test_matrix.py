"""The variant personas send the shapes their docstrings describe, and the matrix benchmark prints its table.

Where the engine shows a shape (a hand-off's follow-ups, a plan, a final answer) the persona runs in a graph;
where today's engine cannot show it yet (a continuation of a subtask cut at its turn limit, the goal-level
check, a nudge after an announcement) the persona answers a hand-made request. Every figure here is a count:
no test is timed."""

from __future__ import annotations

import io
import json
import re

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from benchmarks import matrix
from benchmarks.harness import Outcome, create_agent_baseline, react_agent, replangraph_agent
from benchmarks.personas import (
    ANNOUNCED,
    NOT_EVERYTHING,
    PERSONAS,
    TAKE_OVER,
    VARIANT_PERSONAS,
    ClientRetrying,
    Persona,
    batches,
    persona,
    stable_hash,
)
from benchmarks.worlds import CatalogWorld, ReportWorld
from replangraph import AgentConfig, build_graph
from replangraph.context.compression import SUMMARY_HEADER
from replangraph.testing import ScriptedRequest, as_message, tool_call
from replangraph.tools import REVIEW_TOOL, SPLIT_TOOL

DEFAULTS = {"retry_backoff_s": 0.0}
"""replangraph on defaults; scripted failures need no real wait."""
VERDICT_TOOLS = ("Verdict",)


def recording(scripted: Persona) -> tuple[ClientRetrying, list[tuple[ScriptedRequest, AIMessage]]]:
    """The persona as a model that keeps every request it answered and its reply."""
    log: list[tuple[ScriptedRequest, AIMessage]] = []

    def respond(request: ScriptedRequest):
        reply = as_message(scripted.respond(request))
        log.append((request, reply))
        return reply

    return ClientRetrying(respond=respond), log


def run_graph(name: str, world, **config):
    scripted = persona(name, world)
    model, log = recording(scripted)
    graph = build_graph(model, tools=world.tools, config=AgentConfig(**{**DEFAULTS, **config}))
    return graph.invoke({"messages": [("user", world.goal)]}), log


def follow_ups(state: dict, parent: str) -> list[str]:
    return [t["content"] for t in state["tasks"].values() if t.get("parent_id") == parent]


def worker_replies(log) -> list[tuple[ScriptedRequest, AIMessage]]:
    return [(request, reply) for request, reply in log if SPLIT_TOOL in request.tool_names]


def worker_request(world, content: str, *, batch: int = 50, task_id: str = "1", more=()) -> ScriptedRequest:
    """A worker's first request, shaped as the executor sends it (the rules' batch size, the subtask line)."""
    system = SystemMessage(f"Rules:\n- More than {batch} items: process one batch of at most {batch} ...")
    human = HumanMessage(f"Overall goal: {world.goal}\n\nYour subtask ({task_id}): {content}")
    tools = (world.tools[0].name, REVIEW_TOOL, SPLIT_TOOL)
    return ScriptedRequest(messages=[system, human, *more], tool_names=tools)


def check_request(world, content: str, result: str, *, goal: bool = True) -> ScriptedRequest:
    """A completion-check request as the verifier sends it (with or without the "Overall goal:" line)."""
    text = (f"Overall goal: {world.goal}\n\n" if goal else "") + f"Subtask (1): {content}\n\nResult:\n{result}"
    system = SystemMessage("... `remaining_tasks`: ... each covering at most 50 items.")
    return ScriptedRequest(messages=[system, HumanMessage(text)], tool_names=VERDICT_TOOLS)


def goal_check_request(world, items: list[int]) -> ScriptedRequest:
    """A goal-level check: the goal and the run's results, no "Subtask (" line."""
    results = "\n".join(world.page(i) for i in items)
    text = f"Goal: {world.goal}\n\nResults of the run, in plan order:\n{results}"
    system = SystemMessage("... `remaining_tasks`: ... each covering at most 50 items.")
    return ScriptedRequest(messages=[system, HumanMessage(text)], tool_names=VERDICT_TOOLS)


def verdict_args(reply) -> dict:
    [call] = as_message(reply).tool_calls
    assert call["name"] == "Verdict"
    return call["args"]


def read_starts(reply: AIMessage, tool: str) -> list[int]:
    return [c["args"]["start"] for c in reply.tool_calls if c["name"] == tool]


# ---------------------------------------------------------------------------------------------- the personas


def test_every_variant_is_a_persona_and_the_first_nine_stay():
    assert PERSONAS[:9] == (
        "compliant",
        "lazy",
        "sloppy",
        "repeater",
        "flaky",
        "blocks",
        "parallel",
        "text-calls",
        "reasoning",
    )
    assert PERSONAS[9:] == VARIANT_PERSONAS and len(set(PERSONAS)) == 19


def test_one_rest_hands_off_the_whole_rest_as_one_follow_up():
    world = CatalogWorld(19)
    state, _ = run_graph("one-rest", world, batch_size=5)
    assert follow_ups(state, "1") == [world.range_task(6, 19)]  # compliant queues 6-10, 11-15 and 16-19


def test_single_call_makes_one_tool_call_per_turn_and_never_reviews_or_hands_off():
    world = CatalogWorld(19)
    state, log = run_graph("single-call", world)
    replies = [reply for _, reply in worker_replies(log)]
    calls = [[c["name"] for c in reply.tool_calls] for reply in replies]
    assert calls == [["read_ranking"]] * 4 + [[]]  # four pages, one a turn, then the answer
    assert world.score(replies[-1].text) == 19
    assert world.score(state["final_answer"]) == 19


def test_single_call_continues_after_the_calls_a_continuation_lists():
    world = CatalogWorld(100)
    scripted = persona("single-call", world)
    listed = 'read_ranking {"start": 16, "count": 5}; read_ranking {"start": 21, "count": 5}'
    content = f"{world.range_task(1, 50)}\nTool calls so far (… and 3 earlier calls): {listed}"
    reply = as_message(scripted.respond(worker_request(world, content)))
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("read_ranking", {"start": 26, "count": 5})]
    # the check of that continuation asks only for what comes after the listed calls
    check = check_request(world, content, "\n".join(world.page(i) for i in range(26, 51)))
    assert verdict_args(scripted.respond(check))["complete"] is True


def test_single_call_reads_a_grouped_listing_and_its_own_conversation():
    world = CatalogWorld(100)
    scripted = persona("single-call", world)
    content = f"{world.range_task(1, 50)}\n(The tool calls so far: read_ranking ×5 with count 5, start 1-21 step 5.)"
    reply = as_message(scripted.respond(worker_request(world, content)))
    assert [c["args"] for c in reply.tool_calls] == [{"start": 26, "count": 5}]
    # in a window carried over and compressed, what its summary shows
    summary = HumanMessage(f"{SUMMARY_HEADER}\n\n" + "\n".join(world.page(i) for i in range(1, 31)))
    call = tool_call("read_ranking", {"start": 31, "count": 5})
    seen = [
        summary,
        AIMessage("", tool_calls=[call]),
        ToolMessage(world.tools[0].invoke(call["args"]), tool_call_id=call["id"]),
    ]
    reply = as_message(scripted.respond(worker_request(world, world.range_task(1, 50), more=seen)))
    assert [c["args"] for c in reply.tool_calls] == [{"start": 36, "count": 5}]


def test_a_continuation_reads_leniently():
    world = CatalogWorld(100)
    scripted = persona("single-call", world)
    prompt = 'Tool calls so far: read_ranking {"start": 41, "count": 5};read_ranking{"start": 46} and garbage {'
    assert scripted.read_through(prompt) == 50
    assert scripted.read_through('read_ranking {"start": 46, "count": 5} with no such sentence') == 0


def test_over_critical_check_asks_for_the_overall_goal_or_the_subtask_again():
    world = CatalogWorld(100)
    scripted = persona("over-critical", world)
    whole = "\n".join(world.page(i) for i in range(1, 51))
    with_goal = verdict_args(scripted.respond(check_request(world, world.range_task(1, 50), whole)))
    assert with_goal == {"complete": False, "remaining_tasks": [world.goal], "reason": NOT_EVERYTHING}
    without = verdict_args(scripted.respond(check_request(world, world.range_task(1, 50), whole, goal=False)))
    assert without["remaining_tasks"] == [world.range_task(1, 50)] and without["complete"] is False
    every = verdict_args(scripted.respond(goal_check_request(world, list(range(1, 101)))))
    assert every["remaining_tasks"] == [world.goal] and every["complete"] is False


def test_over_critical_check_in_a_run_asks_for_the_checked_subtask_again():
    world = CatalogWorld(19)
    _, log = run_graph("over-critical", world)
    checks = [(r, verdict_args(reply)) for r, reply in log if "Verdict" in r.tool_names and "Subtask (" in r.prompt]
    assert checks and all(
        a["remaining_tasks"] == [re.search(r"Subtask \([^)]*\): (.*)", r.prompt)[1]] for r, a in checks
    )


def test_overlapping_hand_off_repeats_its_batch_and_overlaps_the_rest():
    world = CatalogWorld(100)
    _, log = run_graph("overlapping", world)
    [split] = [c for _, reply in worker_replies(log) for c in reply.tool_calls if c["name"] == SPLIT_TOOL][:1]
    sent = [t["content"] for t in json.loads(split["args"]["tasks"])]
    assert sent == [world.range_task(1, 50), world.range_task(46, 95), world.range_task(91, 100)]


def test_overlapping_check_starts_five_items_early_and_runs_to_the_end():
    world = CatalogWorld(100)
    result = "\n".join(world.page(i) for i in [*range(1, 31), 40])
    args = verdict_args(persona("overlapping", world).respond(check_request(world, world.range_task(1, 50), result)))
    assert args["remaining_tasks"] == [world.range_task(26, 50)]
    compliant = verdict_args(persona("compliant", world).respond(check_request(world, world.range_task(1, 50), result)))
    assert compliant["remaining_tasks"] == [world.range_task(31, 39), world.range_task(41, 50)]


def test_paraphrase_hand_off_and_answers_name_no_item_but_its_final_answer_does():
    world = CatalogWorld(100)
    _, log = run_graph("paraphrase", world)
    splits = [c for _, reply in worker_replies(log) for c in reply.tool_calls if c["name"] == SPLIT_TOOL]
    assert splits, "the paraphrase persona hands off at N = 100"
    assert splits[0]["args"]["summary"] == world.described(1, 50) and world.score(splits[0]["args"]["summary"]) == 0
    answers = [reply.text for _, reply in worker_replies(log) if not reply.tool_calls]
    assert answers and all(world.score(text) == 0 for text in answers)
    request = ScriptedRequest([HumanMessage("\n".join(world.page(i) for i in range(1, 21)))], ())
    assert world.score(persona("paraphrase", world).respond(request)) == 20  # a final answer lists every item


def test_paraphrase_in_react_lists_every_item_in_both_worlds():
    for world in (CatalogWorld(19), ReportWorld(19)):
        assert react_agent(persona("paraphrase", world).model(), world).recovered == 19


def test_off_by_one_hand_off_starts_one_item_late_or_early():
    world = CatalogWorld(100)
    state, _ = run_graph("off-by-one", world)
    start = 52 if stable_hash("1") % 2 else 50
    assert follow_ups(state, "1") == [world.range_task(lo, hi) for lo, hi in batches(start, 100, 50)]


def test_off_by_one_in_react_pages_one_item_too_far_or_too_short():
    world = CatalogWorld(100)
    scripted = persona("off-by-one", world)
    model, log = recording(scripted)
    outcome = create_agent_baseline(todo_list=False)(model, world)
    starts = [s for _, reply in log for s in read_starts(reply, "read_ranking")]
    steps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert set(steps[:-1]) == {4, 6}  # one item read again, or one skipped: never a clean page of 5
    assert steps[-1] in {4, 5, 6}  # a skip that would pass the last item reads the last page instead
    assert outcome.recovered < 100


def test_partial_plan_plans_the_first_half_of_the_items():
    world = CatalogWorld(100)
    _, log = run_graph("partial-plan", world)
    [plan] = [reply.tool_calls[0]["args"]["tasks"] for r, reply in log if "Plan" in r.tool_names]
    assert [t["content"] for t in plan] == [world.range_task(1, 50)]
    report = ReportWorld(19)
    planned = persona("partial-plan", report).plan_tasks()
    assert [t["content"] for t in planned][0] == report.range_task(1, 10) and len(planned) == 3


@pytest.mark.parametrize("world_cls", [CatalogWorld, ReportWorld], ids=["catalog", "report"])
def test_tiny_plan_plans_one_subtask_per_item(world_cls):
    world = world_cls(19)
    _, log = run_graph("tiny-plan", world)
    [planned] = [reply.tool_calls[0]["args"]["tasks"] for r, reply in log if "Plan" in r.tool_names]
    assert [t["content"] for t in planned[:19]] == [world.item_task(k) for k in range(1, 20)]
    if world_cls is ReportWorld:
        compare, write = planned[19:]
        assert compare["depends_on"] == [t["id"] for t in planned[:19]] and write["depends_on"] == [compare["id"]]
    else:
        assert len(planned) == 19
    for item in (1, 7):  # a one-item subtask's first turn: one call for that item
        reply = as_message(persona("tiny-plan", world).respond(worker_request(world, world.item_task(item))))
        assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
            (world.tools[0].name, {"start": item, "count": 1})
        ]


def test_announcer_announces_its_first_call_and_makes_it_after_a_nudge():
    world = CatalogWorld(100)
    scripted = persona("announcer", world)
    first = as_message(scripted.respond(worker_request(world, world.range_task(51, 100))))
    assert not first.tool_calls and first.text == f"{ANNOUNCED} read_ranking to fetch products 51-55."
    nudge = HumanMessage("You described a tool call instead of making it: make the call now.")
    nudged = worker_request(world, world.range_task(51, 100), batch=20, more=[first, nudge])
    calls = as_message(scripted.respond(nudged)).tool_calls
    assert [c["args"]["start"] for c in calls if c["name"] == "read_ranking"] == [51, 56, 61, 66]  # a batch of 20
    assert calls[-1]["name"] == REVIEW_TOOL  # then it works like compliant


def test_announcer_ends_a_react_run_with_its_announcement():
    world = CatalogWorld(19)
    scripted = persona("announcer", world)
    outcome = react_agent(scripted.model(), world)
    assert outcome.recovered == 0 and scripted.requests == 1 and outcome.answer.startswith(ANNOUNCED)


def test_announcer_in_replangraph_announces_first_in_every_reading_subtask():
    world = CatalogWorld(100)
    _, log = run_graph("announcer", world)
    firsts = [reply for request, reply in worker_replies(log) if not any(m.type == "ai" for m in request.messages)]
    assert len(firsts) > 1 and all(not r.tool_calls and r.text.startswith(ANNOUNCED) for r in firsts)


@pytest.mark.parametrize("world_cls", [CatalogWorld, ReportWorld], ids=["catalog", "report"])
def test_cut_final_answers_name_ten_items_and_say_how_many_more(world_cls):
    world = world_cls(100)
    _, log = run_graph("cut-final", world)
    finals = [reply.text for request, reply in log if not request.tool_names and "Goal:" in request.prompt]
    assert finals and all(world.score(t) == 10 and t.endswith("... and 90 more.") for t in finals)
    react = react_agent(persona("cut-final", world).model(), world)
    assert react.recovered == 10 and react.answer.endswith("... and 90 more.")


@pytest.mark.parametrize("name", PERSONAS)
def test_goal_level_check_queues_the_goals_missing_items(name):
    world = CatalogWorld(100)
    scripted = persona(name, world)  # its decision, not its transport (text-calls writes the call as text)
    missing = verdict_args(scripted.answer(goal_check_request(world, [*range(1, 41), *range(61, 101)])))
    every = verdict_args(scripted.answer(goal_check_request(world, list(range(1, 101)))))
    if name == "over-critical":
        assert missing["remaining_tasks"] == every["remaining_tasks"] == [world.goal]
        return
    expected = [world.range_task(41, 60)]
    if name == "overlapping":
        expected = [world.range_task(36, 85), world.range_task(86, 100)]
    assert missing["complete"] is False and missing["remaining_tasks"] == expected
    assert every == {"complete": True, "remaining_tasks": [], "reason": "every item of the goal is there"}


@pytest.mark.parametrize(("name", "turn"), [("compliant", [6, 11, 16]), ("single-call", [6])])
def test_the_fallback_agent_reads_what_the_attached_results_lack_then_answers_with_every_item(name, turn):
    world = CatalogWorld(19)
    scripted = persona(name, world)
    brief = f"{TAKE_OVER}: the plan for it stopped (no replans were left). You are the one agent that takes over."
    done = "\n".join(world.page(i) for i in range(1, 6))
    request = worker_request(world, brief, task_id="fallback", more=[HumanMessage(f"Results:\n{done}")])
    assert read_starts(as_message(scripted.respond(request)), "read_ranking") == turn
    pages = [world.tools[0].invoke({"start": lo, "count": 5}) for lo in (6, 11, 16)]
    calls = [tool_call("read_ranking", {"start": lo, "count": 5}) for lo in (6, 11, 16)]
    window = [AIMessage("", tool_calls=calls)] + [
        ToolMessage(page, tool_call_id=call["id"], name="read_ranking") for page, call in zip(pages, calls, strict=True)
    ]
    later = worker_request(world, brief, task_id="fallback", more=[request.messages[-1], *window])
    answer = as_message(scripted.respond(later))
    assert not answer.tool_calls and world.score(answer.text) == 19


def test_a_worker_given_the_whole_goal_reads_every_item():
    world = CatalogWorld(100)
    reply = as_message(persona("compliant", world).respond(worker_request(world, world.goal)))
    assert read_starts(reply, "read_ranking") == list(range(1, 51, 5)) and reply.tool_calls[-1]["name"] == REVIEW_TOOL


# ---------------------------------------------------------------------------------------------- the matrix


def outcome(recovered: int, calls: int, size: int = 100) -> Outcome:
    return Outcome(recovered, size, calls, 0, 0, 0, 0.0)


def test_matrix_targets_judge_recall_and_both_call_ratios():
    row = matrix.Row("catalog", 100, "single-call", outcome(100, 40), outcome(100, 21), 7)
    judged = row.targets()
    assert [judged[k].met for k in "abcd"] == [True, True, True, False]
    assert judged["c"].figure == "1.9×" and judged["d"].figure == "5.7×" and row.disagrees()
    lossy = matrix.Row("catalog", 100, "cut-final", outcome(10, 7), outcome(10, 21), 7).targets()
    assert [lossy[k].met for k in "abcd"] == [False, True, None, True]  # (c) only where ReAct recalls everything
    worse = matrix.Row("catalog", 100, "paraphrase", outcome(0, 40), outcome(100, 21), 7).targets()
    assert worse["b"].met is False and worse["b"].figure == "0.00 vs 1.00"
    assert matrix.tally([row]) == (3, 4)
    short_of_all = matrix.Row("catalog", 1000, "off-by-one", outcome(999, 62, 1000), outcome(907, 205, 1000), 62)
    assert short_of_all.targets()["a"] == matrix.Target(False, "0.999")  # never shown as 1.00
    assert short_of_all.targets()["b"].figure == "0.999 vs 0.91"


def test_matrix_prints_a_table_per_world_and_writes_every_figure(tmp_path):
    out = io.StringIO()
    path = tmp_path / "matrix.json"
    args = ["--worlds", "catalog", "--personas", "compliant", "cut-final", "--sizes", "19", "--json", str(path)]
    assert matrix.main(args, out=out) == 0
    text = out.getvalue()
    assert text.startswith("Machine: ") and "**catalog world**" in text and matrix.LEGEND in text
    rows = [line for line in text.splitlines() if line.startswith("| 19 |")]
    assert [line.split(" | ")[1] for line in rows] == ["compliant", "cut-final"]
    assert all(line.count(" | ") == 7 for line in rows)  # N, persona, two agents, four targets
    met, applicable = map(int, re.search(r"^targets met: (\d+) of (\d+)$", text, flags=re.MULTILINE).groups())
    figures = json.loads(path.read_text())
    assert (figures["targets_met"], figures["targets_applicable"]) == (met, applicable) and applicable == 7
    cut = figures["rows"][1]
    assert cut["persona"] == "cut-final" and cut["react"]["recovered"] == 10
    met = cut["replangraph"]["recovered"] == 19
    assert cut["targets"]["a"] == {
        "met": met,
        "figure": "1.00" if met else f"{cut['replangraph']['recovered'] / 19:.2f}",
    }


def test_matrix_leaves_report_sizes_above_250_out():
    out = io.StringIO()
    matrix.main(["--worlds", "report", "--personas", "compliant", "--sizes", "19", "1000"], out=out)
    assert "N = 1000 left out" in out.getvalue()
    assert [line.split(" | ")[0] for line in out.getvalue().splitlines() if line.startswith("| 1")] == ["| 19"]


def test_matrix_is_registered():
    from benchmarks.__main__ import BENCHMARKS

    assert BENCHMARKS["matrix"] == "benchmarks.matrix"


def test_replangraph_on_defaults_is_the_matrix_agent():
    """The matrix's replangraph column runs AgentConfig's defaults, the completion check included."""
    world = CatalogWorld(19)
    ours, _ = matrix.agents()
    lazy = persona("lazy", world, pages_per_turn=1)
    assert ours(lazy.model(), world).recovered == 19
    assert replangraph_agent(verify=False)(persona("lazy", world, pages_per_turn=1).model(), world).recovered == 5


def test_a_one_call_a_turn_persona_is_compared_with_compliant_making_one_call_a_turn():
    [row] = matrix.rows("catalog", [19], ["single-call"])
    one_call = matrix.run(matrix.agents()[0], "compliant", CatalogWorld, 19, 0, pages_per_turn=1)
    batch = matrix.run(matrix.agents()[0], "compliant", CatalogWorld, 19, 0)
    assert (row.baseline_calls, row.batch_baseline_calls) == (one_call.calls, batch.calls)
    assert one_call.calls > batch.calls  # one page a turn takes more turns than a batch in one
    assert row.as_json()["replangraph_compliant_batch_calls"] == batch.calls
