"""report.html's plots, per scenario: each metric's relative difference with its interval
against its tolerance (`bars_svg`), and the latency CDFs of original and replay (`cdf_svg`).

matplotlib draws them through `plots` (imported only when a plot is drawn), and they place their
axes themselves (`plots.svg(..., layout=False)`): `repro report` draws a page of them at
start-up, and constrained layout would draw each twice (bench/start_speed.py).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from repro.reports import plots
from repro.reports.fmt import delta
from repro.reports.model import CdfPoints, MetricResult

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: a verdict's colour (report.html's CSS classes' colours), and each CDF's
COLOURS = {
    "reproduced": "#1a7f37",
    "reproduced after machine adjustment": "#1a7f37",
    "not reproduced": "#cf222e",
    "inconclusive": "#9a6700",
    "inconclusive: machine unstable": "#9a6700",
    "inconclusive: machine busy": "#9a6700",
    "not comparable: different hardware": "#57606a",
    "not comparable: hardware unknown": "#57606a",
    "not comparable: different benchmarks": "#57606a",
}
CDF_COLOURS = {"original": "#0969da", "replay": "#cf222e"}

#: the font sizes (points) of tick and axis labels and of a title (the `font.size` and
#: `axes.titlesize` that `plots.svg` draws with)
LABEL_PT, TITLE_PT = 9.0, 10.0


def cdf_svg(cdf: dict[str, CdfPoints], title: str) -> str:
    """Latency CDFs of original and replay on a log-scaled time axis."""
    curves = {
        name: [
            (x, f)
            for x, f in zip(c.latency_ns, c.fraction, strict=True)
            if x > 0 and math.isfinite(x) and math.isfinite(f)
        ]
        for name, c in cdf.items()
    }
    xs = [x for points in curves.values() for x, _ in points]
    if not xs:
        return ""

    def draw(fig: Figure) -> None:
        from matplotlib.ticker import NullLocator

        ax = fig.add_subplot()
        for name, points in curves.items():
            ax.plot(
                [x for x, _ in points],
                [f for _, f in points],
                drawstyle="steps-post",
                color=CDF_COLOURS.get(name, plots.GREY),
                linewidth=1.8,
                label=name,
            )
        plots.log_scale(ax, "x", xs, plots.latency)
        # NOTE: a minor tick costs as much CPU as a labelled one (a plot's CPU is `repro
        # report`'s start-up), and shows no value
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("SUT-side latency per query (log scale)")
        ax.set_ylabel("fraction of queries at or below")
        # NOTE: y given, or matplotlib measures the axes at each draw to lift the title
        ax.set_title(title, y=1.0)
        if len(curves) > 1:
            ax.legend(loc="lower right")
        yticks, line = plots.text_box_in(plots.tick_labels(ax.yaxis), size_pt=LABEL_PT)
        xticks = plots.text_box_in(plots.tick_labels(ax.xaxis), size_pt=LABEL_PT)[0]
        plots.place(
            fig,
            left_in=(plots.PAD_PT + plots.LABELPAD_PT + plots.TICK_PT) / 72 + line + yticks,
            right_in=plots.PAD_PT / 72 + xticks / 2,  # the last tick's label, at the edge
            top_in=_title_in(),
            bottom_in=_x_axis_in(),
        )

    return plots.svg(draw, title=title, width_in=4.6, height_in=3.0, layout=False)


def _title_in() -> float:
    """The room (inches) above a plot's axes for its title."""
    return (plots.PAD_PT + plots.TITLEPAD_PT) / 72 + plots.text_box_in([], size_pt=TITLE_PT)[1]


def _x_axis_in() -> float:
    """The room (inches) below a plot's axes for its x axis: the ticks, their labels and the
    axis label."""
    line = plots.text_box_in([], size_pt=LABEL_PT)[1]
    return (plots.PAD_PT + plots.LABELPAD_PT + plots.TICK_PT) / 72 + 2 * line


#: the tolerance band's colour in the bars plot, and its rows' labels' distance from the axes
#: (points)
BAND, ROW_LABEL_PT = "#e6f4ea", 5.0


def bars_svg(metrics: list[MetricResult], title: str) -> str:
    """Each metric's relative difference with its interval, against the tolerance band; the
    metrics that do not decide the verdict (for information) grey."""
    rows = [
        m
        for m in metrics
        if m.delta_rel is not None
        and math.isfinite(m.delta_rel)
        and all(math.isfinite(v) for v in m.ci or [])
    ]
    if not rows:
        return ""
    span = max([0.15] + [abs(m.delta_rel or 0) for m in rows] + [m.tolerance or 0 for m in rows])
    # NOTE: an interval may reach far past the points (one round of a noisy metric); the axis
    # follows it up to three times the points' span, beyond that the line runs off the edge
    reach = max([abs(v) for m in rows for v in (m.ci or [])] or [0.0])
    span = 1.15 * max(span, min(reach, 3 * span))

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        _bars(ax, rows, span)
        ax.set_title(title, y=1.0)
        legend_in = _bars_legend(fig, rows)
        _place_bars(fig, ax, rows, legend_in)

    # the height is a placeholder: `_place_bars` sizes the figure to its rows and its legend
    return plots.svg(draw, title=title, width_in=6.4, height_in=3.0, layout=False)


def _colour(m: MetricResult) -> str:
    """A metric's colour: its verdict's, grey where it is shown for information."""
    return COLOURS[m.verdict] if m.judged else plots.GREY


def _bars(ax: Axes, rows: list[MetricResult], span: float) -> None:
    """A row per metric, the first on top: its tolerance band, its interval, its difference;
    its name on the left and its difference on the right, in its colour."""
    from matplotlib.ticker import PercentFormatter

    ys = list(range(len(rows)))[::-1]
    for y, m, name in zip(ys, rows, _names(rows), strict=True):
        if m.tolerance:
            ax.barh(y, 2 * m.tolerance, left=-m.tolerance, height=0.7, color=BAND, zorder=1)
        if m.ci:
            ax.plot(m.ci, [y, y], color=_colour(m), linewidth=2, zorder=2)
        ax.plot([m.delta_rel or 0.0], [y], "o", color=_colour(m), markersize=6, zorder=3)
        # NOTE: text beside the axes, not tick labels: a tick (its marks, grid line and
        # labels) costs a plot ~1-2 ms of CPU, and a second y axis for the differences ~30 ms
        for x, text, side in ((0, name, "right"), (1, delta(m.delta_rel), "left")):
            ax.annotate(
                text,
                (x, y),
                xycoords=("axes fraction", "data"),
                xytext=(-ROW_LABEL_PT if x == 0 else ROW_LABEL_PT, 0),
                textcoords="offset points",
                ha=side,
                va="center",
                color=_colour(m),
                fontsize=LABEL_PT,
            )
    ax.axvline(0, color="#777", linewidth=0.8, zorder=1)
    ax.set_xlim(-span, span)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_yticks([])
    ax.xaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
    ax.set_xlabel("relative difference, replay / original - 1 (%)")


def _names(rows: list[MetricResult]) -> list[str]:
    return [plots.shorten(m.label, 38) for m in rows]


def _bars_legend(fig: Figure, rows: list[MetricResult]) -> float:
    """The verdicts shown and the tolerance band, below the plot; its height (inches)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    shown = dict.fromkeys(m.verdict if m.judged else "for information" for m in rows)
    handles: list[Artist] = [
        Line2D([], [], marker="o", linewidth=2, color=COLOURS.get(v, plots.GREY), label=v)
        for v in shown
    ]
    handles.append(Patch(color=BAND, label="tolerance"))
    width_in = fig.get_figwidth() - 2 * plots.PAD_PT / 72
    columns, height_in = plots.legend_box_in([*shown, "tolerance"], width_in=width_in)
    fig.legend(handles=handles, loc="lower center", ncols=columns, frameon=False)
    return height_in


def _place_bars(fig: Figure, ax: Axes, rows: list[MetricResult], legend_in: float) -> None:
    """The figure's height (0.3 in a row) and the axes' margins: the names on the left, the
    differences on the right, the title, the x axis and the legend below; x ticks as many as
    fit (1-2-5 steps)."""
    from matplotlib.ticker import MaxNLocator

    names = plots.text_box_in(_names(rows), size_pt=LABEL_PT)[0]
    deltas = plots.text_box_in([delta(m.delta_rel) for m in rows], size_pt=LABEL_PT)[0]
    left = (plots.PAD_PT + ROW_LABEL_PT) / 72 + names
    right = (plots.PAD_PT + ROW_LABEL_PT) / 72 + deltas
    # a tick per one and a half of the widest label's width (the axis' ends')
    end = ax.xaxis.get_major_formatter()(ax.get_xlim()[0])
    widest = plots.text_box_in([end], size_pt=LABEL_PT)[0]
    ticks = int((fig.get_figwidth() - left - right) / (1.5 * widest))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=max(2, ticks), steps=[1, 2, 5, 10]))
    overhang = (
        plots.PAD_PT / 72 + plots.text_box_in(plots.tick_labels(ax.xaxis), size_pt=LABEL_PT)[0] / 2
    )
    top = _title_in()
    bottom = _x_axis_in() + (plots.LEGEND_EDGE_PT + plots.PAD_PT) / 72 + legend_in
    fig.set_size_inches(fig.get_figwidth(), top + bottom + 0.3 * (len(rows) + 1))
    plots.place(
        fig,
        left_in=max(left, overhang),
        right_in=max(right, overhang),
        top_in=top,
        bottom_in=bottom,
    )
