"""Render a sweep: the Markdown table and a self-contained HTML page with the front plotted.

Input is sweep.json's content (plain data). The plot is inline SVG: the first two objectives as
axes, each point with its 95 % intervals as error bars, front points solid and numbered, tied
ones half-tone, dominated and excluded ones faded.
"""

from __future__ import annotations

import html
from typing import Any

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
    """A metric as `mean [lo, hi]` in its unit (a point measure: the value)."""
    if not m:
        return "-"
    scale, unit = _unit(label)
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
    w, h, pad = 560, 360, 60
    xs = [v for _, x, _ in pts for v in (x["lo"], x["hi"])]
    ys = [v for _, _, y in pts for v in (y["lo"], y["hi"])]

    def scale(values: list[float], lo: float, hi: float) -> Any:
        a, b = min(values), max(values)
        span = (b - a) or abs(a) or 1.0
        a, b = a - 0.05 * span, b + 0.05 * span
        return lambda v: lo + (v - a) / (b - a) * (hi - lo)

    sx, sy = scale(xs, pad, w - 20), scale(ys, h - pad, 20)
    style = {"front": "#1f5fa8", "tied": "#7fa6d6", "dominated": "#ccc", "excluded": "#e0b0b0"}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img">',
        f'<line x1="{pad}" y1="{h - pad}" x2="{w - 20}" y2="{h - pad}" stroke="#333"/>',
        f'<line x1="{pad}" y1="{h - pad}" x2="{pad}" y2="20" stroke="#333"/>',
        f'<text x="{w / 2}" y="{h - 20}" text-anchor="middle" font-size="12">'
        f"{html.escape(xo)}</text>",
        f'<text x="15" y="{h / 2}" font-size="12" transform="rotate(-90 15 {h / 2})" '
        f'text-anchor="middle">{html.escape(yo)}</text>',
    ]
    for label, values, axis in ((xo, xs, "x"), (yo, ys, "y")):
        scale_, unit = _unit(label)
        for v in (min(values), max(values)):
            text = html.escape(f"{v * scale_:.3g}{unit}")
            if axis == "x":
                parts.append(
                    f'<text x="{sx(v):.1f}" y="{h - pad + 15}" font-size="10" '
                    f'text-anchor="middle">{text}</text>'
                )
            else:
                parts.append(
                    f'<text x="{pad - 4}" y="{sy(v):.1f}" font-size="10" '
                    f'text-anchor="end">{text}</text>'
                )
    for p, x, y in sorted(pts, key=lambda t: -ORDER.get(t[0].get("front"), 4)):
        color = style.get(p.get("front") or "", "#ccc")
        cx, cy = sx(x["mean"]), sy(y["mean"])
        parts += [
            f'<line x1="{sx(x["lo"]):.1f}" y1="{cy:.1f}" x2="{sx(x["hi"]):.1f}" y2="{cy:.1f}" '
            f'stroke="{color}"/>',
            f'<line x1="{cx:.1f}" y1="{sy(y["lo"]):.1f}" x2="{cx:.1f}" y2="{sy(y["hi"]):.1f}" '
            f'stroke="{color}"/>',
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{color}">'
            f"<title>point {p['index']}: {html.escape(str(p['values']))}</title></circle>",
        ]
        if p.get("front") in ("front", "tied"):
            parts.append(
                f'<text x="{cx + 6:.1f}" y="{cy - 6:.1f}" font-size="11">{p["index"]}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)
