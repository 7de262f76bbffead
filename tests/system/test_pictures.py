"""replangraph.app.pictures: the layouts, and the drawings checked through the artists they make (Agg, no display)."""

from __future__ import annotations

import io
import math
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402

from replangraph.app.demo import build_demo_graph  # noqa: E402
from replangraph.app.layouts import graph_layers, graph_layout, task_tree_layout  # noqa: E402
from replangraph.app.pictures import (  # noqa: E402
    STATUS_COLOURS,
    benchmark_chart,
    draw_graph,
    draw_task_tree,
    draw_task_trees,
    plot_window_tokens,
)
from replangraph.queue.tasks import STATUSES, new_task  # noqa: E402


class State(TypedDict):
    n: int


def loop_graph():
    """plan -> work; work -(conditional)-> check or the end; check -> work (an edge back up)."""
    builder = StateGraph(State)
    builder.add_node("plan", lambda s: {"n": 0})
    builder.add_node("work", lambda s: {"n": s["n"] + 1})
    builder.add_node("check", lambda s: {})
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "work")
    builder.add_conditional_edges("work", lambda s: "check" if s["n"] < 3 else END, ["check", END])
    builder.add_edge("check", "work")
    return builder.compile()


def arrows(fig) -> dict[str, FancyArrowPatch]:
    return {p.get_gid(): p for ax in fig.axes for p in ax.patches if isinstance(p, FancyArrowPatch)}


def texts(fig) -> dict[str, object]:
    return {t.get_gid(): t for ax in fig.axes for t in ax.texts if t.get_gid()}


def rendered(fig):
    """The figure drawn once with Agg, and its renderer."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


# --------------------------------------------------------------------------- import


@pytest.mark.system
def test_importing_the_package_or_the_module_does_not_import_matplotlib():
    code = "import sys, replangraph, replangraph.app.pictures; assert 'matplotlib' not in sys.modules, 'imported'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_without_matplotlib_the_error_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r'pip install "replangraph\[notebooks\]"'):
        draw_task_tree({})


# --------------------------------------------------------------------------- the graph


def test_layers_follow_the_flow_and_end_alone_at_the_bottom():
    graph = loop_graph().get_graph()
    ranks = graph_layers(list(graph.nodes), [(e.source, e.target) for e in graph.edges])
    assert ranks == {START: 0, "plan": 1, "work": 2, "check": 3, END: 4}


def test_a_hub_does_not_flatten_the_replangraph_graph_into_one_row():
    graph = build_demo_graph().get_graph()
    edges = [(e.source, e.target) for e in graph.edges]
    ranks = graph_layers(list(graph.nodes), edges)
    assert ranks[START] == 0 and ranks[END] == max(ranks.values())
    assert ranks["planner"] < ranks["executor"] < ranks["finalize"] < ranks[END]
    assert ranks["executor"] < ranks["tools"]
    assert max(list(ranks.values()).count(r) for r in set(ranks.values())) <= 4  # BFS would put 9 on one row
    forward = [(s, t) for s, t in edges if s != t and ranks[s] < ranks[t]]
    assert len(forward) > len(edges) / 2  # most edges point down


def test_layout_puts_unreached_nodes_on_a_row_of_their_own_or_leaves_them_out():
    graph = build_demo_graph().get_graph()
    nodes, edges = list(graph.nodes), [(e.source, e.target) for e in graph.edges]
    layout = graph_layout(nodes, edges)
    assert set(layout) == set(nodes) and len(set(layout.values())) == len(nodes)  # every node, none on another
    handlers = [n for n in nodes if n.startswith("__error_handler__")]
    assert len(handlers) == 5  # executor, tools, compressor, verifier, goal_check
    bottom = min(y for _, y in layout.values())
    assert {layout[n][1] for n in handlers} == {bottom} and layout[END][1] > bottom
    assert set(graph_layout(nodes, edges, isolated=False)) == set(nodes) - set(handlers)


def test_draw_graph_labels_every_node_and_dashes_the_conditional_edges():
    compiled = loop_graph()
    fig = draw_graph(compiled)
    labels = {t.get_text() for t in fig.axes[0].texts}
    assert {START, "plan", "work", "check", END} <= labels
    drawn = arrows(fig)
    assert set(drawn) == {f"edge:{e.source}->{e.target}" for e in compiled.get_graph().edges}
    assert drawn["edge:work->check"].get_linestyle() == "--"
    assert drawn[f"edge:work->{END}"].get_linestyle() == "--"
    assert drawn["edge:plan->work"].get_linestyle() == "-"
    assert drawn["edge:check->work"].get_linestyle() == "-"
    assert drawn["edge:plan->work"].get_connectionstyle().rad == 0  # the next row: straight
    assert drawn["edge:check->work"].get_connectionstyle().rad > 0  # back up: curved
    height = {gid: t.get_position()[1] for gid, t in texts(fig).items()}
    assert height["node:plan"] > height["node:work"] > height["node:check"]
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["edge", "conditional edge"]


def test_arrows_stop_at_the_boxes_they_join():
    fig = draw_graph(loop_graph())
    # An arrow clips at its boxes as they were placed when it is drawn: they must be drawn (placed) first.
    assert min(a.get_zorder() for a in arrows(fig).values()) > max(t.get_zorder() for t in texts(fig).values())
    renderer = rendered(fig)
    boxes = {gid: t.get_bbox_patch().get_window_extent(renderer) for gid, t in texts(fig).items()}
    arrow = arrows(fig)["edge:plan->work"].get_window_extent(renderer)
    # within a few pixels (shrinkA/shrinkB, the arrowhead's tip) of plan's lower edge and work's upper edge
    assert boxes["node:plan"].y0 - 6 <= arrow.y1 <= boxes["node:plan"].y0 + 1
    assert boxes["node:work"].y1 - 1 <= arrow.y0 <= boxes["node:work"].y1 + 6


def test_a_loop_leaves_its_box_on_the_right_and_comes_back_outside_it():
    fig = draw_graph(build_demo_graph())
    renderer = rendered(fig)
    drawn = arrows(fig)
    for node in ("commands",):  # the replangraph graph's loop
        box = texts(fig)[f"node:{node}"].get_bbox_patch().get_window_extent(renderer)
        loop = drawn[f"edge:{node}->{node}"]
        path = loop.get_transform().transform_path(loop.get_path())  # the line and its head, in pixels
        points = np.concatenate(path.to_polygons(closed_only=False))  # the curves flattened to points
        outside = points[:, 0] >= box.x1 - 2  # on or right of the box's right edge (the head's back may dip in)
        assert outside.mean() > 0.9, f"{node}'s loop is drawn inside its box"
        assert points[:, 0].max() > box.x1 + 5  # it arcs out, past the edge
        extent = loop.get_window_extent(renderer)
        assert box.y0 < extent.y0 and extent.y1 < box.y1 + 2  # and back, beside the box
        assert loop.get_connectionstyle().rad < 0


def test_the_replangraph_graph_draws_every_node_and_edge():
    compiled = build_demo_graph()
    graph = compiled.get_graph()
    fig = draw_graph(compiled)
    rendered(fig)  # loops and clipped arrows draw without error
    assert {t.get_text() for t in fig.axes[0].texts} >= {node.name for node in graph.nodes.values()}
    drawn = arrows(fig)
    assert len(drawn) == len(graph.edges)
    dashed = {gid for gid, a in drawn.items() if a.get_linestyle() == "--"}
    assert dashed == {f"edge:{e.source}->{e.target}" for e in graph.edges if e.conditional}
    assert "edge:commands->commands" in drawn  # a loop on one node
    handler = texts(fig)["node:__error_handler__tools"]
    assert handler.get_bbox_patch().get_linestyle() == ":"  # no edge leads there
    assert texts(fig)["node:tools"].get_bbox_patch().get_linestyle() == "-"


def test_draw_graph_draws_into_the_axes_it_is_given():
    from matplotlib.figure import Figure

    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert draw_graph(loop_graph(), ax=right) is fig
    assert not left.texts and "plan" in {t.get_text() for t in right.texts}


# --------------------------------------------------------------------------- the task tree


def queue() -> dict:
    tasks = {
        "1": new_task("1", "read products 1-19", position=[0]),
        "1_dyn_0": new_task("1_dyn_0", "read 6-10", position=[0, 0], parent_id="1", depth=1, origin="dynamic"),
        "1_dyn_1": new_task("1_dyn_1", "read 11-19", position=[0, 1], parent_id="1", depth=1, origin="dynamic"),
        "1_dyn_1_dyn_0": new_task(
            "1_dyn_1_dyn_0", "read 16-19", position=[0, 1, 0], parent_id="1_dyn_1", depth=2, origin="dynamic"
        ),
        "2": new_task("2", "write the report", position=[1], depends_on=["1"]),
        "3": new_task("3", "send it", position=[2], depends_on=["2"]),
    }
    for task_id, status in {"1": "completed", "1_dyn_1": "in_progress", "2": "failed", "3": "skipped"}.items():
        tasks[task_id]["status"] = status
    return dict(reversed(tasks.items()))  # dict order is not queue order


def test_tree_layout_hangs_dynamic_tasks_below_and_to_the_right_of_their_parent():
    layout = task_tree_layout(queue())
    rows = sorted(layout, key=lambda t: -layout[t][1])
    assert rows == ["1", "1_dyn_0", "1_dyn_1", "1_dyn_1_dyn_0", "2", "3"]  # queue order, children before "2"
    for child, parent in [("1_dyn_0", "1"), ("1_dyn_1", "1"), ("1_dyn_1_dyn_0", "1_dyn_1")]:
        assert layout[child][1] < layout[parent][1]  # below
        assert layout[child][0] == layout[parent][0] + 1  # one step to the side
    assert layout["1"][0] == layout["2"][0] == layout["3"][0] == 0


def test_tree_layout_takes_a_missing_parent_or_a_cycle_as_roots():
    orphan = new_task("5_dyn_0", "left over", position=[4, 0], parent_id="5", depth=1, origin="dynamic")
    assert task_tree_layout([orphan]) == {"5_dyn_0": (0.0, 0.0)}
    a = new_task("a", "A", position=[0], parent_id="b")
    b = new_task("b", "B", position=[1], parent_id="a")
    assert set(task_tree_layout([a, b])) == {"a", "b"}


def test_draw_task_tree_colours_each_status_and_joins_children_to_parents():
    tasks = queue()
    fig = draw_task_tree(tasks, title="after the split")
    ax = fig.axes[0]
    markers = {line.get_gid(): line for line in ax.lines if (line.get_gid() or "").startswith("task:")}
    assert set(markers) == {f"task:{t}" for t in tasks}
    for task_id, task in tasks.items():
        assert to_hex(markers[f"task:{task_id}"].get_markerfacecolor()) == STATUS_COLOURS[task["status"]]
    assert len({STATUS_COLOURS[s] for s in STATUSES}) == len(STATUSES)
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [s.replace("_", " ") for s in STATUSES]
    labels = {t.get_text() for t in ax.texts}
    assert "1_dyn_1_dyn_0  read 16-19" in labels and "2  write the report" in labels
    elbows = [line for line in ax.lines if not line.get_gid()]
    assert len(elbows) == 3  # one per dynamic task
    parent, child = markers["task:1_dyn_1"].get_xydata()[0], markers["task:1_dyn_1_dyn_0"].get_xydata()[0]
    assert any(tuple(e.get_xydata()[0]) == tuple(parent) and tuple(e.get_xydata()[-1]) == tuple(child) for e in elbows)
    assert ax.get_title(loc="left") == "after the split"


def test_an_empty_queue_draws_a_note():
    fig = draw_task_tree({})
    assert [t.get_text() for t in fig.axes[0].texts] == ["(no tasks yet)"]


def test_snapshots_stack_with_counts_in_their_titles_and_one_legend():
    first = {"1": new_task("1", "read products 1-19", position=[0])}
    fig = draw_task_trees([first, queue()])
    assert len(fig.axes) == 2
    assert [ax.get_title(loc="left") for ax in fig.axes] == [
        "1. 1 pending",
        "2. 2 pending, 1 in progress, 1 completed, 1 failed, 1 skipped",
    ]
    assert fig.axes[0].get_legend() is None and fig.axes[1].get_legend() is not None
    assert fig.axes[0].get_xlim() == fig.axes[1].get_xlim()  # the same indent in every snapshot
    with pytest.raises(ValueError, match="1 titles for 2 snapshots"):
        draw_task_trees([first, queue()], titles=["only one"])


# --------------------------------------------------------------------------- plots


def test_window_tokens_draws_one_line_per_series_and_the_limit():
    fig = plot_window_tokens({"large": [100, 2_000, 4_000], "small": [100, 1_500]}, limit=3_000)
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.lines}
    assert list(lines["large"].get_xdata()) == [1, 2, 3] and list(lines["large"].get_ydata()) == [100, 2_000, 4_000]
    assert list(lines["small"].get_ydata()) == [100, 1_500]
    limit = lines["window limit (3,000 tokens)"]
    assert list(limit.get_ydata()) == [3_000, 3_000] and limit.get_linestyle() == ":"
    assert ax.get_ylim()[0] == 0
    assert "window limit" not in " ".join(line.get_label() for line in plot_window_tokens({"a": [1]}).axes[0].lines)


def test_window_tokens_marks_where_compression_starts_and_each_compression():
    fig = plot_window_tokens(
        {"small": [700, 2_500, 6_200, 6_600, 6_650]}, limit=9_000, threshold=7_200, compressions=[(4, 8_080, 6_600)]
    )
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.lines}
    starts = lines["compression starts (7,200 tokens)"]
    assert list(starts.get_ydata()) == [7_200, 7_200] and starts.get_linestyle() == "--"
    drop = next(line for line in ax.lines if line.get_gid() == "compression:0")
    assert list(drop.get_xdata()) == [4, 4] and list(drop.get_ydata()) == [8_080, 6_600]  # at the call it shrank
    marks = next(line for line in ax.lines if line.get_gid() == "compressions")
    assert list(marks.get_xdata()) == [4] and list(marks.get_ydata()) == [8_080] and marks.get_marker() == "x"
    assert ax.yaxis.get_major_formatter()(7_200, 0) == "7,200"  # thousands separators
    plain = plot_window_tokens({"a": [1, 2]}).axes[0]
    assert [line.get_label() for line in plain.lines] == ["a"]  # no threshold, no compressions: nothing more


def test_benchmark_chart_draws_a_bar_per_agent_in_each_group():
    results = {"compliant": {"ours": 19, "ReAct": 19}, "lazy": {"ours": 5, "ReAct": 5, "ours + verify": 19}}
    fig = benchmark_chart(results, total=19)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    heights = [b.get_height() for b in bars]  # by agent, then group; a missing one is NaN, not 0
    assert heights[:4] == [19, 5, 19, 5] and math.isnan(heights[4]) and heights[5] == 19
    assert [t.get_text() for t in ax.get_xticklabels()] == ["compliant", "lazy"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["all 19", "ours", "ReAct", "ours + verify"]
    assert [t.get_text() for t in ax.texts] == ["19", "5", "19", "5", "n/a", "19"]
    missing = ax.texts[4]  # on the baseline where ours + verify's compliant bar would be
    assert missing.xy == (bars[4].get_x() + bars[4].get_width() / 2, 0)


def test_benchmark_chart_writes_a_real_zero_as_a_value():
    fig = benchmark_chart({"lazy": {"a": 0, "b": 1.184, "c": 75.6}}, fmt="{:.1f}k")
    ax = fig.axes[0]
    assert [b.get_height() for b in ax.patches if isinstance(b, Rectangle)] == [0, 1.184, 75.6]
    assert [t.get_text() for t in ax.texts] == ["0.0k", "1.2k", "75.6k"]


def test_every_picture_renders_to_png():
    pictures = [
        draw_graph(loop_graph()),
        draw_task_tree(queue()),
        draw_task_trees([queue()]),
        plot_window_tokens({"a": [1, 2]}, limit=2),
        benchmark_chart({"g": {"a": 1}}),
    ]
    for fig in pictures:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        assert buffer.getvalue().startswith(b"\x89PNG")
