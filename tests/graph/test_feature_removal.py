"""Features are units: with any one feature's folder and registration line gone, the demo still runs to 19 of 19
(the package is copied, the feature removed from the copy, and the demo run from it in a fresh interpreter)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from replangraph.nodes import FEATURES

ROOT = Path(__file__).resolve().parents[2]

DEMO = """
import sys
import replangraph
from replangraph.app.demo import DEMO_GOAL, build_demo_graph, expected_products

assert replangraph.__file__.startswith(sys.argv[1]), replangraph.__file__
result = build_demo_graph().invoke({"messages": [("user", DEMO_GOAL)]})
found = [p for p in expected_products() if p in result["final_answer"]]
print("ok", len(found), sorted(result))
"""


def package_without(feature: str, folder: Path) -> Path:
    """The package laid out as installed (``replangraph/``, ``replangraph/nodes``, ``replangraph/tools``) in
    ``folder``, with ``feature``'s folder deleted and its line in ``FEATURES`` struck."""
    top = folder / "replangraph"
    shutil.copytree(ROOT / "graph", top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "nodes", top / "nodes", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tools", top / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(top / "nodes" / feature)
    registry = top / "nodes" / "__init__.py"
    text, struck = re.subn(rf'^    "{feature}",\n', "", registry.read_text(), flags=re.MULTILINE)
    assert struck == 1, f"no registration line for {feature}"
    registry.write_text(text)
    return folder


@pytest.mark.parametrize("feature", FEATURES)
def test_the_demo_runs_with_a_feature_removed(feature, tmp_path):
    folder = package_without(feature, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(folder)}  # ahead of the editable install's finder
    done = subprocess.run(
        [sys.executable, "-c", DEMO, str(folder)], capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok 19" in done.stdout
    assert not (folder / "replangraph" / "nodes" / feature).exists()


def test_every_registered_feature_has_a_folder_with_a_feature_module():
    for name in FEATURES:
        assert (ROOT / "nodes" / name / "feature.py").is_file(), name
