"""Pictures for notebooks, drawn offline with matplotlib: the graph, the task tree, window tokens, benchmark bars.

Nothing here calls a web service (LangGraph's ``draw_mermaid_png()`` does) or needs
graphviz. matplotlib is imported inside the drawing functions, so ``import replangraph``
never needs it; ``pip install "replangraph[notebooks]"`` installs it. Each drawing
function draws into ``ax`` when given, else into a new `matplotlib.figure.Figure`
(not registered with pyplot, so a notebook shows it once, as the cell's value), and
returns the figure. The layouts are in `replangraph.app.layouts` and need no matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from replangraph.app.layouts import END, START, graph_layers, graph_layout, ordered_tasks, task_tree_layout
from replangraph.queue import STATUSES, preview, status_counts

STATUS_COLOURS = {
    "pending": "#b0b0b0",
    "in_progress": "#1f77b4",
    "completed": "#2ca02c",
    "failed": "#d62728",
    "skipped": "#ff9f1c",
}
"""Fill colour of a task's marker in `draw_task_tree`, by status."""

INSTALL_HINT = 'pip install "replangraph[notebooks]"'


def _matplotlib():
    """matplotlib, imported on first use, or an ImportError that names the install command."""
    try:
        import matplotlib
        import matplotlib.figure
        import matplotlib.lines
        import matplotlib.patches
    except ImportError as exc:
        raise ImportError(
            f"replangraph.app.pictures draws with matplotlib, which is not installed: {INSTALL_HINT} "
            "(or pip install matplotlib)"
        ) from exc
    return matplotlib


def _axes(ax: Any, figsize: tuple[float, float], **figure: Any) -> tuple[Any, Any]:
    """``(figure, ax)``: the given axes and their figure, or a new figure (outside pyplot) with one axes."""
    mpl = _matplotlib()
    if ax is not None:
        return ax.figure, ax
    fig = mpl.figure.Figure(figsize=figsize, **figure)
    return fig, fig.add_subplot()


# --------------------------------------------------------------------------- the graph


def draw_graph(graph: Any, ax: Any = None, *, isolated: bool = True, fontsize: float = 9):
    """The graph as a layered picture: one rounded box per node (``__start__`` at the top,
    ``__end__`` at the bottom), an arrow per edge, conditional edges dashed, edges that point
    back up curved, a node's edge to itself a small loop out of the box's right edge and back.
    ``graph``: a compiled graph (``get_graph()`` is called) or the drawable graph itself.
    ``isolated``: draw nodes no edge reaches (error handlers) on a bottom row, in dotted boxes.
    Returns the matplotlib figure."""
    mpl = _matplotlib()
    from matplotlib.patches import FancyArrowPatch  # optional: matplotlib (the notebooks extra)
    from matplotlib.textpath import TextPath
    from matplotlib.transforms import offset_copy

    drawable = graph.get_graph() if hasattr(graph, "get_graph") else graph
    names = {key: getattr(node, "name", None) or str(key) for key, node in drawable.nodes.items()}
    edges = [(e.source, e.target, bool(e.conditional)) for e in drawable.edges]
    layout = graph_layout(list(names), [(s, t) for s, t, _ in edges], isolated=isolated)
    reached = graph_layers(list(names), [(s, t) for s, t, _ in edges])
    longest = max((len(names[n]) for n in layout), default=1)
    col = 0.075 * fontsize / 9 * longest + 0.5  # inches per unit of x: the widest label and a gap
    row = 0.85
    xs = [x for x, _ in layout.values()] or [0.0]
    ys = [y for _, y in layout.values()] or [0.0]
    width = (max(xs) - min(xs) + 1) * col + 0.6
    height = (max(ys) - min(ys) + 1) * row + 0.4
    fig, ax = _axes(ax, (width, height))
    ax.set_xlim(min(xs) * col - col / 2 - 0.3, max(xs) * col + col / 2 + 0.3)
    ax.set_ylim(min(ys) * row - row / 2, max(ys) * row + row / 2)
    ax.set_axis_off()

    pad = 0.45
    boxes, half_widths = {}, {}
    for node, (x, y) in layout.items():
        ends = node in (START, END)
        lone = node not in reached
        text = ax.text(
            x * col,
            y * row,
            names[node],
            ha="center",
            va="center",
            fontsize=fontsize,
            color="#666666" if lone else "black",
            zorder=3,
            bbox={
                "boxstyle": f"round,pad={pad}",
                "facecolor": "#eeeeee" if ends else ("white" if lone else "#dbe9f6"),
                "edgecolor": "#999999" if lone else "#3b6ea5",
                "linestyle": ":" if lone else "-",
            },
        )
        text.set_gid(f"node:{node}")
        boxes[node] = text.get_bbox_patch()
        # half the box's width in points: half the label's, plus the box's pad (a fraction of the font size)
        half_widths[node] = TextPath((0, 0), names[node], size=fontsize).get_extents().width / 2 + pad * fontsize

    for source, target, conditional in edges:
        if source not in layout or target not in layout:
            continue
        (x0, y0), (x1, y1) = layout[source], layout[target]
        style = {
            "arrowstyle": "-|>",
            "mutation_scale": 11,
            "linestyle": "--" if conditional else "-",
            "linewidth": 0.9,
            "color": "#4d4d4d",
            "alpha": 0.75,
            "patchA": boxes[source],
            "patchB": boxes[target],
            "shrinkA": 1,
            "shrinkB": 1,
            "zorder": 4,  # over the boxes: each box is drawn (and placed) before the arrows clip at its edge
        }
        if source == target:  # a loop out of the box's right edge, arcing outward and back in
            right = offset_copy(ax.transData, fig=fig, x=half_widths[source], units="points")
            arrow = FancyArrowPatch(
                (x0 * col, y0 * row + 0.12 * row),
                (x0 * col, y0 * row - 0.12 * row),
                transform=right,  # the box's centre moved to its right edge, in points: any axes, any dpi
                connectionstyle="arc3,rad=-1.6",  # bulging to the right (start above the end)
                **{**style, "patchA": None, "patchB": None},
            )
        else:
            bend = 0.0 if y1 == y0 - 1 else (0.3 if y1 >= y0 else 0.2)  # next row: straight; back up: curved
            arrow = FancyArrowPatch(
                (x0 * col, y0 * row), (x1 * col, y1 * row), connectionstyle=f"arc3,rad={bend}", **style
            )
        arrow.set_gid(f"edge:{source}->{target}")
        ax.add_patch(arrow)

    handles = [
        mpl.lines.Line2D([], [], color="#4d4d4d", linestyle="-", label="edge"),
        mpl.lines.Line2D([], [], color="#4d4d4d", linestyle="--", label="conditional edge"),
    ]
    ax.legend(handles=handles, loc="upper left", frameon=False, fontsize=fontsize - 1)
    return fig


# --------------------------------------------------------------------------- the task tree


def draw_task_tree(
    tasks: Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]],
    ax: Any = None,
    *,
    title: str | None = None,
    label_chars: int = 56,
    fontsize: float = 9,
    rows: int | None = None,
    depth: int | None = None,
    legend: bool = True,
):
    """The subtask queue as a tree (`task_tree_layout`): a marker per task coloured by status
    (`STATUS_COLOURS`, with a legend unless ``legend=False``), ``id  content`` beside it, an
    elbow from each parent to its dynamic tasks. ``tasks``: the state's ``tasks`` dict, or a
    list of tasks. ``rows``, ``depth``: room for at least this many tasks and split levels (so
    snapshots of a growing queue line up). Returns the figure."""
    mpl = _matplotlib()
    listed = ordered_tasks(tasks)
    by_id = {t["id"]: t for t in listed}
    layout = task_tree_layout(listed)
    depth = max([x for x, _ in layout.values()] + [depth or 0])
    height = max(len(layout), rows or 0, 1)
    fig, ax = _axes(ax, (8.5, 0.42 * height + 1.1), layout="constrained")
    ax.set_axis_off()
    ax.set_xlim(-0.4, depth + 8)
    ax.set_ylim(-height + 0.4, 0.6)
    if title:
        ax.set_title(title, fontsize=fontsize + 1, loc="left")
    if not layout:
        ax.text(0, 0, "(no tasks yet)", va="center", fontsize=fontsize, color="#666666")
    for task_id, (x, y) in layout.items():
        task = by_id[task_id]
        parent = task.get("parent_id")
        if parent in layout and parent != task_id:
            px, py = layout[parent]
            ax.plot([px, px, x], [py, y, y], color="#888888", linewidth=1, zorder=1)
        ax.plot(
            [x],
            [y],
            marker="o",
            markersize=11,
            markerfacecolor=STATUS_COLOURS.get(task.get("status", ""), "white"),
            markeredgecolor="#333333",
            linestyle="none",
            zorder=2,
            gid=f"task:{task_id}",
        )
        label = f"{task_id}  {preview(task.get('content', ''), label_chars)}"
        ax.text(x + 0.3, y, label, va="center", fontsize=fontsize, gid=f"label:{task_id}")
    handles = [
        mpl.lines.Line2D(
            [],
            [],
            marker="o",
            markersize=8,
            linestyle="none",
            markerfacecolor=STATUS_COLOURS[s],
            markeredgecolor="#333333",
            label=s.replace("_", " "),
        )
        for s in STATUSES
    ]
    if legend:
        ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(0, 0),
            ncol=len(handles),
            frameon=False,
            fontsize=fontsize - 1,
        )
    return fig


def draw_task_trees(
    snapshots: Sequence[Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]]],
    titles: Sequence[str] | None = None,
    *,
    label_chars: int = 56,
    fontsize: float = 9,
):
    """Several queue snapshots (say, after each step that added tasks) as trees stacked top to
    bottom, rows and split levels the same size in each, one legend under the last. ``titles``:
    one per snapshot (default: ``1.``, ``2.``, ... with each snapshot's count of tasks by status).
    Returns the figure."""
    mpl = _matplotlib()
    shots = [ordered_tasks(s) for s in snapshots]
    if titles is not None and len(titles) != len(shots):
        raise ValueError(f"{len(titles)} titles for {len(shots)} snapshots")
    heights = [max(len(s), 1) + 0.2 for s in shots] or [1.2]  # the same height per row in every snapshot
    depth = max((x for s in shots for x, _ in task_tree_layout(s).values()), default=0)
    fig = mpl.figure.Figure(figsize=(8.5, 0.4 * sum(heights) + 0.45 * len(heights) + 0.4), layout="constrained")
    axes = fig.subplots(len(heights), 1, squeeze=False, height_ratios=heights)[:, 0]
    for n, (ax, shot) in enumerate(zip(axes, shots, strict=False), 1):  # no snapshots: one empty axes
        if titles is not None:
            title = titles[n - 1]
        else:
            counts = status_counts({t["id"]: t for t in shot}) if shot else {}
            title = f"{n}. " + (", ".join(f"{c} {s.replace('_', ' ')}" for s, c in counts.items() if c) or "no tasks")
        draw_task_tree(
            shot,
            ax=ax,
            title=title,
            label_chars=label_chars,
            fontsize=fontsize,
            depth=int(depth),
            legend=n == len(shots),
        )
    return fig


# --------------------------------------------------------------------------- plots


def plot_window_tokens(
    series: Mapping[str, Sequence[int]],
    ax: Any = None,
    *,
    limit: int | None = None,
    threshold: int | None = None,
    compressions: Iterable[tuple[float, int, int]] = (),
    title: str | None = None,
):
    """Tokens of each model request, in call order: one line per label of ``series``, a dotted
    horizontal line at ``limit`` (the context window) and a dashed one at ``threshold`` (where
    compression starts: the context monitor's ``budget``) when given. ``compressions``:
    ``(call, tokens before, tokens after)`` for each compression, drawn at the call (1 for the
    first) whose request it shrank: an ``x`` at the tokens before, a dotted drop to the tokens
    after (a ``context_compressed`` event's ``tokens_before`` and ``tokens_after``). The y axis
    has thousands separators. Returns the figure."""
    from matplotlib.ticker import FuncFormatter  # optional: matplotlib (the notebooks extra)

    fig, ax = _axes(ax, (8.5, 3.6), layout="constrained")
    for label, values in series.items():
        ax.plot(range(1, len(values) + 1), list(values), marker="o", markersize=3, linewidth=1.2, label=label)
    if limit is not None:
        ax.axhline(limit, color="#d62728", linestyle=":", linewidth=1.5, label=f"window limit ({limit:,} tokens)")
    if threshold is not None:
        ax.axhline(
            threshold,
            color="#333333",
            linestyle="--",
            linewidth=1.1,
            label=f"compression starts ({threshold:,} tokens)",
        )
    drops = list(compressions)
    for n, (call, before, after) in enumerate(drops):
        ax.plot([call, call], [before, after], color="#555555", linestyle=":", linewidth=1.2, gid=f"compression:{n}")
    if drops:
        ax.plot(
            [call for call, _, _ in drops],
            [before for _, before, _ in drops],
            marker="x",
            markersize=6,
            linestyle="none",
            color="#555555",
            label="request before compression, dotted down to after",
            gid="compressions",
        )
    ax.set_xlabel("model call")
    ax.set_ylabel("tokens in the request")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def benchmark_chart(
    results: Mapping[str, Mapping[str, float]],
    ax: Any = None,
    *,
    ylabel: str = "items recovered",
    total: float | None = None,
    title: str | None = None,
    fmt: str = "{:g}",
):
    """Grouped bars: one group per key of ``results`` (a persona), one bar per agent in it, the
    value written on each bar with ``fmt``; a dashed line at ``total`` (N items) when given.
    ``results``: ``{group: {agent: value}}``; an agent missing from a group (or a NaN value)
    gets no bar, and ``n/a`` where its bar would be. Returns the figure."""
    fig, ax = _axes(ax, (8.5, 3.6), layout="constrained")
    groups = list(results)
    agents = list(dict.fromkeys(agent for values in results.values() for agent in values))
    width = 0.8 / max(len(agents), 1)
    for i, agent in enumerate(agents):
        xs = [g + (i - (len(agents) - 1) / 2) * width for g in range(len(groups))]
        values = [float(results[group].get(agent, math.nan)) for group in groups]
        bars = ax.bar(xs, values, width, label=agent)
        labels = ax.bar_label(bars, labels=[fmt.format(v) for v in values], fontsize=7, padding=1)
        for x, value, label in zip(xs, values, labels, strict=True):
            if math.isnan(value):  # bar_label leaves a NaN bar unlabelled: say so, on the baseline
                label.set_text("n/a")
                label.set_color("#666666")
                label.xy, label.xyann = (x, 0), (0, 1)
    if total is not None:
        ax.axhline(total, color="#555555", linestyle="--", linewidth=1, label=f"all {total:g}")
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return fig
