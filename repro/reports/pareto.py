"""Render a Pareto recommendation: Markdown, CSV and a self-contained HTML page with a plot.

The plot is inline SVG (no plotting library, no script): the first two objectives as axes
(logarithmic where the values span more than two decades), the front's systems solid and named,
the dominated ones faded. With one objective the page shows the ranking only.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from repro.reports import markdown as md
from repro.reports.table import spreadsheet_safe

if TYPE_CHECKING:
    import pandas as pd

Objective = tuple[str, bool]  # (column, maximize)
SHOWN = ("division", "submitter", "system", "status", "processor", "accelerator",
         "accelerator_count", "benchmark", "scenario")  # fmt: skip


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


def _svg(objectives: Sequence[Objective], front: pd.DataFrame, dominated: pd.DataFrame) -> str:
    (xc, _), (yc, _) = objectives[0], objectives[1]
    w, h, pad = 720, 460, 70
    points = [(float(r[xc]), float(r[yc]), True, r) for _, r in front.iterrows()]
    points += [(float(r[xc]), float(r[yc]), False, r) for _, r in dominated.iterrows()]
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    fx, fy = _scale(xs, pad, w - pad), _scale(ys, h - pad, pad)
    out = [f"<svg width='{w}' height='{h}' role='img' aria-label='Pareto front'>",
           f"<rect x='0' y='0' width='{w}' height='{h}' fill='white' stroke='#ccc'/>",
           f"<text x='{w / 2}' y='{h - 20}' text-anchor='middle'>{html.escape(xc)}"
           f"{' (log)' if _log(xs) else ''}</text>",
           f"<text x='20' y='{h / 2}' transform='rotate(-90 20 {h / 2})' text-anchor='middle'>"
           f"{html.escape(yc)}{' (log)' if _log(ys) else ''}</text>"]  # fmt: skip
    for v in (min(xs), max(xs)):
        out.append(f"<text x='{fx(v):.1f}' y='{h - pad + 18}' font-size='11' "
                   f"text-anchor='middle'>{v:.4g}</text>")  # fmt: skip
    for v in (min(ys), max(ys)):
        out.append(f"<text x='{pad - 6}' y='{fy(v) + 4:.1f}' font-size='11' "
                   f"text-anchor='end'>{v:.4g}</text>")  # fmt: skip
    front_xy = sorted((fx(x), fy(y)) for x, y, on, _ in points if on)
    if len(front_xy) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in front_xy)
        out.append(f"<polyline points='{path}' fill='none' stroke='#1f77b4'/>")
    for x, y, on, row in points:
        name = html.escape(f"{row.get('submitter')}/{row.get('system')}")
        opacity = 1.0 if on else 0.25
        out.append(
            f"<circle cx='{fx(x):.1f}' cy='{fy(y):.1f}' r='5' fill='#1f77b4' "
            f"fill-opacity='{opacity}'><title>{name}: {x:g}, {y:g}</title></circle>"
        )
        if on:
            out.append(
                f"<text x='{fx(x) + 7:.1f}' y='{fy(y) - 7:.1f}' font-size='11'>{name}</text>"
            )
    out.append("</svg>")
    return "".join(out)


def _log(values: Sequence[float]) -> bool:
    positive = [v for v in values if v > 0]
    return len(positive) == len(values) and max(positive) / min(positive) > 100


def _scale(values: Sequence[float], lo: float, hi: float) -> Callable[[float], float]:
    """Value -> pixel, linear or logarithmic."""
    log = _log(values)

    def f(v: float) -> float:
        return math.log10(v) if log else v

    vs = [f(v) for v in values]
    a, b = min(vs), max(vs)
    span = (b - a) or 1.0
    return lambda v: lo + (f(v) - a) / span * (hi - lo)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    return "" if value is None else str(value)
