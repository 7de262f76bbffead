"""The scripted model of test_langgraph_dev, and the agent types its ``langgraph dev`` server loads.

The responder answers the requests the graph sends to the loopback OpenAI server: planner, executor,
completion check and finalizer are told apart by the tools offered and the system prompt. ``AGENTS`` is what
$REPLANGRAPH_AGENTS names (``langgraph_dev_script:AGENTS``, this folder on the server's PYTHONPATH);
the plan gives the reversing subtask to its ``speller`` type, whose prompt the executor then sends.
Helpers pick a run's requests out of the loopback's log and read the parts of a streamed run.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING

from langchain.tools import ToolRuntime
from langchain_core.tools import tool

from replangraph.config import AgentProfile
from replangraph.llm.reading import message_text
from replangraph.names import ASK_USER
from replangraph.nodes.finalize.prompts import FINALIZER_PROMPT
from replangraph.testing import ScriptedRequest, tool_call
from replangraph.tools import SPLIT_TOOL

if TYPE_CHECKING:
    from openai_loopback import OpenAILoopback

MODEL = "loopback-model"
"""The one model the loopback lists at GET /v1/models: the served graph's model ($REPLANGRAPH_MODEL is unset)."""
ENV_TOOL = "read_ranking"
"""The tool $REPLANGRAPH_TOOLS names (replangraph.app.demo:read_ranking)."""
SPELLER = "speller"
SPELLER_PROMPT = "You are the speller: you write words backwards, letter by letter."
AGENTS = {SPELLER: AgentProfile(prompt=SPELLER_PROMPT, description="Spells words backwards.")}

COUNT_TASK = "Count the vowels in the word 'replangraph'."
REVERSE_TASK = "Spell the word 'replangraph' backwards."
HEADING_TASK = "Write the report heading in the colour the user picks."
QUESTION = "Which colour should the heading use?"
WORK = {
    COUNT_TASK: "RESULT vowels: 3 (e, a, a)",
    REVERSE_TASK: "RESULT backwards: hpargnalper",
}
ASK_MARK = "heading colour"
"""Goals that contain this get the one-task plan whose worker asks the user."""
STYLE_TASK = "Write the report heading in the colour and font the user picks."
FONT_QUESTION = "Which font should the heading use?"
STYLE_MARK = "heading style"
"""Goals that contain this get the one-task plan whose worker asks the user two questions, one after the other."""
SYNTHESIS = "SYNTHESIS of the results:"
RUNTIME_MARK = "which subtask"
"""Goals that contain this get the one-task plan whose worker calls `whoami`, a tool taking LangChain's runtime."""
RUNTIME_TASK = "Say which subtask you are and which call asked."


@tool
def whoami(runtime: ToolRuntime) -> str:
    """Says which subtask calls it, from LangChain's tool runtime (the state view and the call id)."""
    return f"RESULT task {runtime.state['task_id']} asked by call {runtime.tool_call_id}"


def plan(request: ScriptedRequest) -> dict:
    if "replanner" in request.system:
        raise AssertionError("no run in this module should need a new plan")
    if STYLE_MARK in request.prompt:
        tasks = [{"id": "1", "content": STYLE_TASK, "depends_on": []}]
    elif RUNTIME_MARK in request.prompt:
        tasks = [{"id": "1", "content": RUNTIME_TASK, "depends_on": []}]
    elif ASK_MARK in request.prompt:
        tasks = [{"id": "1", "content": HEADING_TASK, "depends_on": []}]
    else:
        tasks = [
            {"id": "1", "content": COUNT_TASK, "depends_on": []},
            {"id": "2", "content": REVERSE_TASK, "depends_on": [], "agent_type": SPELLER},
        ]
    return tool_call("Plan", {"tasks": tasks})


def work(request: ScriptedRequest) -> dict | str:
    found = re.search(r"Your subtask \([^)]*\): (.*)", request.prompt)
    subtask = found.group(1) if found else ""
    if subtask in WORK:
        return WORK[subtask]
    if subtask == RUNTIME_TASK:
        said = request.last_result("whoami")
        return said if said is not None else tool_call("whoami", {})
    if subtask == STYLE_TASK:
        got = [message_text(m) for m in request.tool_results if request.tool_name(m) == ASK_USER]
        if len(got) < 2:
            return tool_call(ASK_USER, {"question": [QUESTION, FONT_QUESTION][len(got)]})
        return f"RESULT heading style: {got[0]}, {got[1]}"
    if subtask != HEADING_TASK:
        raise AssertionError(f"unknown subtask {subtask!r}")
    answer = request.last_result(ASK_USER)
    if answer is not None:
        return f"RESULT heading colour: {answer}"
    if ASK_USER not in request.tool_names:  # max_clarifications=0: there is nobody to ask
        return "RESULT heading colour: black (nobody to ask)"
    return tool_call(ASK_USER, {"question": QUESTION})


def respond(request: ScriptedRequest) -> dict | str:
    """Planner, executor and finalizer told apart by the tools offered and the system prompt."""
    if "Plan" in request.tool_names:
        return plan(request)
    if SPLIT_TOOL in request.tool_names:
        return work(request)
    if "Verdict" in request.tool_names:  # the completion check, on by default: every result here is whole
        return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "the result answers it"})
    if not request.tool_names and request.system.startswith(FINALIZER_PROMPT):
        results = re.findall(r"^RESULT .*$", request.prompt, flags=re.MULTILINE)
        return "\n".join([SYNTHESIS, *results])
    raise AssertionError(f"unexpected request: tools {request.tool_names}, system {request.system[:80]!r}")


def tagged_goal(text: str) -> tuple[str, str]:
    """``(goal, tag)``: the goal carries a fresh tag that every request of its run repeats."""
    tag = f"[case {uuid.uuid4().hex[:10]}]"
    return f"{text} {tag}", tag


def requests_of(loopback: OpenAILoopback, tag: str) -> list[dict]:
    return [r for r in loopback.requests if any(tag in str(m.get("content")) for m in r["messages"])]


def tool_names(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def executor_requests(loopback: OpenAILoopback, tag: str) -> list[dict]:
    return [r for r in requests_of(loopback, tag) if SPLIT_TOOL in tool_names(r)]


def system_text(body: dict) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"] if m["role"] in ("system", "developer"))


# Reading a streamed run: its (event, data) parts


def custom_events(parts: list[tuple[str, object]]) -> list[dict]:
    return [data for event, data in parts if event == "custom"]


def message_parts(parts: list[tuple[str, object]]) -> list[tuple[str, tuple[dict, dict]]]:
    """``messages-tuple`` parts: ``(event, (message chunk, metadata))``."""
    return [(event, tuple(data)) for event, data in parts if event == "messages"]


def updated_nodes(parts: list[tuple[str, object]]) -> list[str]:
    return [node for event, data in parts if event == "updates" for node in data]
