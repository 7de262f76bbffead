"""Graphs the Temporal system tests serve from worker processes (`temporal_worker.py`), and run in-process beside.

Each is a function returning what `build_graph` returns, so a worker process builds its own.
"""

from __future__ import annotations

import re
from pathlib import Path

from clocks import hold_until_go
from docs_support import blocks
from langgraph.checkpoint.memory import InMemorySaver
from scripting import LOOKUP_STEPS, look_item, look_then_answer, make_model, plan_of, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.testing import ScriptedChatModel, tool_call

README = Path(__file__).resolve().parents[2] / "README.md"
README_GOAL = "Look up the yearly rainfall of seven cities."


def readme_example():
    """The graph of the README's first example, from the README's own code (up to its ``graph.invoke``)."""
    block = next(b for b in blocks(README) if b.lang == "python" and "def rainfall" in b.text)
    namespace: dict = {"__name__": "readme_example"}
    exec(block.text.split("\nout = graph.invoke")[0], namespace)  # noqa: S102 - the README's own example
    return namespace["graph"]


def failing_on_b(how: str = "bug"):
    """Three subtasks; whenever the model works on ``b`` it fails: ``bug``, ValueError (a bug, not a flaky call);
    ``server``, ConnectionError through every retry (a model server that stopped answering: a run that can pause
    pauses in-process)."""

    def respond(request):
        if "Plan" in request.tool_names:
            return tool_call("Plan", {"tasks": [{"id": t, "content": t} for t in ("a", "b", "c")]})
        subtask = subtask_of(request)
        if subtask == "b":
            raise ValueError("the parser crashed on b") if how == "bug" else ConnectionError("connection refused")
        if subtask in ("a", "c"):
            return f"result of {subtask}"
        return "final: " + ", ".join(sorted(set(request.prompt.split()) & {"a", "b", "c"}))

    config = AgentConfig(verify_results=False, retry_backoff_s=0, model_retries=1)
    return build_graph(ScriptedChatModel(respond=respond), config=config)


def server_down_on_b(folder: str):
    """Three subtasks; while ``folder/down`` exists the model server does not answer for ``b`` (ConnectionError
    through every retry), and the graph pauses for that (``pause_when_model_down``, as the CLI builds it)."""
    down = Path(folder) / "down"

    def respond(request):
        if "Plan" in request.tool_names:
            return tool_call("Plan", {"tasks": [{"id": t, "content": t} for t in ("a", "b", "c")]})
        subtask = subtask_of(request)
        if subtask == "b" and down.exists():
            raise ConnectionError("connection refused")
        if subtask in ("a", "b", "c"):
            return f"result of {subtask}"
        return "final: " + ", ".join(sorted(set(re.findall(r"result of (\w)", request.prompt))))

    config = AgentConfig(verify_results=False, retry_backoff_s=0, model_retries=1, pause_when_model_down=True)
    return build_graph(ScriptedChatModel(respond=respond), config=config)


SALES_PLAN = plan_of(
    {"id": "1", "content": "Sum up the sales of the year the user names."},
    {"id": "2", "content": "Report the sales.", "depends_on": ["1"]},
)


def asking(approve_plan: str = "") -> object:
    """Two subtasks; the first one's agent asks the user which year (when ask_user is offered: the run can pause),
    then reports that year's sales. With ``approve_plan`` ("yes"), the plan waits for approval first. The final
    answer holds every result."""

    def work(request):
        if subtask_of(request).startswith("Sum up"):
            if "ask_user" in request.tool_names and not request.called("ask_user"):
                return tool_call("ask_user", {"question": "Which year?"})
            return f"Sales of {request.last_result('ask_user')}: 1,204 units."
        return f"{subtask_of(request)} done"

    settings = AgentConfig(verify_results=False, approve_plan=bool(approve_plan))
    return build_graph(make_model(SALES_PLAN, work), config=settings, checkpointer=InMemorySaver())


def waiting_tool(folder: str):
    """A tool that, given a folder, writes ``started`` there and returns once ``go`` appears (a test holds the
    run in it, then lets it go); without one it returns at once."""

    def wait_for_go(item: str) -> str:
        """Fetch an item."""
        if folder:
            hold_until_go(folder, item)
        return f"{item} fetched"

    return wait_for_go


CHAIN_PLAN = plan_of(
    {"id": "1", "content": "fetch the paint"},
    {"id": "2", "content": "paint the door", "depends_on": ["1"]},
    {"id": "3", "content": "clean the brushes", "depends_on": ["2"]},
)


def chain(folder: str = "") -> object:
    """Three subtasks, one after another; each agent calls ``wait_for_go`` once, then reports. Held in the first
    call while ``folder`` is given (`waiting_tool`). No checks: one model request per turn, in a fixed order."""

    def work(request):
        if not request.called("wait_for_go"):
            return tool_call("wait_for_go", {"item": subtask_of(request)})
        return f"{subtask_of(request)}: {request.last_result('wait_for_go')}"

    settings = AgentConfig(verify_results=False)
    model = make_model(CHAIN_PLAN, work)
    return build_graph(model, tools=[waiting_tool(folder)], config=settings, checkpointer=InMemorySaver())


def logged_calls(subtasks: str, log: str, call_s: str, concurrency: str = ""):
    """``subtasks`` subtasks, each one call of ``work(item)``, which takes ``call_s`` seconds and writes
    ``START pid item`` and ``END pid item`` lines to ``log`` (fsynced, so a killed worker's lines are there).
    The graph's own ``max_concurrency``: ``concurrency`` (default: ``subtasks``)."""
    import asyncio
    import os

    from langchain_core.tools import tool

    def write(line: str) -> None:
        with open(log, "a") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())

    @tool
    async def work(item: str) -> str:
        """Work on one item."""
        write(f"START {os.getpid()} {item}")
        await asyncio.sleep(float(call_s))
        write(f"END {os.getpid()} {item}")
        return f"{item} done"

    items = [f"item-{n}" for n in range(int(subtasks))]

    def respond(request):
        if "Plan" in request.tool_names:
            return tool_call("Plan", {"tasks": [{"id": item, "content": item} for item in items]})
        subtask = subtask_of(request)
        if subtask:
            done = [m.content for m in request.tool_results]
            return done[0] if done else tool_call("work", {"item": subtask})
        return "\n".join(sorted(set(re.findall(r"item-\d+ done", request.prompt))))

    config = AgentConfig(verify_results=False, max_concurrency=int(concurrency or subtasks))
    return build_graph(ScriptedChatModel(respond=respond), tools=[work], config=config)


def catalog_run(items: str):
    """The splits benchmark's lazy-catalog world at ``items`` items (``items`` / 5 subtasks): the lazy persona reads
    5 products and stops, and the completion check queues the rest (`benchmarks.temporal_size.catalog_graph`)."""
    from benchmarks.temporal_size import catalog_graph

    return catalog_graph(items)


def huge_output(megabytes: str, log: str):
    """One subtask whose one call returns ``megabytes`` MB of text and writes a ``CALL pid`` line to ``log``; the
    subtask's answer says how many characters of it its model saw (`benchmarks.temporal_size.huge_graph`)."""
    from benchmarks.temporal_size import huge_graph

    return huge_graph(megabytes, log)


PANEL = ("careful", "fast", "thorough")


def team_panel():
    """A team of three agent types on subtask 1 (`Team`, merge ``best``), a judge that picks the second member,
    then subtask 2 alone; every reply chosen from the request."""
    from replangraph import AgentProfile, Team

    def member(name: str) -> AgentProfile:
        return AgentProfile(
            description=f"the {name} agent", model=ScriptedChatModel(respond=lambda r: f"answer from {name}")
        )

    def respond(request):
        if "Plan" in request.tool_names:
            return plan_of(
                {"id": "1", "content": "find the answer", "agent_type": "panel", "depends_on": []},
                {"id": "2", "content": "write it up", "depends_on": ["1"]},
            )
        if "You judge the results" in request.system or "Several agents each did" in request.system:
            return '{"winner": 2, "reason": "fast is right"}'
        if request.tool_names:
            return "written up"
        return "FINAL:\n" + request.prompt

    return build_graph(
        ScriptedChatModel(respond=respond),
        agents={name: member(name) for name in PANEL},
        teams={"panel": Team(members=list(PANEL), merge="best")},
        config=AgentConfig(verify_results=False, max_concurrency=3),
    )


def budgeted(token_budget: str = "2500"):
    """Six subtasks, each one ``look`` call then an answer, under a token budget that ends the run early. With a
    checkpointer, as a run on Temporal can pause too (the agents are offered ``ask_user``: the same prompts)."""

    config = AgentConfig(verify_results=False, token_budget=int(token_budget))
    model = make_model(plan_of(*LOOKUP_STEPS), look_then_answer)
    return build_graph(model, [look_item], config=config, checkpointer=InMemorySaver())


def deadlined(deadline_s: str = "3", call_s: str = "1"):
    """Six subtasks one at a time, each one ``look`` call that takes ``call_s`` real seconds, then an answer, under a
    deadline of ``deadline_s`` seconds that passes midway (the rule that checks it runs in the workflow)."""
    import time

    def slow_look(item: str) -> str:
        """Looks one item up, slowly."""
        time.sleep(float(call_s))
        return look_item(item)

    def work(request):
        item = subtask_of(request).rsplit(" ", 1)[-1]
        if not request.called("slow_look"):
            return tool_call("slow_look", {"item": item})
        return f"item {item} has value {int(item) * 7}"

    config = AgentConfig(verify_results=False, max_concurrency=1, deadline_s=float(deadline_s))
    model = make_model(plan_of(*LOOKUP_STEPS), work)
    return build_graph(model, [slow_look], config=config, checkpointer=InMemorySaver())


def big_answer(megabytes: str):
    """One subtask; the final answer is ``megabytes`` MB of text (a line naming the subtask's result, repeated)."""

    def respond(request):
        if "Plan" in request.tool_names:
            return tool_call("Plan", {"tasks": [{"id": "1", "content": "Write the long report."}]})
        if subtask_of(request):
            return "the report's line"
        line = "the report's line, once more\n"
        return line * (int(float(megabytes) * 1_000_000) // len(line))

    return build_graph(ScriptedChatModel(respond=respond), config=AgentConfig(verify_results=False))
