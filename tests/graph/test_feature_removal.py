"""Features are units: with any one feature's folder and registration line gone, every surface still works (the
package is copied, the feature removed from the copy, and each surface used from it in a fresh interpreter):
``import *``, the demo (19 of 19), the CLI (``--help``, ``run`` against a loopback model server, ``resume``),
the graphs ``langgraph dev`` loads from langgraph.json, the Temporal registry, and the derived lists the docs'
checks read (every setting's row, every event's line)."""

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

SURFACES = """
import contextlib, importlib.util, io, json, os, re, sys
from pathlib import Path

folder, helpers, root = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
sys.path.append(helpers)
import replangraph
from replangraph import *  # noqa: F403 - every name in __all__ resolves
from replangraph.app.demo import DEMO_GOAL, build_demo_graph, expected_products

assert replangraph.__file__.startswith(str(folder)), replangraph.__file__
result = build_demo_graph().invoke({"messages": [("user", DEMO_GOAL)]})
found = [p for p in expected_products() if p in result["final_answer"]]
print("demo", len(found))

from replangraph.app import cli
for argv in (["--help"], ["run", "--help"], ["resume", "--help"]):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            cli.main(argv)
        except SystemExit as ended:
            assert ended.code in (0, None), (argv, ended.code)
from docs_support import respond
from openai_loopback import OpenAILoopback

os.environ["OPENAI_API_KEY"] = "removal-test"
with OpenAILoopback(respond, models=["stand-in"]) as server:
    common = ["--db", str(folder / "runs.sqlite"), "--base-url", server.base_url, "--json"]
    out = io.StringIO()
    ran = cli.main(["run", "Name the capital of France.", "--thread", "t1", *common], out=out)
    assert ran == 0, (ran, out.getvalue()[-2000:])
    again = cli.main(["resume", "--thread", "t1", *common], out=io.StringIO())
    assert again == 0, again
print("cli ok")

studio = importlib.util.spec_from_file_location("studio_entry", folder / "replangraph" / "app" / "studio.py")
entry = importlib.util.module_from_spec(studio)
studio.loader.exec_module(entry)
graphs = json.loads((root / "langgraph.json").read_text())["graphs"]
for name, where in graphs.items():
    assert getattr(entry, where.rsplit(":", 1)[1])({}).get_graph(), name
print("studio ok")

if importlib.util.find_spec("temporalio") and importlib.util.find_spec("temporalio.langgraph"):  # the extra
    from replangraph.temporal import effect_nodes, temporal_builder
    compiled = build_demo_graph()
    temporal_builder(compiled, name="removal", in_workflow=effect_nodes(compiled))
    print("temporal ok")

from replangraph import AgentConfig, EVENT_NAMES
from replangraph.app import console
from replangraph.app.feature_cli import feature_clis
pages = [root / "docs" / "configuration.md"]
pages += [folder / "replangraph" / "nodes" / name / "README.md" for name in replangraph.nodes.FEATURES]
text = "\\n".join(page.read_text() for page in pages if page.is_file())
missing = [name for name in AgentConfig.model_fields if f"| `{name}` |" not in text]
assert not missing, missing
samples = {name: payload for cli in feature_clis() for name, payload in cli.event_samples.items()}
for name in EVENT_NAMES:
    if name in samples:
        assert not console.describe({"event": name, **samples[name]}).startswith(name + ": {"), name
print("docs ok")
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
def test_every_surface_works_with_a_feature_removed(feature, tmp_path):
    folder = package_without(feature, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(folder)}  # ahead of the editable install's finder
    env.pop("OPENAI_BASE_URL", None)
    helpers = str(ROOT / "tests" / "helpers")
    done = subprocess.run(
        [sys.executable, "-c", SURFACES, str(folder), helpers, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "demo 19" in done.stdout
    for surface in ("cli", "studio", "docs"):
        assert f"{surface} ok" in done.stdout, (surface, done.stdout[-2000:])
    assert not (folder / "replangraph" / "nodes" / feature).exists()


def test_every_registered_feature_has_a_folder_with_a_feature_module():
    for name in FEATURES:
        assert (ROOT / "nodes" / name / "feature.py").is_file(), name
