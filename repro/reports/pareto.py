"""Render a Pareto recommendation: Markdown, CSV and a self-contained HTML page with a plot.

The plot is matplotlib's SVG, inline (no script): the first two objectives as axes
(logarithmic where the values span more than two decades), the front's systems solid, joined
and named, the dominated ones faded. With one objective the page shows the ranking only.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from repro.reports import markdown as md
from repro.reports import plots
from repro.reports.table import spreadsheet_safe

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

Objective = tuple[str, bool]  # (column, maximize)
SHOWN = (
    "division",
    "submitter",
    "system",
    "status",
    "processor",
    "accelerator",
    "accelerator_count",
    "benchmark",
    "scenario",
)


def _columns(objectives: Sequence[Objective], frame: pd.DataFrame) -> list[str]:
    shown = [c for c in SHOWN if c in frame] + [c for c, _ in objectives]
    if "energy_j" in shown and "energy_unit" in frame:  # J per sample, token or query
        shown.insert(shown.index("energy_j") + 1, "energy_unit")
    return shown


def markdown(
    objectives: Sequence[Objective],
    front: pd.DataFrame,
    dominated: pd.DataFrame,
    missing: Sequence[str],
    excluded: Sequence[str],
    notes: Sequence[str] = (),
) -> str:
    cols = _columns(objectives, front)
    lines = [
        "# Recommendation",
        "",
        _summary(objectives, front, dominated),
        "",
        *[f"- {md.text(n)}" for n in notes],
        *([""] if notes else []),
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    lines += [
        "| " + " | ".join(md.cell(_cell(row[c])) for c in cols) + " |"
        for _, row in front.iterrows()
    ]
    for title, items in _lists(missing, excluded):
        lines += ["", f"## {title}", ""] + [f"- {md.text(m)}" for m in items]
    return "\n".join(lines) + "\n"


def _summary(objectives: Sequence[Objective], front: pd.DataFrame, dominated: pd.DataFrame) -> str:
    goal = ", ".join(f"{'max' if up else 'min'} {c}" for c, up in objectives)
    return (
        f"Objectives: {goal}. {len(front)} system(s) on the Pareto front (no other system is "
        f"at least as good on every objective and better on one), {len(dominated)} dominated."
    )


def _lists(missing: Sequence[str], excluded: Sequence[str]) -> list[tuple[str, Sequence[str]]]:
    """The rows left out of the comparison, under their headings (empty lists left out)."""
    return [
        (title, items)
        for title, items in (
            ("Not judged: an objective is missing", missing),
            ("Excluded by a constraint", excluded),
        )
        if items
    ]


def csv(objectives: Sequence[Objective], front: pd.DataFrame, dominated: pd.DataFrame) -> str:
    import pandas as pd

    both = pd.concat([front.assign(pareto=True), dominated.assign(pareto=False)])
    cols = [*_columns(objectives, both), "pareto"]
    text: str = spreadsheet_safe(both[cols]).to_csv(index=False)
    return text


def page(
    objectives: Sequence[Objective],
    front: pd.DataFrame,
    dominated: pd.DataFrame,
    missing: Sequence[str],
    excluded: Sequence[str],
    notes: Sequence[str] = (),
) -> str:
    body = _svg(objectives, front, dominated) if len(objectives) >= 2 and len(front) else ""
    cols = _columns(objectives, front)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(r[c]))}</td>" for c in cols) + "</tr>"
        for _, r in front.iterrows()
    )
    lists = "".join(
        f"<h2>{title}</h2><ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"
        for title, items in _lists(missing, excluded)
    )
    first = html.escape(_summary(objectives, front, dominated))
    if notes:
        first += "</p><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul><p>"
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Recommendation</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
        f"<h1>Recommendation</h1><p>{first}</p>{body}<table><tr>"
        + "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        + f"</tr>{rows}</table>{lists}</body></html>\n"
    )


#: the unit of a column the table does not give one for: by its whole name, else its ending
_UNITS = {
    "cost": "USD",
    "_usd": "USD",
    "_w": "W",
    "_j": "J",
    "_gb": "GB",
    "_gbs": "GB/s",
    "_s": "s",
}


def unit_of(column: str, frame: pd.DataFrame) -> str:
    """A column's unit: the table's own for the MLPerf figure and the energy, else by its
    name; empty where none is known."""
    own = {"throughput": "unit", "value": "unit", "energy_j": "energy_unit"}.get(column)
    if own and own in frame:
        return ", ".join(sorted({str(u) for u in frame[own].dropna()}))
    for ending, unit in _UNITS.items():
        if column == ending or (ending.startswith("_") and column.endswith(ending)):
            return unit
    return ""


def _svg(objectives: Sequence[Objective], front: pd.DataFrame, dominated: pd.DataFrame) -> str:
    """The first two objectives as axes (a log scale where the values span more than two
    decades); the front solid, joined and named, the dominated points faded."""
    import pandas as pd

    (xc, xmax), (yc, ymax) = objectives[0], objectives[1]
    both = pd.concat([front, dominated])
    title = f"Pareto front: {xc} vs {yc}"
    fx, fy = front[xc].astype(float).tolist(), front[yc].astype(float).tolist()
    dx, dy = dominated[xc].astype(float).tolist(), dominated[yc].astype(float).tolist()

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        ticks = {c: plots.latency if c == "latency_ns" else plots.number for c in (xc, yc)}
        logx, logy = plots.scales(ax, fx + dx, fy + dy, xlabel=ticks[xc], ylabel=ticks[yc])
        if dx:
            ax.scatter(
                dx,
                dy,
                s=30,
                color=plots.BLUE,
                alpha=plots.FADED,
                linewidths=0,
                label=f"dominated ({len(dx)})",
                zorder=2,
            )
        order = sorted(range(len(fx)), key=lambda i: (fx[i], fy[i]))
        ax.plot(
            [fx[i] for i in order],
            [fy[i] for i in order],
            "-o",
            color=plots.BLUE,
            markersize=6,
            linewidth=1.5,
            label=f"Pareto front ({len(fx)})",
            zorder=3,
        )
        for n, i in enumerate(order):
            row = front.iloc[i]
            plots.name_point(
                ax,
                plots.shorten(f"{row.get('submitter')}/{row.get('system')}", 32),
                fx[i],
                fy[i],
                n,
            )
        for column, up, log, set_label in (
            (xc, xmax, logx, ax.set_xlabel),
            (yc, ymax, logy, ax.set_ylabel),
        ):
            better = "higher is better" if up else "lower is better"
            unit = "" if column == "latency_ns" else unit_of(column, both)
            set_label(plots.axis_label(f"{column}, {better}", unit, log))
        ax.set_title(title)
        if dx:
            ax.legend(loc="best")

    return plots.svg(draw, title=title, width_in=7.5, height_in=4.8)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    return "" if value is None else str(value)
