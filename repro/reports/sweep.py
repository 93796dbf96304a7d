"""Render a sweep: the Markdown table and a self-contained HTML page with the front plotted.

Input is sweep.json's content (plain data). The plot is matplotlib's SVG, inline: the first two
objectives as axes (logarithmic where the means span more than two decades), each point with its
95 % intervals as error bars (cut at 0), front points solid, joined and numbered, tied ones
half-tone, dominated and excluded ones faded.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from repro.reports import plots

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MEASURES = {
    "accuracy": (100.0, " %"),
    "peak_rss": (2.0**-20, " MiB"),
    "load_time": (1.0, " s"),
    "model_size": (2.0**-20, " MiB"),
}
ORDER = {"front": 0, "tied": 1, "dominated": 2, "excluded": 3, None: 4}


def _unit(label: str) -> tuple[float, str]:
    metric = label.split(":", 1)[1].split(".")[-1]
    if metric in MEASURES:
        return MEASURES[metric]
    return (1e-6, " ms") if metric.startswith("latency") else (1.0, "/s")


def fmt(label: str, m: dict[str, Any] | None) -> str:
    """A metric as `mean [lo, hi]` in its unit (a point measure: the value); sizes in the unit
    that suits them (a 2.8 kB model is not `0.002748 MiB`)."""
    if not m:
        return "-"
    scale, unit = _unit(label)
    if unit == " MiB" and abs(m["mean"]) < 2**20:
        scale, unit = (1e-3, " kB")
    if m.get("lo") is None or m["lo"] == m["hi"]:
        return f"{m['mean'] * scale:.4g}{unit}"
    return f"{m['mean'] * scale:.4g}{unit} [{m['lo'] * scale:.4g}, {m['hi'] * scale:.4g}]"


def _measured(state: dict[str, Any]) -> list[str]:
    return [k for k in MEASURES if any(k in (p.get("measures") or {}) for p in state["points"])]


def _summary(state: dict[str, Any]) -> str:
    constraints = state.get("constraints") or []
    return (
        f"{len(state['points'])} points, order shuffled with seed {state['seed']}, "
        + (
            f"{state['repeat']}-{state.get('max_rounds')} rounds each (until decided)"
            if state.get("until_decided")
            else f"{state['repeat']} rounds each"
        )
        + "; a point is dominated only when another beats it on "
        "every objective beyond both 95 % intervals; `tied`: beaten on the means only"
        + (f"; `excluded`: breaks {' or '.join(constraints)}." if constraints else ".")
    )


def _rows(state: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    params = [p["path"] for p in state["params"]]
    measured = _measured(state)
    out = []
    for p in sorted(state["points"], key=lambda p: (ORDER.get(p.get("front")), p["index"])):
        cells = [str(p["index"]), *(str(p["values"].get(k)) for k in params)]
        cells += [fmt(o, p["metrics"].get(o)) for o in state["objectives"]]
        measures = p.get("measures") or {}
        cells += [
            fmt(f"min:{k}", {"mean": measures[k]}) if k in measures else "-" for k in measured
        ]
        cells += [p.get("front") or "-", p["status"]]
        out.append((p, cells))
    return out


def _head(state: dict[str, Any]) -> list[str]:
    params = [p["path"] for p in state["params"]]
    return ["point", *params, *state["objectives"], *_measured(state), "front", "status"]


def markdown(state: dict[str, Any]) -> str:
    """The sweep as a Markdown table, front first."""
    head = _head(state)
    lines = [
        f"# Sweep {state['id']} of {state['spec_name']}",
        "",
        _summary(state),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    lines += ["| " + " | ".join(cells) + " |" for _, cells in _rows(state)]
    failed = [p for p in state["points"] if p["status"] == "failed"]
    if failed:
        lines += ["", "Failed points:", ""]
        lines += [f"- point {p['index']} {p['values']}: {p.get('error') or '-'}" for p in failed]
    return "\n".join(lines) + "\n"


def page(state: dict[str, Any]) -> str:
    """A self-contained HTML page: the summary, the plot (two objectives), the table."""
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in _head(state))
    body = "".join(
        f'<tr class="{e(p.get("front") or "")}">'
        + "".join(f"<td>{e(c)}</td>" for c in cells)
        + "</tr>"
        for p, cells in _rows(state)
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>Sweep {e(state['id'])}</title><style>"
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}"
        "tr.dominated,tr.excluded{color:#999}tr.front{font-weight:bold}"
        "</style></head><body>"
        f"<h1>Sweep {e(state['id'])} of {e(state['spec_name'])}</h1>"
        f"<p>{e(_summary(state))}</p>{_svg(state)}"
        f"<table><tr>{head}</tr>{body}</table></body></html>\n"
    )


#: how each kind of point is drawn: colour, opacity, legend label
STYLE = {
    "front": ("#1f5fa8", 1.0, "front"),
    "tied": ("#7fa6d6", 1.0, "tied: beaten on the means only"),
    "dominated": (plots.GREY, plots.FADED, "dominated"),
    "excluded": (plots.RED, plots.FADED, "excluded by a constraint"),
    "": (plots.GREY, plots.FADED, "not judged"),
}


def _svg(state: dict[str, Any]) -> str:
    objectives = state["objectives"]
    if len(objectives) < 2:
        return "<p>(one objective: the table ranks the points)</p>"
    xo, yo = objectives[0], objectives[1]
    pts = [
        (p, p["metrics"][xo], p["metrics"][yo])
        for p in state["points"]
        if xo in p.get("metrics", {}) and yo in p.get("metrics", {})
    ]
    if not pts:
        return "<p>(no point measured both objectives yet)</p>"
    title = f"Sweep {state['id']}: {xo} vs {yo}"
    xs, x_cut = _axis(xo, [x for _, x, _ in pts])
    ys, y_cut = _axis(yo, [y for _, _, y in pts])
    kinds = [p.get("front") or "" for p, _, _ in pts]

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        logx, logy = plots.scales(ax, [m for m, _, _ in xs], [m for m, _, _ in ys])
        front = sorted((xs[i][0], ys[i][0]) for i, k in enumerate(kinds) if k == "front")
        if len(front) > 1:
            ax.plot(*zip(*front, strict=True), color=STYLE["front"][0], linewidth=1, zorder=3)
        for kind, (colour, alpha, label) in STYLE.items():
            chosen = [i for i, k in enumerate(kinds) if k == kind]
            if not chosen:
                continue
            x, y = [xs[i] for i in chosen], [ys[i] for i in chosen]
            ax.errorbar(
                [m for m, _, _ in x],
                [m for m, _, _ in y],
                xerr=[[m - lo for m, lo, _ in x], [hi - m for m, _, hi in x]],
                yerr=[[m - lo for m, lo, _ in y], [hi - m for m, _, hi in y]],
                fmt="o",
                color=colour,
                alpha=alpha,
                markersize=6,
                elinewidth=1,
                capsize=2,
                label=f"{label} ({len(chosen)})",
                zorder=4 if kind == "front" else 2,
            )
            for i in chosen if kind in ("front", "tied") else []:
                ax.annotate(
                    str(pts[i][0]["index"]),
                    (xs[i][0], ys[i][0]),
                    xytext=(5, 5),
                    textcoords="offset points",
                    fontsize=8,
                    zorder=5,
                )
        for label, log, set_label in ((xo, logx, ax.set_xlabel), (yo, logy, ax.set_ylabel)):
            unit = _unit(label)[1].strip()
            set_label(plots.axis_label(label, "per second" if unit == "/s" else unit, log))
        ax.set_title(title)
        if len(set(kinds)) > 1:
            ax.legend(loc="best")
        cut = "; cut at 0 where they reach below it" if x_cut or y_cut else ""
        fig.supxlabel(
            f"numbers: the points of the table; error bars: 95 % intervals{cut}", fontsize=7.5
        )

    return plots.svg(draw, title=title, width_in=7.0, height_in=4.6)


Bar = tuple[float, float, float]  # mean, lo, hi


def _axis(label: str, metrics: list[dict[str, Any]]) -> tuple[list[Bar], bool]:
    """Each point's (mean, lo, hi) in the objective's unit, the interval cut at 0: every
    objective is a rate, a time, a size or a share, so an interval below 0 (Student's t over
    few rounds) holds no possible value there; and whether one was cut."""
    scale, _ = _unit(label)
    out: list[Bar] = []
    cut = False
    for m in metrics:
        mean = m["mean"] * scale
        lo = mean if m.get("lo") is None else m["lo"] * scale
        hi = mean if m.get("hi") is None else m["hi"] * scale
        cut = cut or lo < 0
        out.append((mean, max(lo, 0.0), hi))
    return out, cut
