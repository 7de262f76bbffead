"""The notebooks: stored without outputs, run top to bottom by a real Jupyter kernel, showing what they say.

Each notebook runs in the ``python3`` kernel of this interpreter (ipykernel installed here) with
its folder, ``notebooks/``, as the working directory, as Jupyter runs it; the notebooks that
import ``benchmarks`` put the repository root on ``sys.path`` themselves. Without nbclient or
ipykernel these tests are skipped, except under CI (``$CI`` set), where they fail.

``python tests/test_notebooks.py`` clears the outputs of every notebook.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
FOUND = sorted(NOTEBOOKS.glob("*.ipynb"))
KERNEL = "python3"
CELL_TIMEOUT_S = 120
CLEAR_HINT = (
    "clear them: `jupyter nbconvert --clear-output --inplace notebooks/*.ipynb` "
    '(pip install -e ".[notebooks]") or `python tests/test_notebooks.py`'
)

EXPECTED: dict[str, dict] = {
    "quickstart": {
        "images": 2,  # the graph, the task tree
        "shows": [
            r"event: dynamic_tasks_added \['1_dyn_0', '1_dyn_1', '1_dyn_2'\]",
            r"queue: \[>\] 1\n",
            r"queue: \[X\] 1  \[ \] 1_dyn_0  \[ \] 1_dyn_1  \[ \] 1_dyn_2",
            r"queue: \[X\] 1  \[X\] 1_dyn_0  \[X\] 1_dyn_1  \[X\] 1_dyn_2",
            r"#19 Sable Leather Wallet",
            r"19/19 products in the final answer",
        ],
    },
    "replan_toolkit": {
        "images": 2,  # the fan-out's snapshots, the chain's snapshots
        "shows": [
            r"1: read_ranking\(start=1, count=5\)\n1: replan_review_context\(\)\n1: replan_split_and_handoff\(",
            r"Current subtask: 1: Extract products ranked 1-19",
            r"'task_ids': \['1_dyn_0', '1_dyn_1', '1_dyn_2'\]",
            r"1_dyn_2 +1 +0 +continuation +dynamic +\[0, 2\] +completed",
            # a chain of continuations stays at its parent's depth
            r"\{'1': 0, '1_dyn_0': 0, '1_dyn_0_dyn_0': 0, '1_dyn_0_dyn_0_dyn_0': 0\}",
            r"19 / 19 products in the final answer(.|\n)*19 / 19 products in the final answer",
            # max_split_depth=1: the splits of the first split's halves are refused; each reads its ranks itself
            r"1_dyn_0 was told: split depth limit reached: 1_dyn_0 is at depth 1 and max_split_depth is 1; "
            r"finish this subtask yourself\. The queue is unchanged; this subtask is still yours\.",
            r"\{'1': 0, '1_dyn_0': 1, '1_dyn_1': 1\} \{'max_split_depth': 2\}\n19 / 19 products in the final answer",
        ],
    },
    "compression": {
        "images": 1,  # tokens per worker call
        "shows": [
            r"compression starts above \(9,000 - 1,000\) x 0\.9 = 7,200 tokens",
            r"window 200,000: \d+ model calls \(0 summaries\), 0 compressions, largest request [2-9]\d,\d{3} tokens, "
            r"60/60 item codes",
            # compressed, every request under the 7,200-token threshold, nothing lost
            r"window +9,000: \d+ model calls \([1-9]\d* summaries\), [1-9]\d* compressions, largest request "
            r"([1-6],\d{3}|7,[01]\d{2}) tokens, 60/60 item codes",
            r"'event': 'context_compressed'",
        ],
    },
    "human_in_the_loop": {
        "images": 0,
        "shows": [
            r"'question': 'Please confirm: Which colour for the door\?'",
            r"Please confirm: Which colour for the gate\?",
            r"Done: The door is painted green\. The gate is painted dark blue\.",
            r"'kind': 'plan'",
            r"Done: The door is painted white\. The gate is painted white\. \| approved",
            r"Done: The door is painted white\. The fence is painted white\. \| edited",
            # the cancel word answered to the gate's question: the door stays done, the gate is skipped
            r"Please confirm: Which colour for the gate\?\ncancelled: True \{'1': 'completed', '2': 'skipped'\}\n"
            r"The run for this goal stopped before it was finished: the user cancelled the run\n",
            r"- 1: Paint the door\n  Result: The door is painted green\.(.|\n)*- 2 \(skipped\): Paint the gate",
        ],
    },
    "persona_benchmark": {
        "images": 2,  # items recovered, largest worker prompt
        "shows": [
            r"\| N \| persona \| replangraph --no-verify \| replangraph \| ReAct \|",
            r"\| 100 \| compliant \| \*\*100/100\*\* [^|]*\| \*\*100/100\*\* [^|]*\| \*\*100/100\*\* ",
            # the lazy persona: only the completion check recovers the items
            r"\| 100 \| lazy \| \*\*50/100\*\* [^|]*\| \*\*100/100\*\* [^|]*\| \*\*5/100\*\* ",
            # tokens per item against the items' own, and the shared prefix
            r"\| 100 \| compliant \| [^|]* tok/item = [1-9]\.\d× items · prefix \d+% ",
        ],
    },
}


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def require_jupyter() -> None:
    """Skip without nbclient or ipykernel, or fail under CI, where the notebooks must run."""
    missing = [name for name in ("nbclient", "nbformat", "ipykernel") if importlib.util.find_spec(name) is None]
    if missing:
        reason = f'{", ".join(missing)} not installed (pip install -e ".[test]")'
        if under_ci():
            pytest.fail(f"the notebooks cannot run under CI: {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def jupyter() -> None:
    """nbclient and ipykernel (skipped without them, failing under CI), and matplotlib's font cache built
    here, so that no kernel announces building it on stderr."""
    require_jupyter()
    import matplotlib.font_manager  # noqa: F401


def execute(path: Path):
    """The notebook run top to bottom in the ``python3`` kernel, in its own folder; ``(notebook, seconds)``."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=CELL_TIMEOUT_S, kernel_name=KERNEL, resources={"metadata": {"path": str(path.parent)}}
    )
    started = time.perf_counter()
    client.execute()
    return notebook, time.perf_counter() - started


def shown(notebook) -> str:
    """Everything the notebook's outputs show as text (printed, returned, Markdown)."""
    parts = []
    for cell in notebook.cells:
        streamed = False  # a loaded kernel may send one cell's printing as several stream messages: one part
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                if streamed:
                    parts[-1] += output["text"]
                else:
                    parts.append(output["text"])
                streamed = True
                continue
            streamed = False
            for mime in ("text/plain", "text/markdown"):
                if mime in output.get("data", {}):
                    parts.append(output["data"][mime])
    return "\n".join(parts)


def test_the_expected_notebooks_are_there():
    assert sorted(p.stem for p in FOUND) == sorted(EXPECTED), "a notebook was added or removed: update EXPECTED"


@pytest.mark.parametrize("path", FOUND, ids=[p.stem for p in FOUND])
def test_stored_without_outputs(path: Path):
    notebook = json.loads(path.read_text())
    dirty = [
        i
        for i, cell in enumerate(notebook["cells"])
        if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name} is stored with outputs or execution counts (cells {dirty}); {CLEAR_HINT}"
    assert notebook["metadata"]["kernelspec"]["name"] == KERNEL, f"{path.name} should name the {KERNEL} kernel"


@pytest.mark.system
def test_the_kernel_is_this_python(jupyter):
    """The ``python3`` kernel runs this interpreter, so the notebooks import the replangraph under test."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys; print(sys.prefix)")])
    NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name=KERNEL).execute()
    prefix = notebook.cells[0].outputs[0]["text"].strip()
    assert Path(prefix).resolve() == Path(sys.prefix).resolve(), (
        f"the {KERNEL} kernel runs Python from {prefix}, not this one ({sys.prefix}): a {KERNEL} kernelspec "
        f"elsewhere wins (`jupyter kernelspec list`); remove it, or run `python -m ipykernel install --sys-prefix`"
    )


@pytest.mark.parametrize("path", FOUND, ids=[p.stem for p in FOUND])
@pytest.mark.system
def test_runs_and_shows_what_it_says(path: Path, jupyter, record_property):
    notebook, seconds = execute(path)  # a cell that raises fails here, with its traceback
    record_property("seconds", round(seconds, 1))
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    assert not [o for o in outputs if o["output_type"] == "error"]
    warnings = [o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == "stderr"]
    assert not warnings, f"{path.name} writes to stderr: {warnings}"
    expected = EXPECTED[path.stem]
    images = sum("image/png" in o.get("data", {}) for o in outputs)
    assert images == expected["images"], f"{path.name} shows {images} pictures, not {expected['images']}"
    text = shown(notebook)
    for pattern in expected["shows"]:
        assert re.search(pattern, text), f"{path.name} does not show {pattern!r}; it shows:\n{text[-6000:]}"


def clear_outputs(paths=FOUND) -> None:
    """Remove every code cell's outputs and execution count (what ``nbconvert --clear-output`` does), and
    the run times nbclient records in its metadata."""
    import nbformat

    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
                for key in ("execution", "collapsed", "scrolled"):
                    cell.metadata.pop(key, None)
        nbformat.write(notebook, path)


if __name__ == "__main__":
    clear_outputs()
    print(f"cleared the outputs of {len(FOUND)} notebooks in {NOTEBOOKS}", file=sys.stderr)
