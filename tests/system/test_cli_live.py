"""The live view of a run on a terminal (rich): the queue nested by hand-offs, the tool calls in flight, the
counters; redrawn as the run goes, one line per row whatever the terminal's width."""

from __future__ import annotations

import builtins
import io
import re
import sys
import time

import pytest
from cli_helpers import ANSI, ASK_GOAL, MARKET_QUESTION, Terminal, hitl_responder
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from rich.console import Console
from test_openai_compat import FakeOpenAI, fake_openai  # noqa: F401  (the fixture)

from replangraph.app import cli, console
from replangraph.app.live import LiveOutput, QueueView
from replangraph.queue.tasks import new_task


def view_text(view: QueueView) -> str:
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100, record=True)
    terminal.print(view.render())
    assert "\x1b[" in terminal.file.getvalue()  # drawn with colours
    return terminal.export_text()


def queue_values(status: str = "in_progress", calls: int = 3) -> dict:
    parent = {**new_task("1", "Extract products ranked 1-19", position=[1]), "status": status, "model_calls": calls}
    child = new_task(
        "1_dyn_0", "Extract products ranked 6-10", position=[1, 0], parent_id="1", depth=1, origin="dynamic"
    )
    other = {**new_task("2", "Write the summary", position=[2], depends_on=["1"]), "status": "skipped"}
    return {"goal": "top 19 products", "tasks": {"1": parent, "1_dyn_0": child, "2": other}, "replans": []}


def test_the_view_nests_handed_off_work_under_its_parent_and_counts_steps_and_tokens():
    view = QueueView(max_steps=40)
    assert "planning…" in view_text(view)
    view.feed("values", queue_values())
    text = view_text(view)
    lines = text.splitlines()
    parent = next(i for i, line in enumerate(lines) if "▶ 1 running Extract products ranked 1-19" in line)
    child = next(i for i, line in enumerate(lines) if "○ 1_dyn_0 Extract products ranked 6-10" in line)
    top = next(i for i, line in enumerate(lines) if "⊘ 2 skipped Write the summary" in line)
    assert parent < child < top
    assert lines[child].index("○") > lines[parent].index("▶") > 0  # nested one level deeper
    assert lines[top].index("⊘") == lines[parent].index("▶")
    assert "steps: 3/40 · tokens: n/a" in text
    assert "1 running" in text and "1 pending" in text and "1 skipped" in text

    view.usage.add({"input_tokens": 10, "output_tokens": 5, "total_tokens": 15})
    view.usage.on_llm_end(LLMResult(generations=[[ChatGeneration(message=AIMessage("x", usage_metadata=usage(20)))]]))
    view.feed("values", queue_values(calls=5))
    assert "steps: 5/40 · tokens: 35" in view_text(view)


def usage(total: int) -> dict:
    return {"input_tokens": total - 1, "output_tokens": 1, "total_tokens": total}


def test_the_tool_call_in_flight_shows_until_its_answer_arrives():
    view = QueueView(max_steps=40)
    view.feed("values", queue_values())
    turn = AIMessage("", tool_calls=[{"name": "read_ranking", "args": {"start": 1, "count": 5}, "id": "c1"}])
    view.feed("updates", {"executor": {"tasks": {"1": {"status": "in_progress"}}, "windows": {"1": [turn]}}})
    text = view_text(view)
    lines = text.splitlines()
    call = next(i for i, line in enumerate(lines) if "↳ read_ranking(start=1, count=5)" in line)
    assert "1 running Extract products ranked 1-19" in lines[call - 1]  # under its subtask

    answered = [turn, ToolMessage("#1 Aurora Desk Lamp", tool_call_id="c1", name="read_ranking")]
    view.feed("updates", {"tools": {"windows": {"1": answered}, "tasks": {"1": {"elapsed_s": 0.1}}}})
    assert "read_ranking(" not in view_text(view)

    view.feed("updates", {"executor": {"windows": {"1": [turn]}}})
    view.feed("updates", {"tools": {"tasks": {"1": {"status": "completed"}}, "windows": {"1": None}}})
    assert "read_ranking(" not in view_text(view)  # the subtask ended: nothing in flight


def test_the_demo_on_a_terminal_runs_under_the_live_view():
    out = Terminal()
    assert cli.main(["demo"], out=out) == 0
    raw = out.getvalue()
    text = ANSI.sub("", raw)
    assert "\x1b[?25l" in raw and "\x1b[?25h" in raw  # rich's Live hid the cursor and showed it again
    assert "✔ 1_dyn_2 completed Extract products ranked 16-19" in text
    assert "- 1 handed off work: added 1_dyn_0, 1_dyn_1, 1_dyn_2" in text  # events printed above the view
    footer = re.search(r"steps: \d+/1000 · tokens: [\d,]+ · ✔ 4 completed\n", text)
    assert footer
    assert text.index("Final answer:") > text.rindex(footer.group())  # the answer after the view
    assert "Check: 19/19 products in the final answer." in text


@pytest.mark.system
def test_a_question_is_asked_once_the_live_view_has_stopped(fake_openai, monkeypatch, tmp_path):  # noqa: F811
    FakeOpenAI.responder = staticmethod(hitl_responder)
    typed = ["US"]
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(builtins, "input", lambda prompt="": typed.pop(0))
    out = Terminal()
    assert cli.main(["run", ASK_GOAL, "--db", str(tmp_path / "runs.sqlite")], out=out) == 0
    raw = out.getvalue()
    asked = raw.index(f"1 asks: Please confirm: {MARKET_QUESTION}")
    assert raw.rindex("\x1b[?25h", 0, asked) > raw.rindex("\x1b[?25l", 0, asked)  # the view stopped first
    assert raw.count("\x1b[?25l") == 2  # a view before the question, another after it
    assert typed == []
    assert "market US" in ANSI.sub("", raw).split("Final answer:", 1)[1]


def test_plain_lines_when_not_a_terminal_or_without_rich(monkeypatch, capsys):
    args = cli.make_parser().parse_args(["demo"])
    assert type(cli.choose_output(args, io.StringIO())) is console.PlainOutput
    assert type(cli.choose_output(args, Terminal())) is LiveOutput
    monkeypatch.setitem(sys.modules, "replangraph.app.live", None)  # rich not installed
    assert type(cli.choose_output(args, Terminal())) is console.PlainOutput
    assert "replangraph[cli]" in capsys.readouterr().err
    out = Terminal()
    assert cli.main(["demo"], out=out) == 0
    assert "\x1b[" not in out.getvalue()
    assert "- 1_dyn_2 completed: #16 Pebble Bluetooth Speaker" in out.getvalue()
    assert "  [ ] 1_dyn_2: Extract products ranked 16-19" in out.getvalue()


def test_a_long_queue_shows_what_runs_and_what_comes_next():
    tasks = {}
    for n in range(1, 101):
        status = "completed" if n < 50 else "in_progress" if n in (50, 51) else "pending"
        tasks[str(n)] = {**new_task(str(n), f"part {n}", position=[n]), "status": status}
    tasks["50_dyn_0"] = new_task("50_dyn_0", "part 50, rest", position=[50, 0], parent_id="50", depth=1)
    view = QueueView()
    view.max_rows = 10
    view.feed("values", {"tasks": tasks})
    text = view_text(view)
    assert "▶ 50 running part 50" in text and "▶ 51 running part 51" in text and "○ 50_dyn_0" in text
    assert "○ 52 part 52" in text and "part 49" not in text and "part 100" not in text
    assert "… 91 other task(s) not shown" in text
    assert text.endswith("steps: 0 · tokens: n/a · ○ 50 pending · ▶ 2 running · ✔ 49 completed\n")


def last_frame(raw: str) -> str:
    """The view as rich last drew it (each frame begins with its title), without colours."""
    text = ANSI.sub("", raw)
    return text[text.rindex("Plan") :] if "Plan" in text else ""


class Steps:
    """A graph that streams ``chunks`` (waiting ``pause`` seconds before each); before taking the next one, it
    keeps the frame the view shows."""

    def __init__(self, chunks: list[tuple[str, dict]], screen: io.StringIO, pause: float = 0.0):
        self.chunks, self.screen, self.pause = chunks, screen, pause
        self.frames: list[str] = []

    def stream(self, inputs, config, stream_mode):
        for chunk in self.chunks:
            time.sleep(self.pause)
            yield chunk
            self.frames.append(last_frame(self.screen.getvalue()))


def test_the_view_is_redrawn_when_a_step_ends_not_only_on_rich_s_timer():
    screen = io.StringIO()
    output = LiveOutput(screen, console=Console(file=screen, force_terminal=True, width=100))
    turn = AIMessage("", tool_calls=[{"name": "read_ranking", "args": {"start": 1, "count": 5}, "id": "c1"}])
    update = {"executor": {"windows": {"1": [turn]}}}
    graph = Steps([("values", queue_values()), ("updates", update)], screen, pause=2 * LiveOutput.REDRAW_S)
    output.stream(graph, {}, {}, max_steps=40)
    first, second = graph.frames
    assert "▶ 1 running Extract products ranked 1-19" in first and "steps: 3/40" in first  # not "planning…"
    assert "↳ read_ranking(start=1, count=5)" in second


def test_rows_are_cut_not_wrapped_on_an_80_column_terminal():
    view = QueueView(max_steps=1000)
    words = "Extract every product with its name, units sold, rating, price and the shop that sells it " * 2
    values = queue_values()
    values["goal"] = "Find " + words
    values["tasks"]["1"]["content"] = words
    values["tasks"]["2"] = {**values["tasks"]["2"], "status": "failed", "error": "timed out " * 20}
    view.feed("values", values)
    call = {"name": "read_ranking", "args": {"query": words}, "id": "c1"}
    view.feed("updates", {"executor": {"windows": {"1": [AIMessage("", tool_calls=[call])]}}})
    terminal = Console(file=io.StringIO(), force_terminal=True, width=80, record=True)
    terminal.print(view.render())
    lines = terminal.export_text().splitlines()
    assert len(lines) == 6, lines  # the title, three tasks, the call in flight, the counters: one line each
    assert all(len(line) <= 80 for line in lines)
    title, parent, call_line, child, failed, _ = lines
    assert title.startswith("Plan: Find Extract every product") and title.endswith("…")
    assert "▶ 1 running Extract every product" in parent and parent.endswith("…")  # the status word kept
    assert "↳ read_ranking(query=" in call_line and call_line.endswith("…")
    assert "○ 1_dyn_0 Extract products ranked 6-10" in child
    assert "✘ 2 failed Write the summary (timed out" in failed and failed.endswith("…")
