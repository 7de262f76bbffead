"""Scripted models that behave like real ones, documented behaviour by behaviour.

A persona answers every request the way one kind of real model does, whichever
agent sends it: replangraph's planner, workers, verifier, replanner, summarizer
and finalizer, or a plain ReAct agent. It decides from the request alone (its
messages and bound tools), never from call order, so parallel branches stay
deterministic. The flaky persona also remembers which requests it has failed
once, like a server that recovers.

- compliant: works in batches of the size its instructions give (the world's page size when they
  give none), reading a batch in one turn (one tool call per page, as models with parallel tool
  calls do) and reviewing the plan in the same turn when work is left, hands off the rest as JSON.
- lazy: reads one batch like compliant, then ignores the toolkit and stops: "I have collected
  enough data" (without batch instructions, as in a plain ReAct agent, one page).
- sloppy: plans in fenced JSON text with numeric ids and invented agent types;
  hands off tasks as a real JSON array or inside fences.
- repeater: hands off with a malformed task list and repeats the refused call unchanged.
- flaky: like compliant, but the first try of every third request raises one of
  ChatOpenAI's own errors (timeout, connection, rate limit).
- blocks: like compliant, but every answer comes as a list of content blocks.
- parallel: in one turn, reads the next batch AND hands off the batches after it (two tool
  calls in one AIMessage, as OpenAI models do with parallel tool calls); it never sees that
  batch before its subtask ends.
- text-calls: like compliant, but every tool call (the planner's, the workers', the check's) is written
  as text, as a local server without a tool parser returns it: ``<tool_call>`` tags (Qwen, Hermes),
  ``[TOOL_CALLS]`` (Mistral), ``<|python_tag|>`` and ``<function=...>`` (Llama), fenced JSON; the
  format changes from request to request, with a sentence of prose around some.
- reasoning: like compliant, but every reply opens with a ``<think>`` block (a draft that names items
  the answer leaves out) and carries ``reasoning_content``, as reasoning models served by vLLM or
  Ollama do.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field

import httpx
from langchain_core.messages import AIMessage
from langchain_openai.chat_models.base import OpenAIConnectionError, OpenAIRateLimitError, OpenAITimeoutError

from replangraph.llm.errors import is_transient
from replangraph.testing import ScriptedChatModel, ScriptedRequest, as_message, tool_call
from replangraph.tools import REVIEW_TOOL, SPLIT_TOOL

from .worlds import World

PERSONAS = ("compliant", "lazy", "sloppy", "repeater", "flaky", "blocks", "parallel", "text-calls", "reasoning")
THOUGHT = "Draft, not my answer: item-9999 belongs here, and maybe I should reply [REPLAN]."
ENOUGH = "I have collected enough data."
VERDICT, PLAN = "Verdict", "Plan"
REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


def batches(first: int, last: int, size: int) -> list[tuple[int, int]]:
    """Consecutive ranges of at most ``size`` covering ``first``..``last``."""
    return [(lo, min(lo + size - 1, last)) for lo in range(first, last + 1, size)]


def runs(numbers: list[int], size: int) -> list[tuple[int, int]]:
    """Ranges of at most ``size`` covering ``numbers`` (gaps start a new range)."""
    out: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if out and n == out[-1][1] + 1 and n - out[-1][0] < size:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def subtask(request: ScriptedRequest) -> tuple[str, str]:
    """``(id, instruction)`` of the subtask a worker request is about."""
    found = re.search(r"Your subtask \(([^)]*)\): (.*)", request.prompt)
    return (found.group(1), found.group(2)) if found else ("", "")


def checked(request: ScriptedRequest) -> tuple[str, str]:
    """``(the subtask's instructions, its result)`` of a completion-check request."""
    instruction, _, result = request.prompt.partition("\nResult:")
    task = re.search(r"^Subtask \([^)]*\): (.*)$", instruction, flags=re.MULTILINE)
    return (task.group(1) if task else ""), result


def verdict_call(reason: str, remaining: list[str] | None = None) -> dict:
    """The check's Verdict call: complete unless ``remaining`` names missing work."""
    return tool_call(VERDICT, {"complete": not remaining, "remaining_tasks": remaining or [], "reason": reason})


def batch_size(request: ScriptedRequest, default: int) -> int:
    """The batch size the request's instructions give ("... at most 20 ..."), else ``default``."""
    found = re.search(r"at most (\d+)", request.system)
    return int(found.group(1)) if found else default


def stable_hash(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:12], 16)


@dataclass
class Persona:
    """One behaviour, answering for one world."""

    name: str
    world: World
    pages_per_turn: int | None = None
    """Most pages read in one turn (None: a whole batch, one call per page); 1: a model without parallel
    tool calls, which with the lazy persona stops after one page."""
    failed_once: set[int] = field(default_factory=set)
    requests: int = 0
    """Requests the persona answered or failed: what a server would count, client retries included."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def model(self, client_retries: int = 0) -> ScriptedChatModel:
        """The persona as a chat model whose client retries transient errors ``client_retries``
        times on its own, as ChatOpenAI's does (``max_retries``, 2 by default)."""
        return ClientRetrying(respond=self.respond, client_retries=client_retries)

    # ------------------------------------------------------------------ dispatch

    def respond(self, request: ScriptedRequest):
        with self.lock:
            self.requests += 1
        if self.name == "flaky":
            self.maybe_fail(request)
        reply = self.answer(request)
        if self.name == "text-calls":
            return self.as_text_calls(reply, request)
        if self.name == "reasoning":
            return self.with_reasoning(reply)
        return self.as_blocks(reply) if self.name == "blocks" else reply

    def answer(self, request: ScriptedRequest):
        names = request.tool_names
        if VERDICT in names:
            return self.verdict(request)
        if PLAN in names:
            return self.replan(request) if "replanner" in request.system else self.plan(request)
        if SPLIT_TOOL in names:
            return self.work(request)
        if set(names) & {t.name for t in self.world.tools}:
            return self.react(request)
        if "compress the working memory" in request.system:
            return self.summary(request)
        return self.final(request)

    def summary(self, request: ScriptedRequest) -> str:
        """The compressor's summary: every item the window holds."""
        return "Facts so far:\n" + "\n".join(self.world.ordered_lines(self.world.items_in(request.prompt)))

    def maybe_fail(self, request: ScriptedRequest) -> None:
        """Fail the first try of every third distinct request with one of ChatOpenAI's error classes."""
        key = stable_hash("|".join(m.type + ":" + str(m.content) for m in request.messages) + str(request.tool_names))
        if key % 3:
            return
        with self.lock:
            if key in self.failed_once:
                return
            self.failed_once.add(key)
        kind = key // 3 % 3
        if kind == 0:
            raise OpenAITimeoutError(request=REQUEST)
        if kind == 1:
            raise OpenAIConnectionError(request=REQUEST)
        response = httpx.Response(429, headers={"retry-after": "0"}, request=REQUEST)
        raise OpenAIRateLimitError("Rate limit reached", response=response, body=None)

    @staticmethod
    def as_blocks(reply) -> AIMessage:
        message = as_message(reply)
        text = message.content if isinstance(message.content, str) else ""
        blocks = [{"type": "text", "text": text or "Working on it."}]
        return AIMessage(content=blocks, tool_calls=message.tool_calls)

    @staticmethod
    def as_text_calls(reply, request: ScriptedRequest) -> AIMessage:
        """The reply's tool calls written as text, in a format picked from the request."""
        message = as_message(reply)
        if not message.tool_calls:
            return message
        calls = [(c["name"], c["args"]) for c in message.tool_calls]
        formats = TEXT_FORMATS
        written = formats[stable_hash(request.prompt + str(request.tool_names)) % len(formats)](calls)
        return AIMessage(content=written)

    @staticmethod
    def with_reasoning(reply) -> AIMessage:
        """The reply opened by a ``<think>`` block, its reasoning in ``reasoning_content`` too."""
        message = as_message(reply)
        text = message.content if isinstance(message.content, str) else ""
        return message.model_copy(
            update={
                "content": f"<think>\n{THOUGHT}\n</think>\n{text}",
                "additional_kwargs": {**message.additional_kwargs, "reasoning_content": THOUGHT},
            }
        )

    # ------------------------------------------------------------------ planning

    def plan_tasks(self) -> list[dict]:
        world = self.world
        tasks = [{"id": "1", "content": world.range_task(1, world.size), "depends_on": []}]
        if world.noun == "cities":
            tasks.append(
                {"id": "2", "content": "Compare the yearly rainfall of all cities and rank them.", "depends_on": ["1"]}
            )
            tasks.append(
                {"id": "3", "content": "Write the report that ranks every city by rainfall.", "depends_on": ["2"]}
            )
        return tasks

    def plan(self, request: ScriptedRequest):
        tasks = self.plan_tasks()
        if self.name != "sloppy":
            return tool_call(PLAN, {"tasks": tasks})
        sloppy = [
            {
                "id": int(t["id"]),
                "task": t["content"],
                "agent_type": "researcher",
                "depends_on": ", ".join(t["depends_on"]),
            }
            for t in tasks
        ]
        return f"Here is my plan:\n```json\n{json.dumps({'tasks': sloppy}, indent=1)}\n```"

    def replan(self, request: ScriptedRequest):
        """New tasks for what the flagged subtasks left undone, then the pending steps again."""
        flagged = request.prompt.split("Needs a new plan:", 1)[-1].strip()
        new, kept = [], []
        for block in re.split(r"\n(?=- )", flagged):
            head = re.match(r"- (\S+) \((\w+)\): (.*)", block)
            span = self.world.range_of(head.group(3)) if head else None
            if not span:
                continue
            partial = block.partition("Partial result (kept):")[2]
            have = [i for i in self.world.items_in(partial) if span[0] <= i <= span[1]]
            if re.search(rf"^\[X\] {re.escape(head.group(1))}:", request.prompt, flags=re.MULTILINE):
                kept.append(head.group(1))  # completed with a partial result: later steps may use it
            missing = [i for i in range(span[0], span[1] + 1) if i not in have]
            for lo, hi in runs(missing, self.world.batch):
                new.append({"id": f"r{lo}", "content": self.world.range_task(lo, hi), "depends_on": []})
        previous = [*kept, *(t["id"] for t in new)]
        for task_id, content in re.findall(r"^\[ \] (\S+): (.*)$", request.prompt, flags=re.MULTILINE):
            new.append({"id": task_id, "content": content, "depends_on": previous})
            previous = [task_id]
        return tool_call(PLAN, {"tasks": new})

    # ------------------------------------------------------------------ replangraph workers

    def work(self, request: ScriptedRequest):
        task_id, instruction = subtask(request)
        span = self.world.range_of(instruction)
        if span is None:
            return self.synthesize(instruction, request.prompt)
        first, last = span
        read = self.read_items(request)
        size = batch_size(request, self.world.batch)
        if self.name == "parallel":
            return self.read_and_hand_off(task_id, first, last, read, size)
        if not read:
            calls = self.read_calls(first, min(first + size - 1, last))
            more = first + size <= last and self.name != "lazy"  # the rules: review in the batch's reply
            return [*calls, tool_call(REVIEW_TOOL, {})] if more else calls
        found = self.lines(read)
        if max(read) >= last:
            return found
        if self.name == "lazy":
            return f"{ENOUGH}\n{found}"
        if not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        rest = [self.world.range_task(lo, hi) for lo, hi in batches(max(read) + 1, last, size)]
        args = {"summary": found, "tasks": self.task_list(task_id, rest, max(read) + 1, last)}
        return tool_call(SPLIT_TOOL, args, call_id=f"split_{task_id}_{len(request.tool_results)}")

    def read_and_hand_off(self, task_id: str, first: int, last: int, read: dict[int, str], size: int):
        """One turn: read the next batch and, when more is left, hand off the batches after it
        in the same message (the hand-off's summary is what it had read before this turn)."""
        start = max(read) + 1 if read else first
        if start > last:
            return self.lines(read)
        end = min(start + size - 1, last)
        fetch = self.read_calls(start, end)
        if end == last:
            return fetch
        rest = [self.world.range_task(lo, hi) for lo, hi in batches(end + 1, last, size)]
        noun = self.world.noun
        summary = (
            self.lines(read)
            if read
            else f"Reading {noun} {start}-{end} in this turn; {noun} {end + 1}-{last} handed off."
        )
        split = tool_call(
            SPLIT_TOOL,
            {"summary": summary, "tasks": self.task_list(task_id, rest, end + 1, last)},
            call_id=f"split_{task_id}_{start}",
        )
        return [*fetch, split]

    def task_list(self, task_id: str, contents: list[str], first: int, last: int):
        """The ``tasks`` argument, shaped the way this persona writes it."""
        if self.name == "repeater":
            return {"from": first, "to": last}  # no instructions at all: refused, and sent again unchanged
        if self.name == "sloppy":
            tasks = [{"content": c, "agent_type": "browser"} for c in contents]
            if stable_hash(task_id) % 2:
                return tasks  # a real JSON array where the schema says "JSON string"
            return f"```json\n{json.dumps(tasks)}\n```"
        return json.dumps([{"content": c} for c in contents])

    def read_items(self, request: ScriptedRequest) -> dict[int, str]:
        tool = self.world.tools[0].name
        found: dict[int, str] = {}
        for message in request.tool_results:
            if request.tool_name(message) == tool:
                found.update(self.world.items_in(str(message.content)))
        return found

    def read_call(self, start: int, count: int) -> dict:
        return tool_call(self.world.tools[0].name, {"start": start, "count": count})

    def read_calls(self, first: int, last: int) -> list[dict]:
        """One read call per page of items ``first``..``last``, made together in one turn (at most
        ``pages_per_turn`` of them)."""
        pages = batches(first, last, self.world.batch)[: self.pages_per_turn]
        return [self.read_call(lo, hi - lo + 1) for lo, hi in pages]

    def lines(self, items: dict[int, str]) -> str:
        return "\n".join(items[i] for i in sorted(items))

    def synthesize(self, instruction: str, prompt: str) -> str:
        """A step that works on earlier results (compare, write): it keeps every item."""
        items = self.world.items_in(prompt)
        ranking = "\n".join(self.world.ordered_lines(items))
        if instruction.lower().startswith("write"):
            return f"Rainfall report: all {len(items)} cities, wettest first.\n{ranking}"
        return f"Rainfall ranking of {len(items)} cities:\n{ranking}"

    # ------------------------------------------------------------------ plain ReAct agent

    def react(self, request: ScriptedRequest):
        """The same behaviour without a toolkit: read batch after batch in one growing conversation."""
        size = self.world.size_in_goal(request.prompt) or self.world.size
        read = self.read_items(request)
        if not read:
            return self.read_call(1, self.world.batch)
        if self.name == "lazy" or max(read) >= size:
            text = self.synthesize("write", self.lines(read)) if self.world.noun == "cities" else self.lines(read)
            return f"{ENOUGH}\n{text}" if max(read) < size else text
        return self.read_call(max(read) + 1, self.world.batch)

    # ------------------------------------------------------------------ checking and answering

    def verdict(self, request: ScriptedRequest):
        instruction, result = checked(request)
        span = self.world.range_of(instruction)
        if span is None:
            return verdict_call("nothing to count")
        have = self.world.items_in(result)
        missing = [i for i in range(span[0], span[1] + 1) if i not in have]
        if not missing:
            return verdict_call("every item is there")
        rest = [self.world.range_task(lo, hi) for lo, hi in runs(missing, batch_size(request, self.world.batch))]
        return verdict_call(f"{len(missing)} of {span[1] - span[0] + 1} {self.world.noun} are missing", rest)

    def final(self, request: ScriptedRequest) -> str:
        items = self.world.items_in(request.prompt)
        return f"{len(items)} {self.world.noun}:\n" + "\n".join(self.world.ordered_lines(items))


def qwen_calls(calls: list) -> str:
    """Qwen and Hermes templates: one ``<tool_call>`` block per call, after a sentence."""
    blocks = [f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls]
    return "I will use the tools now.\n" + "\n".join(blocks)


def mistral_calls(calls: list) -> str:
    """Mistral's template: ``[TOOL_CALLS]`` and a JSON list."""
    return "[TOOL_CALLS] " + json.dumps([{"name": n, "arguments": a} for n, a in calls])


def llama_calls(calls: list) -> str:
    """Llama 3.x: ``<|python_tag|>`` and JSON with ``parameters``, calls separated by ``;``."""
    return "<|python_tag|>" + "; ".join(json.dumps({"name": n, "parameters": a}) for n, a in calls) + "<|eom_id|>"


def function_calls(calls: list) -> str:
    """Llama 3.1's custom format: ``<function=name>{...}</function>``, with prose after it."""
    return "".join(f"<function={n}>{json.dumps(a)}</function>" for n, a in calls) + "\nWaiting for the result."


def fenced_calls(calls: list) -> str:
    """A fenced JSON block, as a model without a template for tools writes it."""
    body = [{"name": n, "arguments": a} for n, a in calls]
    return "Calling:\n```json\n" + json.dumps(body[0] if len(body) == 1 else body, indent=1) + "\n```"


TEXT_FORMATS = (qwen_calls, mistral_calls, llama_calls, function_calls, fenced_calls)


class ClientRetrying(ScriptedChatModel):
    """A scripted model with a client that retries transient errors itself, unseen by LangChain callbacks."""

    client_retries: int = 0

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        for attempt in range(self.client_retries + 1):
            try:
                return super()._generate(messages, stop, run_manager, **kwargs)
            except Exception as exc:
                if attempt == self.client_retries or not is_transient(exc):
                    raise
        raise AssertionError("unreachable")


def persona(name: str, world: World, pages_per_turn: int | None = None) -> Persona:
    """The persona ``name`` (one of `PERSONAS`) answering for ``world``, reading at most ``pages_per_turn``
    pages in one turn (None: a whole batch)."""
    if name not in PERSONAS:
        raise ValueError(f"unknown persona {name!r}; known: {', '.join(PERSONAS)}")
    return Persona(name, world, pages_per_turn)
