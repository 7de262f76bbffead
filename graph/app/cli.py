"""Console script: ``replangraph demo`` (offline, scripted) and ``replangraph run "GOAL"`` (real model)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any, TextIO

from replangraph.config import AgentConfig
from replangraph.events import (
    COMMAND_ANSWERED,
    CONTEXT_COMPRESSED,
    DYNAMIC_TASKS_ADDED,
    PLAN_COMPLETED,
    PLAN_CREATED,
    PLAN_REVIEWED,
    QUESTION_ANSWERED,
    REPLANNING,
    STEP_COMPLETED,
    STEP_FAILED,
    STEP_STARTED,
    STEP_VERIFIED,
)
from replangraph.queue import plan_summary, preview

QUEUE_CHANGES = {PLAN_CREATED, DYNAMIC_TASKS_ADDED, REPLANNING}


def describe(event: Mapping[str, Any]) -> str:
    """One line for a custom stream event."""
    name = event["event"]
    if name == PLAN_CREATED:
        note = f" (fallback: {event['fallback_reason']})" if event.get("fallback_reason") else ""
        notes = "".join(f"; note: {n}" for n in event.get("notes") or ())
        return f"plan created with {len(event['tasks'])} task(s){note}{notes}"
    if name == STEP_STARTED:
        return f"{event['task_id']} started ({event['agent_type']}): {preview(event['content'], 70)}"
    if name == STEP_COMPLETED:
        return f"{event['task_id']} completed: {preview(event['result_preview'], 70)}"
    if name == STEP_FAILED:
        return f"{event['task_id']} failed: {preview(event['error'], 100)}"
    if name == STEP_VERIFIED:
        verdict = "complete" if event["complete"] else "incomplete"
        why = f" ({preview(event['reason'], 70)})" if event.get("reason") else ""
        queued = f"; queued {', '.join(event['follow_up_ids'])}" if event.get("follow_up_ids") else ""
        trouble = f"; {preview(event['error'], 80)}" if event.get("error") else ""
        return f"{event['task_id']} checked: {verdict}{why}{queued}{trouble}"
    if name == DYNAMIC_TASKS_ADDED:
        if event.get("source") == "verifier":
            return f"{event['parent_id']}: the check added {', '.join(event['task_ids'])}"
        return f"{event['parent_id']} handed off work: added {', '.join(event['task_ids'])}"
    if name == REPLANNING:
        new = f", new tasks {', '.join(event['new_task_ids'])}" if event["new_task_ids"] else ""
        why = f"{event['trigger']}: {preview(event['reason'], 60)}"
        return f"replanning after {event['task_id']} ({why}): {event['outcome']}{new}"
    if name == CONTEXT_COMPRESSED:
        return f"{event['task_id']} context compressed: {event['tokens_before']} -> {event['tokens_after']} tokens"
    if name == PLAN_COMPLETED:
        return "plan completed: " + ", ".join(f"{k} {v}" for k, v in event["counts"].items() if v)
    if name == PLAN_REVIEWED:
        return f"plan {event['decision']} ({len(event['tasks'])} task(s))"
    if name == QUESTION_ANSWERED:
        return f"{event['task_id']} asked {preview(event['question'], 60)!r}: {preview(event['answer_preview'], 60)}"
    if name == COMMAND_ANSWERED:
        return f"{event['command']}: {preview(event['reply'], 100)}"
    return f"{name}: {dict(event)}"


def watch(graph: Any, inputs: dict, config: dict, out: TextIO) -> dict:
    """Stream a run, printing each event and the queue whenever it changes; returns the final state."""
    state: dict = {}
    stream: Iterator = graph.stream(inputs, config, stream_mode=["custom", "values"])
    pending_queue_print = False
    for mode, chunk in stream:
        if mode == "values":
            state = chunk
            if pending_queue_print and state.get("tasks"):
                print("  " + plan_summary(state["tasks"]).replace("\n", "\n  "), file=out)
                pending_queue_print = False
            continue
        print(f"- {describe(chunk)}", file=out)
        pending_queue_print = pending_queue_print or chunk["event"] in QUEUE_CHANGES
    return state


def run_demo(out: TextIO) -> int:
    """The bundled scripted scenario; exit code 0 when all products reach the final answer."""
    from replangraph.app.demo import DEMO_GOAL, build_demo_graph, expected_products

    print("replangraph demo: SCRIPTED chat model, no LLM is called.", file=out)
    print("The scripted worker reads 5 products per subtask and hands the rest off.\n", file=out)
    print(f"Goal: {DEMO_GOAL}\n", file=out)
    graph = build_demo_graph()
    state = watch(graph, {"messages": [("user", DEMO_GOAL)]}, {"configurable": {"thread_id": "demo"}}, out)
    answer = state.get("final_answer", "")
    print(f"\nFinal answer:\n{answer}\n", file=out)
    wanted = expected_products(19)
    found = sum(name in answer for name in wanted)
    print(f"Check: {found}/{len(wanted)} products in the final answer.", file=out)
    return 0 if found == len(wanted) else 1


def load_tools(specs: list[str]) -> list:
    """Tools named ``module:attr`` (a tool, a function, or a list of them)."""
    tools: list = []
    for spec in specs:
        module_name, _, attr = spec.partition(":")
        if not attr:
            raise SystemExit(f"--tools expects module:attribute, got {spec!r}")
        try:
            found = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise SystemExit(f"cannot load tools {spec!r}: {exc}") from None
        tools.extend(found if isinstance(found, list | tuple) else [found])
    return tools


def run_goal(goal: str, args: argparse.Namespace, out: TextIO) -> int:
    """Run a real model through ChatOpenAI (any OpenAI-compatible server via OPENAI_BASE_URL)."""
    if not os.environ.get("OPENAI_API_KEY") and not os.environ.get("OPENAI_BASE_URL"):
        print(
            "replangraph run needs a model: set OPENAI_API_KEY (and optionally OPENAI_BASE_URL for an "
            "OpenAI-compatible server such as vLLM, Ollama or llama.cpp). Try `replangraph demo` to run offline.",
            file=sys.stderr,
        )
        return 2
    from replangraph.app.studio import chat_model_from_env
    from replangraph.builder import build_graph

    config = AgentConfig(max_steps=args.max_steps, max_concurrency=args.concurrency, verify_results=args.verify)
    graph = build_graph(chat_model_from_env(args.model), tools=load_tools(args.tools), config=config)
    state = watch(graph, {"messages": [("user", goal)]}, {}, out)
    print(f"\nFinal answer:\n{state.get('final_answer', '')}", file=out)
    return 0


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point of the ``replangraph`` console script."""
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="replangraph", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run the bundled offline scenario with a scripted model")
    run = sub.add_parser("run", help="run a goal with a real model (ChatOpenAI)")
    run.add_argument("goal")
    run.add_argument("--model", default=None, help="model name (default: $REPLANGRAPH_MODEL or gpt-4o-mini)")
    run.add_argument("--tools", action="append", default=[], metavar="MODULE:ATTR", help="tools to give the agents")
    run.add_argument("--max-steps", type=int, default=AgentConfig().max_steps)
    run.add_argument("--concurrency", type=int, default=AgentConfig().max_concurrency)
    run.add_argument("--verify", action="store_true", help="check each result and queue what is missing")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return run_demo(out)
    return run_goal(args.goal, args, out)


if __name__ == "__main__":
    sys.exit(main())
