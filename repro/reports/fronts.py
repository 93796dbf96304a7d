"""The page `repro model fit` writes beside the model: per held-out fold, the true Pareto front
against the front of the predictions, as a table and a plot.

One panel per fold, on shared axes (logarithmic where the values span more than two decades):
the second objective across, the target up. The true front's rows are solid and joined per
(benchmark, scenario) at their true values; the predicted front's are open squares, dashed, at
their predicted values; a false member (on the predicted front, not on the true one) is
crossed out at its true value; the other held-out rows are faded.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from repro.reports import plots

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from repro.mlperf.hardware_fronts import FrontRecovery

_COLUMNS = 3  # panels per row


def page(
    members: pd.DataFrame,
    fronts: Sequence[FrontRecovery],
    *,
    target: str,
    target_unit: str,
    second: str,
    second_unit: str,
) -> str:
    """A self-contained HTML page: what is compared, the per-fold table, the plot."""
    e = html.escape
    title = f"True vs predicted Pareto front per held-out fold: {target} vs {second}"
    rows = "".join(
        f"<tr><td>{r.fold}</td><td>{r.groups}</td><td>{r.true_members}</td><td>{r.found}</td>"
        f"<td>{r.false_members}</td></tr>"
        for r in fronts
    )
    total = [sum(getattr(r, k) for r in fronts) for k in ("true_members", "found", "false_members")]
    plot = _svg(
        members,
        fronts,
        target=target,
        target_unit=target_unit,
        second=second,
        second_unit=second_unit,
        title=title,
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{e(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px}</style>"
        f"</head><body><h1>{e(title)}</h1><p>In each held-out fold and each (benchmark, "
        f"scenario), the true front is the rows no other beats on {e(target)} and "
        f"{e(second)}; the predicted front is the same with the cross-validated predictions "
        "in place of the true target. Found: true members the predicted front has; false: "
        "predicted members the true front lacks.</p>"
        "<table><tr><th>fold</th><th>(benchmark, scenario) groups</th><th>true front</th>"
        f"<th>found</th><th>false</th></tr>{rows}<tr><th>all</th><td></td><td>{total[0]}</td>"
        f"<td>{total[1]}</td><td>{total[2]}</td></tr></table>{plot}</body></html>\n"
    )


def _svg(
    members: pd.DataFrame,
    fronts: Sequence[FrontRecovery],
    *,
    target: str,
    target_unit: str,
    second: str,
    second_unit: str,
    title: str,
) -> str:
    if not len(members):
        return "<p>(no held-out row has both objectives: nothing to plot)</p>"
    xs = members["second"].astype(float).tolist()
    ys = [*members["true"].astype(float), *members["predicted"].astype(float)]
    ncols = min(_COLUMNS, len(fronts))
    nrows = math.ceil(len(fronts) / ncols)

    def draw(fig: Figure) -> None:
        from matplotlib.lines import Line2D

        axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False).flatten()
        logx, logy = plots.scales(axes[0], xs, ys, decades=2.0)  # narrow panels: fewer ticks
        for i, (ax, r) in enumerate(zip(axes, fronts, strict=False)):
            _panel(ax, members[members["fold"] == r.fold])
            if i + ncols >= len(fronts):  # nothing below it: it shows the x ticks' labels
                ax.xaxis.set_tick_params(labelbottom=True)
            ax.set_title(
                f"fold {r.fold}: {r.found} of {r.true_members} found, {r.false_members} false",
                fontsize=9,
            )
        for ax in axes[len(fronts) :]:
            ax.set_axis_off()
        direction, _, column = second.partition(":")
        better = "higher is better" if direction == "max" else "lower is better"
        fig.supxlabel(plots.axis_label(f"{column}, {better}", second_unit, logx), fontsize=9)
        fig.supylabel(plots.axis_label(target, target_unit, logy), fontsize=9)
        fig.suptitle(title, fontsize=10)
        handles = [
            Line2D([], [], color=plots.BLUE, marker="o", label="true front (true values)"),
            Line2D(
                [],
                [],
                color=plots.ORANGE,
                marker="s",
                markerfacecolor="none",
                linestyle="--",
                label="predicted front (predicted values)",
            ),
            Line2D(
                [],
                [],
                color=plots.RED,
                marker="x",
                linestyle="none",
                label="false member (its true value)",
            ),
            Line2D(
                [],
                [],
                color=plots.GREY,
                marker="o",
                linestyle="none",
                alpha=plots.FADED,
                label="other held-out rows",
            ),
        ]
        if len(axes) > len(fronts):  # an empty panel: the legend goes there
            axes[-1].legend(handles=handles, loc="center", frameon=False)
        else:
            fig.legend(handles=handles, loc="outside right upper", frameon=False)

    legend_in = 0.0 if ncols * nrows > len(fronts) else 2.4
    return plots.svg(
        draw, title=title, width_in=3.4 * ncols + 0.6 + legend_in, height_in=2.9 * nrows + 1.0
    )


def _panel(ax: Axes, fold: pd.DataFrame) -> None:
    """One fold: each (benchmark, scenario)'s true front joined, its predicted front dashed."""
    on_true, on_predicted = fold["on_true"].astype(bool), fold["on_predicted"].astype(bool)
    rest = fold[~on_true & ~on_predicted]
    ax.scatter(
        rest["second"],
        rest["true"],
        s=14,
        color=plots.GREY,
        alpha=plots.FADED,
        linewidths=0,
        zorder=1,
    )
    for _, group in fold.groupby(["benchmark", "scenario"]):
        truth = group[group["on_true"].astype(bool)].sort_values("second")
        guess = group[group["on_predicted"].astype(bool)].sort_values("second")
        ax.plot(
            truth["second"],
            truth["true"],
            "-o",
            color=plots.BLUE,
            markersize=4,
            linewidth=1.2,
            zorder=3,
        )
        ax.plot(
            guess["second"],
            guess["predicted"],
            "--s",
            color=plots.ORANGE,
            markersize=5,
            markerfacecolor="none",
            linewidth=1,
            zorder=4,
        )
    false = fold[on_predicted & ~on_true]
    ax.scatter(false["second"], false["true"], s=30, marker="x", color=plots.RED, zorder=5)
