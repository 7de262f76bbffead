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

The variants below hand off, plan, check or answer the way real models do when they do not follow the
rules to the letter (`VARIANT_PERSONAS`); each names where models were seen doing it. Unless a line says
otherwise they work like compliant, and in a plain ReAct agent (no planner, toolkit or check) they page
through the tool like compliant.

- one-rest: hands off the whole rest as ONE follow-up ("products ranked 51-1000") instead of batches, so
  each hand-off goes one level deeper. Seen: agents that spawn "a single sub-agent that does the entire
  job" (https://github.com/kirodotdev/KiroCrew/pull/156).
- single-call: one tool call per turn (one page), never reviews, never hands off; reads page after page to
  the end of its range, then answers with every item it read. It reads its own conversation, as a real model
  does: the page after the highest item its tool results, or a compression's summary of them, show; in a
  window that shows none, after the highest item the "tool calls so far" its instructions list covered (as
  written: ``read_ranking {"start": 16, "count": 5}``, or grouped: ``read_ranking ×3 with count 5, start 1-11
  step 5``). Seen: vLLM's docs say Llama
  models do not support parallel tool calls, "the model is not designed for this"
  (https://github.com/vllm-project/vllm/issues/11592); llama-4-scout "doesn't currently support parallel
  tool calling" (https://inference-docs.cerebras.ai/capabilities/tool-use).
- over-critical: as the completion check, and as the goal-level check, always incomplete ("not everything
  is there"), asking for the overall goal again (the checked subtask when the request shows no goal).
  Seen: a judge that "predicted FAIL on 75% of traces (ground truth: 8.8% fail)"
  (https://github.com/Azure/azureml-assets/pull/4978); a goal judge that failed a finished task as
  goal_incomplete (https://github.com/openmake/openmake_llm/pull/494). Found nothing showing a judge that
  asks for the overall goal when it checks one subtask: that part is ours.
- overlapping: sloppy ranges that repeat work: a hand-off queues its own batch again plus the rest in
  batches that each repeat the last 5 items of the one before (at most half a batch); as the check, the
  missing work starts 5 items before the first missing item and runs to the end of the subtask's range.
  Seen: "without detailed task descriptions, agents might duplicate work, leave gaps" (Anthropic's
  multi-agent research system, https://www.anthropic.com/engineering/multi-agent-research-system, as
  quoted at https://blog.earlyspark.com/p/building-multi-agent-systems). The 5-item overlap is ours.
- paraphrase: hand-off summaries and subtask answers describe what it read ("Extracted products ranked
  51-100 from the bestseller ranking (name, units sold and rating for each).") and carry no item; its final
  answers (the finalizer's, ReAct's last turn) list every item the request shows. Seen: an orchestrator that
  "discarded the detailed results and wrote thin 20-30 line summaries"
  (https://github.com/anthropics/claude-code/issues/36336); sub-agent summaries that "may strip out details
  the top-level agent needs" (https://github.com/openai/openai-agents-python/pull/817).
- off-by-one: a hand-off's follow-ups start one item too late (skipping one) or one too early (repeating
  one), picked by a stable hash of the subtask id; in ReAct its next ``start`` skips or repeats one item,
  picked by a stable hash of the right start (a skipped item is lost). Seen: the "leave gaps" of the
  Anthropic post above; found no report of a model paging off by one, only code that does
  (https://github.com/medic/cht-core/issues/1625: a duplicate item at a page boundary).
- partial-plan: its planner plans the first half of the items only ("products ranked 1-50" for the top 100);
  ReAct has no planner, so there it is compliant. Seen: a planner that can "silently ignore" required
  features (https://github.com/gsd-build/get-shit-done/issues/2091); a decomposition whose report "still
  misses music, writing and film" (https://github.com/project-delphi/claude-architect-prep/issues/2).
- tiny-plan: its planner makes one subtask per item ("Extract the product ranked 7 ...", "Look up the climate
  figures of survey city 7."), then the report world's compare and write steps after all of them; a
  one-item subtask takes one call and an answer. Seen: a planner that "over-expanded enumerable work" into a
  step "for EACH" item (https://github.com/fr0ster/llm-agent/pull/178).
- announcer: the first turn of every subtask that reads (and of a ReAct run) announces the call instead of
  making it ("I'll now call read_ranking to fetch products 51-55."); once a human message follows the
  announcement (a nudge) it makes the call and works like compliant. In ReAct the announcement is the final
  answer. Seen: a "model narrates next step in prose instead of emitting a tool call"
  (https://github.com/shenjianan97/persistent-agent-runtime/issues/97); OpenAI's o3/o4-mini guide: "Do NOT
  promise to call a function later"
  (https://developers.openai.com/cookbook/examples/o-series/o3o4-mini_prompting_guide/).
- cut-final: every final answer it writes (each finalizer request; ReAct's last turn) stops after 10 items
  with "... and N more.". Seen: GPT-4's late-2023 laziness, placeholders such as "// ... rest of code here"
  (https://ai-fails.lol/blog/gpt-4-stopped-finishing-its-work-in-late-2023-openai-blamed-an-unintentional-upd),
  acknowledged by OpenAI (https://www.greataiprompts.com/ai-news/chatgpt-has-become-lazy-openai-confirms/).
  The "... and N more." wording is ours: found no report quoting it from a model.

Every persona also answers a goal-level check (a Verdict request with a "Goal:" line, the run's results and
no "Subtask (" line): the goal's items the request does not show are missing, queued as range tasks of the
request's batch size. As the single-agent fallback ("Finish the overall goal yourself") it reads the goal's
items the attached results lack, the way it reads (a batch a turn; single-call a page), and answers with
every item; a worker whose subtask repeats the goal ("the top 100 products") works on all its items.
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

from replangraph.context.compression import SUMMARY_HEADER
from replangraph.llm.errors import is_transient
from replangraph.testing import ScriptedChatModel, ScriptedRequest, as_message, tool_call
from replangraph.tools import REVIEW_TOOL, SPLIT_TOOL

from .worlds import World

BATCHED_HANDOFF_PERSONAS = (
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
"""Personas whose hand-offs list the rest in batches of the right size."""
VARIANT_PERSONAS = (
    "one-rest",
    "single-call",
    "over-critical",
    "overlapping",
    "paraphrase",
    "off-by-one",
    "partial-plan",
    "tiny-plan",
    "announcer",
    "cut-final",
)
"""Personas that hand off, plan, check or answer the way real models do when they bend the rules."""
PERSONAS = BATCHED_HANDOFF_PERSONAS + VARIANT_PERSONAS
THOUGHT = "Draft, not my answer: item-9999 belongs here, and maybe I should reply [REPLAN]."
ENOUGH = "I have collected enough data."
NOT_EVERYTHING = "not everything is there"
"""The over-critical check's reason."""
ANNOUNCED = "I'll now call"
"""How the announcer's announcement begins."""
OVERLAP = 5
"""Items the overlapping persona repeats from the batch before."""
SHOWN_IN_FULL = 10
"""Items the cut-final persona's final answers list before "... and N more."."""
TAKE_OVER = "Finish the overall goal yourself"
"""How the single-agent fallback's subtask begins: one agent takes the whole goal over."""
CONTINUED = re.compile(r"tool calls so far", re.IGNORECASE)
"""What a continuation's line listing the calls its cut-off subtask made says before them."""
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


def overlapping_batches(after: int, last: int, size: int) -> list[tuple[int, int]]:
    """Ranges of ``size`` up to ``last``, the first starting `OVERLAP` items before ``after`` (the end of the
    batch just read) and each next one `OVERLAP` items before the end of the one before (at most half a batch)."""
    overlap = min(OVERLAP, size // 2)
    out: list[tuple[int, int]] = []
    end = after
    while end < last:
        lo = end - overlap + 1
        out.append((lo, min(lo + size - 1, last)))
        end = out[-1][1]
    return out


def calls_so_far(text: str, tool: str) -> list[dict]:
    """The arguments of the ``tool`` calls listed after "tool calls so far" in ``text`` (a continuation's
    instructions), read leniently: as written (``read_ranking {"start": 1, "count": 5}; ...``), or grouped
    (``read_ranking ×3 with count 5, start 1-11 step 5``: the group's last call); none without that phrase."""
    mark = CONTINUED.search(text)
    if not mark:
        return []
    decoder = json.JSONDecoder()
    found = []
    for name in re.finditer(rf"\b{re.escape(tool)}\s*(?=\{{)", text[mark.end() :]):
        try:
            args, _ = decoder.raw_decode(text, mark.end() + name.end())
        except ValueError:
            continue
        if isinstance(args, dict):
            found.append(args)
    for group in re.finditer(rf"\b{re.escape(tool)} ×\d+ with (.*?)(?=;|\)|\. |$)", text[mark.end() :]):
        args = {}
        for part in re.split(r",\s*(?=[A-Za-z_])", group.group(1)):  # "count 5", "start 1-11 step 5"
            key, _, values = part.partition(" ")
            numbers = re.findall(r"\d+", re.sub(r"step \d+", "", values))
            if numbers:
                args[key] = max(int(n) for n in numbers)  # the group's last call
        found.append(args)
    return found


def subtask(request: ScriptedRequest) -> tuple[str, str]:
    """``(id, instruction)`` of the subtask a worker request is about; a group's instruction with its members'
    instructions, one a line."""
    found = re.search(r"Your subtask \(([^)]*)\): (.*(?:\n- .*)*)", request.prompt)
    return (found.group(1), found.group(2)) if found else ("", "")


def members(instruction: str) -> list[str]:
    """The members' instructions of a group (`replangraph.policy.scopes.group_text`), else []."""
    return [line[2:] for line in instruction.splitlines()[1:] if line.startswith("- ")]


def checked(request: ScriptedRequest) -> tuple[str, str]:
    """``(the subtask's instructions, its result)`` of a completion-check request (a group's with its members'
    lines)."""
    instruction, _, result = request.prompt.partition("\nResult:")
    task = re.search(r"^Subtask \([^)]*\): (.*(?:\n- .*)*)$", instruction, flags=re.MULTILINE)
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
        """The plan: one subtask for every item (tiny-plan: one per item; partial-plan: the first half only),
        then, in the report world, the compare and write steps."""
        world = self.world
        if self.name == "tiny-plan":
            tasks = [{"id": str(k), "content": world.item_task(k), "depends_on": []} for k in range(1, world.size + 1)]
        else:
            last = (world.size + 1) // 2 if self.name == "partial-plan" else world.size
            tasks = [{"id": "1", "content": world.range_task(1, last), "depends_on": []}]
        if world.noun == "cities":
            gathered, compare, write = [t["id"] for t in tasks], str(len(tasks) + 1), str(len(tasks) + 2)
            comparing = "Compare the yearly rainfall of all cities and rank them."
            tasks.append({"id": compare, "content": comparing, "depends_on": gathered})
            writing = "Write the report that ranks every city by rainfall."
            tasks.append({"id": write, "content": writing, "depends_on": [compare]})
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

    def span_of(self, instruction: str) -> tuple[int, int] | None:
        """The items an instruction asks for: its range, its one item, or all the items of a goal it repeats."""
        world = self.world
        spans = [span for member in members(instruction) if (span := self.span_of(member))]
        if spans:  # a group: read as one list of work, as a model reads the lines of its instructions
            return min(a for a, _ in spans), max(b for _, b in spans)
        item = world.item_of(instruction)
        whole = world.size_in_goal(instruction)
        return world.range_of(instruction) or ((item, item) if item else None) or ((1, whole) if whole else None)

    def read_through(self, text: str) -> int:
        """The highest item the calls a continuation lists ("tool calls so far") covered; 0 without such a list."""
        covered = 0
        for args in calls_so_far(text, self.world.tools[0].name):
            try:
                start, count = int(args.get("start")), int(args.get("count", self.world.batch))
            except (TypeError, ValueError):
                continue
            covered = max(covered, min(start + min(count, self.world.batch) - 1, self.world.size))
        return covered

    def work(self, request: ScriptedRequest):
        task_id, instruction = subtask(request)
        if instruction.startswith(TAKE_OVER):
            return self.take_over(request)
        span = self.span_of(instruction)
        if span is None and self.name == "paraphrase":
            return self.described_step(instruction, request.prompt)
        if span is None:
            return self.synthesize(instruction, request.prompt)
        first, last = span[0], span[1]
        first = max(first, self.read_through(request.prompt) + 1)  # a continuation starts after the calls made
        read = self.read_items(request)
        if first > last and not read:
            return f"The earlier calls read every one of {self.world.noun} {span[0]}-{last}."
        size = batch_size(request, self.world.batch)
        if self.name == "parallel":
            return self.read_and_hand_off(task_id, first, last, read, size)
        if self.name == "single-call":
            return self.page_after_page(first, last, {**self.summarized_items(request), **read})
        if self.name == "announcer" and not any(isinstance(m, AIMessage) for m in request.messages):
            return self.announcement(first, min(first + size - 1, last))  # a later turn (after a nudge) reads
        if not read:
            calls = self.read_calls(first, min(first + size - 1, last))
            more = first + size <= last and self.name != "lazy"  # the rules: review in the batch's reply
            return [*calls, tool_call(REVIEW_TOOL, {})] if more else calls
        found = self.result_text(read)
        if max(read) >= last:
            return found
        if self.name == "lazy":
            return f"{ENOUGH}\n{found}"
        if not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        rest = [self.world.range_task(lo, hi) for lo, hi in self.rest_ranges(task_id, first, max(read), last, size)]
        args = {"summary": found, "tasks": self.task_list(task_id, rest, max(read) + 1, last)}
        return tool_call(SPLIT_TOOL, args, call_id=f"split_{task_id}_{len(request.tool_results)}")

    def take_over(self, request: ScriptedRequest):
        """The single-agent fallback: read the goal's items that neither the attached results nor this window
        hold, a batch a turn (as this persona reads: single-call one page, lazy one batch, the announcer after
        announcing), then answer with every item, those of the attached results included."""
        goal = re.search(r"^Overall goal: (.*)$", request.prompt, flags=re.MULTILINE)
        size = self.world.size_in_goal(goal.group(1) if goal else "") or self.world.size
        shown, read = self.world.items_in(request.prompt), self.read_items(request)
        missing = [i for i in range(1, size + 1) if i not in shown and i not in read]
        if self.name == "announcer" and missing and not any(isinstance(m, AIMessage) for m in request.messages):
            return self.announcement(missing[0], missing[0] + self.world.batch - 1)
        if not missing or (self.name == "lazy" and read):
            every = {**shown, **read}
            text = self.world.described(1, size) if self.name == "paraphrase" else self.final_text(every)
            return f"{ENOUGH}\n{text}" if missing else text
        pages = runs(missing, self.world.batch)
        turn = 1 if self.name == "single-call" else max(1, batch_size(request, self.world.batch) // self.world.batch)
        return [self.read_call(lo, hi - lo + 1) for lo, hi in pages[:turn]]

    def rest_ranges(self, task_id: str, first: int, after: int, last: int, size: int) -> list[tuple[int, int]]:
        """The item ranges a hand-off queues after reading ``first``..``after`` of ``first``..``last``: batches of
        ``size``, or this persona's variant of them."""
        if self.name == "one-rest":
            return [(after + 1, last)]
        if self.name == "overlapping":
            return [(first, after), *overlapping_batches(after, last, size)]
        if self.name == "off-by-one":
            start = after + 1 + (1 if stable_hash(task_id) % 2 else -1)  # one item skipped, or one read again
            if start <= last:
                return batches(start, last, size)
        return batches(after + 1, last, size)

    def summarized_items(self, request: ScriptedRequest) -> dict[int, str]:
        """The items a compression's summary in the request shows (what it read before the summary)."""
        summaries = [str(m.content) for m in request.messages if str(m.content).startswith(SUMMARY_HEADER)]
        return self.world.items_in("\n".join(summaries))

    def page_after_page(self, first: int, last: int, read: dict[int, str]):
        """single-call: the next page (one call, no review), or every item read once the range is read."""
        if read and max(read) >= last:
            return self.result_text(read)
        start = max(read) + 1 if read else first
        return self.read_call(start, min(self.world.batch, last - start + 1))

    def announcement(self, first: int, last: int) -> str:
        """The announcer's first turn: the call it would make, described, not made."""
        end = min(first + self.world.batch - 1, last)
        return f"{ANNOUNCED} {self.world.tools[0].name} to fetch {self.world.noun} {first}-{end}."

    def result_text(self, items: dict[int, str]) -> str:
        """A subtask's answer or hand-off summary: the items' lines (paraphrase: a sentence naming none)."""
        if self.name == "paraphrase":
            return self.world.described(min(items), max(items))
        return self.lines(items)

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

    def described_step(self, instruction: str, prompt: str) -> str:
        """paraphrase's answer to a step that works on earlier results: what it did, naming no item."""
        count = len(self.world.items_in(prompt))
        if instruction.lower().startswith("write"):
            return f"Wrote the report that ranks all {count} {self.world.noun} by rainfall."
        return f"Compared the yearly rainfall of {count} {self.world.noun} and ranked them."

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
            if self.name == "announcer" and not any(isinstance(m, AIMessage) for m in request.messages):
                return self.announcement(1, size)  # no tool call: ReAct takes it for the final answer
            return self.read_call(1, self.world.batch)
        if self.name == "lazy" or max(read) >= size:
            text = self.synthesize("write", self.lines(read)) if self.world.noun == "cities" else self.lines(read)
            if self.name == "cut-final":
                text = self.cut(text)
            return f"{ENOUGH}\n{text}" if max(read) < size else text
        start = max(read) + 1
        if self.name == "off-by-one":
            shifted = start + (1 if stable_hash(str(start)) % 2 else -1)  # skips one item, or reads one again
            start = shifted if shifted <= size else start
        return self.read_call(start, self.world.batch)

    # ------------------------------------------------------------------ checking and answering

    def verdict(self, request: ScriptedRequest):
        """The completion check of one subtask, or the goal-level check (no "Subtask (" line, a "Goal:" line)."""
        prompt = request.prompt
        goal = re.search(r"^Goal: (.*)$", prompt, flags=re.MULTILINE)
        if goal and not re.search(r"^Subtask \(", prompt, flags=re.MULTILINE):
            return self.goal_verdict(request, goal.group(1))
        instruction, result = checked(request)
        if self.name == "over-critical":
            overall = re.search(r"^Overall goal: (.*)$", prompt, flags=re.MULTILINE)
            return verdict_call(NOT_EVERYTHING, [overall.group(1) if overall else instruction])
        span = self.span_of(instruction)
        if span is None:
            return verdict_call("nothing to count")
        first = max(span[0], self.read_through(prompt.partition("\nResult:")[0]) + 1)  # earlier calls' items are kept
        have = self.world.items_in(result)
        missing = [i for i in range(first, span[1] + 1) if i not in have]
        if not missing:
            return verdict_call("every item is there")
        rest = self.missing_tasks(missing, first, span[1], batch_size(request, self.world.batch))
        return verdict_call(f"{len(missing)} of {span[1] - span[0] + 1} {self.world.noun} are missing", rest)

    def goal_verdict(self, request: ScriptedRequest, goal: str):
        """The goal-level check: the goal's items 1..N the request does not show are missing."""
        if self.name == "over-critical":
            return verdict_call(NOT_EVERYTHING, [goal])
        size = self.world.size_in_goal(goal) or self.world.size
        have = self.world.items_in(request.prompt)
        missing = [i for i in range(1, size + 1) if i not in have]
        if not missing:
            return verdict_call("every item of the goal is there")
        rest = self.missing_tasks(missing, 1, size, batch_size(request, self.world.batch))
        return verdict_call(f"{len(missing)} of {size} {self.world.noun} are missing", rest)

    def missing_tasks(self, missing: list[int], first: int, last: int, size: int) -> list[str]:
        """Range tasks of at most ``size`` for the ``missing`` items of ``first``..``last`` (overlapping: from
        `OVERLAP` items before the first missing one to ``last``)."""
        if self.name == "overlapping":
            ranges = batches(max(first, missing[0] - OVERLAP), last, size)
        else:
            ranges = runs(missing, size)
        return [self.world.range_task(lo, hi) for lo, hi in ranges]

    def final(self, request: ScriptedRequest) -> str:
        text = self.final_text(self.world.items_in(request.prompt))
        return self.cut(text) if self.name == "cut-final" else text

    def final_text(self, items: dict[int, str]) -> str:
        """An answer that lists ``items`` in the order the goal wants."""
        return f"{len(items)} {self.world.noun}:\n" + "\n".join(self.world.ordered_lines(items))

    def cut(self, text: str) -> str:
        """``text`` stopped after `SHOWN_IN_FULL` item lines, with "... and N more." for the rest."""
        lines = text.split("\n")
        at = [i for i, line in enumerate(lines) if self.world.items_in(line)]
        if len(at) <= SHOWN_IN_FULL:
            return text
        return "\n".join([*lines[: at[SHOWN_IN_FULL]], f"... and {len(at) - SHOWN_IN_FULL} more."])


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
