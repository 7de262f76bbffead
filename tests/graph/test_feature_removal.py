"""Features are units: a graph without teams runs with the teams folder gone."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

WITHOUT_TEAMS = textwrap.dedent(
    """
    import importlib.abc
    import sys

    class NoTeams(importlib.abc.MetaPathFinder):
        # The teams folder is gone: importing anything in it fails as a deleted folder would.
        def find_spec(self, name, path, target=None):
            if name == "replangraph.nodes.teams" or name.startswith("replangraph.nodes.teams."):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, NoTeams())

    from replangraph.app.demo import DEMO_GOAL, build_demo_graph, expected_products

    result = build_demo_graph().invoke({"messages": [("user", DEMO_GOAL)]})
    found = [p for p in expected_products() if p in result["final_answer"]]
    assert len(found) == len(expected_products()), (len(found), result["final_answer"][-300:])
    assert not any(m.startswith("replangraph.nodes.teams") for m in sys.modules)
    try:
        from replangraph import Team  # noqa: F401
    except ModuleNotFoundError as error:
        print("Team:", error)
    print("ok", len(found))
    """
)


def test_a_graph_without_teams_runs_with_the_teams_folder_gone():
    done = subprocess.run([sys.executable, "-c", WITHOUT_TEAMS], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ok 19" in done.stdout
    assert "Team: No module named 'replangraph.nodes.teams'" in done.stdout
