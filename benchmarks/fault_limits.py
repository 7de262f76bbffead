"""The fault matrix's probes 13-17: the review's items that the regression tests cover, at larger sizes.

A failed handed-off child, the outputs in a completing subtask's window, a huge refused tool call, the
fallback report of a huge queue, and the workspace file tools raced by another writer. Each runs the scenario
of its regression test (`tests/helpers/scenarios.py`) and returns a `Finding` with figures.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from pathlib import Path

from langgraph.store.memory import InMemoryStore

from replangraph import AgentConfig, build_graph
from replangraph.context.window_monitor import ContextMonitor
from replangraph.durable import kept_output, kept_output_ids
from replangraph.nodes.finalize.finalizer import Finalizer
from replangraph.nodes.finalize.report import REPORT_MAX_CHARS
from replangraph.testing import ScriptedChatModel
from replangraph.tools import SPLIT_TOOL

from .fault_probes import FAILURE_RATE, HELPERS, SEEDS, FailingLoopback, Finding, chat_openai
from .personas import persona
from .worlds import ReportWorld

if str(HELPERS) not in sys.path:  # the scenarios are the regression tests' own
    sys.path.insert(0, str(HELPERS))

from scenarios import (  # noqa: E402
    HUGE_SPLIT,
    OUTSIDE,
    SECRET,
    append_at_once,
    call,
    contents,
    exchanger,
    file_tools,
    handoff_then_failure_work,
    huge_queue,
    huge_split_work,
    item_reader,
    item_text,
    make_outside,
    race_a_swapped_link,
    read_item,
)
from scripting import make_model, plan_of  # noqa: E402

THREAD = {"configurable": {"thread_id": "t"}}

# 13. A failed child ----------------------------------------------------------------------------------------------


def recovery_path(how: str, path: str) -> tuple[bool, bool]:
    """``(ran, lost)``: whether the recovery ``path`` ("replanned": a subtask the replanner puts on the parent;
    "fallback": the single-agent fallback) ran after ``1_dyn_0`` failed by ``how``, and whether its answer
    was lost from the final answer."""
    seen: dict[str, str] = {}
    plan = plan_of({"id": "1", "content": "collect"}, {"id": "2", "content": "report", "depends_on": ["1"]})
    replanned = plan_of({"id": "3", "content": "finish from what was collected", "depends_on": ["1"]})
    replan = (lambda request: replanned) if path == "replanned" else None
    model = make_model(plan, handoff_then_failure_work(how, seen), replan=replan)
    state = build_graph(model, config=AgentConfig(retry_backoff_s=0.0)).invoke({"messages": [("user", "do it")]})
    tasks, answer = state["tasks"], state.get("final_answer") or ""
    if path == "replanned":
        ran = tasks.get("3", {}).get("status") == "completed" and "first half" in seen.get(
            "finish from what was collected", ""
        )
        return ran, "result of finish from what was collected" not in answer
    fallback = tasks.get("fallback", {})
    ran = fallback.get("status") == "completed" and fallback.get("model_calls", 0) >= 1
    return ran, "finished alone" not in answer


def flaky_splits(seeds, items: int) -> tuple[list[int], int, list[str]]:
    """The review's run: a loopback server failing 30 % of requests (seeded), the compliant persona splitting
    ``items`` cities of the report world (look up, then compare and report on what was looked up); some
    handed-off children fail after replangraph's retries. ``(items lost per seed, failed children, crashes)``."""
    lost, failed_children, crashes = [], 0, []
    for seed in seeds:
        world, draw = ReportWorld(items), random.Random(seed)
        server = FailingLoopback(persona("compliant", world).respond, lambda d=draw: d.random() < FAILURE_RATE)
        with server:
            model = chat_openai(server.base_url, max_retries=0)
            # Batches of one page (4 cities): many handed-off children, as the review measured it.
            config = AgentConfig(retry_backoff_s=0.001, verify_results=False, batch_size=world.batch)
            graph = build_graph(model, tools=world.tools, config=config)
            try:
                state = graph.invoke({"messages": [("user", world.goal)]})
            except Exception as exc:  # a crashed run loses every item
                state, _ = {}, crashes.append(type(exc).__name__)
        tasks = (state.get("tasks") or {}).values()
        failed_children += sum(t["status"] == "failed" and bool(t.get("parent_id")) for t in tasks)
        lost.append(items - world.score(state.get("final_answer") or ""))
    return lost, failed_children, crashes


def failed_child(args: argparse.Namespace) -> Finding:
    outcomes = [recovery_path(how, path) for how in ("raises", "marker") for path in ("replanned", "fallback")]
    ran, lost_paths = sum(r for r, _ in outcomes), sum(lost for _, lost in outcomes)
    items, seeds = 50, SEEDS[:4] if args.quick else SEEDS
    lost, children, crashes = flaky_splits(seeds, items)
    crashed = f"; runs crashed {len(crashes)} ({', '.join(sorted(set(crashes)))})" if crashes else ""
    return Finding(
        ran == len(outcomes) and lost_paths == 0 and sum(lost) == 0 and not crashes,
        f"recovery paths run {ran}/{len(outcomes)} (replanned subtask on the parent, fallback; child raises or "
        f"answers [REPLAN]), their answers lost {lost_paths}; 30 % failing provider, {len(seeds)} seeds × "
        f"{items} items with splits: handed-off children failed {children}, items lost "
        f"{sum(lost)} (per seed {lost}){crashed}",
    )


# 14. Window outputs on completion --------------------------------------------------------------------------------


def window_outputs(args: argparse.Namespace) -> Finding:
    items, figures, bad = 60, [], 0
    for verify in (False, True):
        for store in (None, InMemoryStore()):
            model = make_model(plan_of({"id": "1", "content": "read the items"}), item_reader(items))
            config = AgentConfig(verify_results=verify, max_observations=15, max_step_iterations=items + 10)
            state = build_graph(model, tools=[read_item], config=config, store=store).invoke(
                {"messages": [("user", "do it")]}, THREAD
            )
            ids = kept_output_ids(state, store, "t")
            texts = [kept_output(state, store, "t", ident) or "" for ident in ids if not ident.endswith("/result")]
            kept = [sum(item_text(n) in t for t in texts) for n in range(1, items + 1)]
            none, twice = kept.count(0), sum(k > 1 for k in kept)
            result = kept_output(state, store, "t", "1/result") or ""
            carried = sum(bool(re.search(rf"\bITEM-{n}\b", result)) for n in range(1, items + 1))  # named or whole
            status = state["tasks"]["1"]["status"]
            bad += none + twice + (status != "completed") + (items - carried)
            where = f"{'verifier' if verify else 'executor'} completes, {'store' if store else 'state'}"
            figures.append(f"{where}: outputs kept 0 times {none}, twice {twice}; in the result {carried}")
    return Finding(bad == 0, f"{items} items read one per turn, 15 outputs in the window; " + "; ".join(figures))


# 15. A huge refused tool call ------------------------------------------------------------------------------------

READ_PAGE = re.compile(r'output "1/huge-args", characters (\d+)-')


def huge_call(args: argparse.Namespace) -> Finding:
    config = AgentConfig(verify_results=False)
    monitor, seen, store = ContextMonitor(config), [], InMemoryStore()
    model = make_model(plan_of({"id": "1", "content": "extract all items"}), huge_split_work(monitor, seen))
    state = build_graph(model, config=config, store=store).invoke({"messages": [("user", "do it")]}, THREAD)
    statuses = {t: s["status"] for t, s in state["tasks"].items()}
    whole = json.dumps(HUGE_SPLIT, ensure_ascii=False)  # as the workspace keeps it
    compact = len(json.dumps(HUGE_SPLIT, separators=(",", ":")))  # as a model sends it
    largest = max((tokens for tokens, _ in seen[1:]), default=0)  # the requests after the huge call
    refused = "100000 more do not fit" in ((seen[1][1].last_result(SPLIT_TOOL) if len(seen) > 1 else "") or "")
    readable = kept_output(state, store, "t", "1/huge-args") == whole
    pages = [r.last_result("read_output") or "" for _, r in seen if r.called("read_output")]
    page = next((p for p in pages if READ_PAGE.match(p)), "")
    start = int(READ_PAGE.match(page).group(1)) if page else -1
    page_right = start >= 0 and whole[start : start + 2_000] in page
    held = statuses == {"1": "completed", "1_dyn_0": "completed"} and refused and readable and page_right
    held = held and largest <= monitor.budget
    error = "" if statuses.get("1") == "completed" else f" (1: {str(state['tasks']['1'].get('error'))[:80]})"
    return Finding(
        held,
        f"split of 100,000 tasks ({compact / 1e6:.1f} MB of arguments): refused {refused}; subtasks "
        f"{statuses}{error}; largest later request {largest:,} tokens (budget {monitor.budget:,}); whole arguments "
        f"kept and equal {readable}; page read back by offset equal {page_right}",
    )


# 16. The fallback report on a huge queue -------------------------------------------------------------------------


def listed_ids(text: str, statuses: str) -> list[str]:
    return re.findall(rf"^- (t\d+) \((?:{statuses})\)", text, re.M)


def huge_report(args: argparse.Namespace) -> Finding:
    done, failed, waiting = 3_000, 1_500, 500
    tasks = huge_queue(done, failed, waiting)
    goal = "Extract the whole catalogue " * 2_000
    finalizer = Finalizer(ScriptedChatModel(respond=lambda request: "unused"), AgentConfig())
    update = finalizer({"tasks": tasks, "goal": goal, "replans": [{"outcome": "gave_up"}] * 2})
    report = update["final_answer"]
    state = {"tasks": tasks, "goal": goal, "workspace": update.get("workspace") or {}}
    completed = kept_output(state, None, "t", "report-1/completed") or ""
    unfinished = kept_output(state, None, "t", "report-1/not-finished") or ""
    done_ok = listed_ids(completed, "completed") == [f"t{n}" for n in range(done)]
    open_ok = listed_ids(unfinished, "failed|skipped") == [f"t{n}" for n in range(done, done + failed + waiting)]
    readable = done * done_ok + (failed + waiting) * open_ok
    total = done + failed + waiting
    return Finding(
        len(report) <= REPORT_MAX_CHARS and readable == total,
        f"{total:,} subtasks ({done:,} completed, {failed:,} failed, {waiting} skipped): report "
        f"{len(report):,} characters (cap {REPORT_MAX_CHARS:,}); whole lists read back by id: {readable:,} of "
        f"{total:,} subtasks, {len(completed) + len(unfinished):,} characters",
    )


# 17. Workspace files under attack --------------------------------------------------------------------------------


def hard_link_refused(folder: Path) -> tuple[int, bool]:
    """``(refused, outside changed)``: of a read, an overwrite and an append of a hard link to a file outside,
    how many were refused, and whether the files outside changed."""
    outside = make_outside(folder / "outside-linked")
    ws = file_tools(folder / "ws")
    (folder / "ws").mkdir(exist_ok=True)
    (folder / "ws/linked.txt").hardlink_to(outside / "secret.txt")
    replies = [call(ws["read_file"], path="linked.txt")]
    replies += [call(ws["write_file"], path="linked.txt", content="x", append=a) for a in (False, True)]
    return sum(r.status == "error" and SECRET not in r.content for r in replies), contents(outside) != OUTSIDE


def workspace_attacks(args: argparse.Namespace) -> Finding:
    rounds, cap = (100 if args.quick else 300), 2_000
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        refused, linked_changed = hard_link_refused(folder)
        outside = make_outside(folder / "outside")
        ws = file_tools(folder / "appends", max_write_bytes=cap)
        replies = append_at_once(ws, threads=8, times=50)
        sizes = [int(n) for r in replies for n in re.findall(r"\(now (\d+) bytes\)", r)]
        largest = max([*sizes, (folder / "appends/log.txt").stat().st_size])
        races, swaps, secret_read, listed_out = 0, 0, 0, 0
        if exchanger() is not None:
            for swapped in ("folder", "file"):
                race = race_a_swapped_link(folder / f"race-{swapped}", outside, swapped, rounds)
                races, swaps = races + rounds, swaps + race["swaps"][0]
                secret_read += sum(SECRET in r.content for r in race["reads"])
                listed_out += sum("only-outside" in r.content for r in race["lists"])
        written_out = contents(outside) != OUTSIDE
    held = refused == 3 and not linked_changed and largest <= cap and secret_read == listed_out == written_out == 0
    race = f"{races} rounds under a swapped link ({swaps:,} swaps): " if races else "no renameat2, no race: "
    return Finding(
        held,
        f"hard link out: refused {refused}/3 (read, overwrite, append), file outside changed {int(linked_changed)}; "
        f"8 threads × 50 appends of 10 bytes, cap "
        f"{cap:,}: largest size seen {largest:,}; {race}reads outside {secret_read}, listings outside "
        f"{listed_out}, files outside changed {int(written_out)}",
    )
