"""The README stays true to the code (the notebooks are run by tests/test_notebooks.py)."""

from __future__ import annotations

import re
from pathlib import Path

from replangraph import AgentConfig
from replangraph.app.demo import build_demo_graph

ROOT = Path(__file__).resolve().parent.parent


def edges(mermaid: str) -> list[str]:
    return sorted(line.strip() for line in mermaid.splitlines() if "-->" in line or "-.->" in line)


def test_readme_mermaid_matches_the_compiled_graph():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```mermaid\n(.*?)```", readme, flags=re.DOTALL).group(1)
    assert edges(block) == edges(build_demo_graph().get_graph().draw_mermaid())


def test_readme_lists_every_config_field_with_its_default():
    readme = (ROOT / "README.md").read_text()
    for name, field in AgentConfig.model_fields.items():
        row = re.search(rf"^\| `{name}` \| ([^|]+) \|", readme, flags=re.MULTILINE)
        assert row, f"README has no row for {name}"
        if isinstance(field.default, int | float) and not isinstance(field.default, bool):
            assert f"{field.default:,}" in row.group(1) or str(field.default) in row.group(1), name
