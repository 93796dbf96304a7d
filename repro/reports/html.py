"""report.html: self-contained (inline CSS and SVG), for a person."""

from __future__ import annotations

import html
import math

from repro.reports.fmt import (
    CLAIM_MARK,
    MATCH_MARK,
    VERDICT_MARK,
    adjusted_verdict,
    delta,
    here_figure,
    interval,
    original_figure,
    runs,
    speed_index,
    value,
)
from repro.reports.model import CdfPoints, ClaimResult, MetricResult, Report, claims_summary
from repro.reports.profile_html import render_profile

CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;width:100%;font-size:14px;margin:.5em 0 1.5em}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
.reproduced{color:#1a7f37}.not-reproduced{color:#cf222e}.inconclusive{color:#9a6700}
.not-counted{color:#57606a}
.verdict{font-size:1.3em;font-weight:bold} svg{background:#fafafa;border:1px solid #eee}
.plots{display:flex;gap:1em;flex-wrap:wrap} code{font-size:13px}
"""
W, H, PAD = 460, 260, 45
COLOURS = {
    "reproduced": "#1a7f37",
    "reproduced after machine adjustment": "#1a7f37",
    "not reproduced": "#cf222e",
    "inconclusive": "#9a6700",
    "inconclusive: machine unstable": "#9a6700",
    "not comparable: different hardware": "#57606a",
    "not comparable: hardware unknown": "#57606a",
}


#: the class of a verdict that does not decide its scenario (an information row's, an
#: adjusted comparison the metric's verdict overrides): never coloured as a verdict
NOT_COUNTED = "not-counted"


def _cls(verdict: str) -> str:
    return {
        "reproduced after machine adjustment": "reproduced",
        "inconclusive: machine unstable": "inconclusive",
        "not comparable: different hardware": "inconclusive",
        "not comparable: hardware unknown": "inconclusive",
    }.get(verdict, verdict.replace(" ", "-"))


def cdf_svg(cdf: dict[str, CdfPoints], title: str) -> str:
    """Latency CDFs of original and replay on a log-scaled time axis."""
    xs = [x for c in cdf.values() for x in c.latency_ns if x > 0]
    if not xs:
        return ""
    lo, hi = math.log10(min(xs)), math.log10(max(xs))
    hi = hi if hi > lo else lo + 1

    def px(x: float) -> float:
        return PAD + (math.log10(x) - lo) / (hi - lo) * (W - 2 * PAD)

    def py(f: float) -> float:
        return H - PAD + f * (2 * PAD - H)

    parts = [
        f'<svg width="{W}" height="{H}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13">{html.escape(title)}</text>',
    ]
    for exp in range(math.floor(lo), math.ceil(hi) + 1):
        x = px(10**exp)
        if PAD <= x <= W - PAD:
            label = value(10.0**exp, "ns")
            parts.append(
                f'<line x1="{x:.1f}" y1="{PAD}" x2="{x:.1f}" y2="{H - PAD}" '
                f'stroke="#ddd"/><text x="{x:.1f}" y="{H - PAD + 15}" font-size="10" '
                f'text-anchor="middle">{label}</text>'
            )
    for f in (0, 0.5, 0.9, 1.0):
        parts.append(
            f'<text x="{PAD - 5}" y="{py(f) + 3:.1f}" font-size="10" text-anchor="end">{f:g}</text>'
        )
    colours = {"original": "#0969da", "replay": "#cf222e"}
    for i, (name, c) in enumerate(cdf.items()):
        pts = " ".join(
            f"{px(x):.1f},{py(f):.1f}"
            for x, f in zip(c.latency_ns, c.fraction, strict=True)
            if x > 0
        )
        parts.append(
            f'<polyline fill="none" stroke="{colours.get(name, "#555")}" '
            f'stroke-width="2" points="{pts}"/>'
        )
        parts.append(
            f'<text x="{W - PAD}" y="{H - PAD - 10 - 14 * i}" font-size="11" text-anchor="end" '
            f'fill="{colours.get(name, "#555")}">{name}</text>'
        )
    parts.append(
        f'<text x="{W / 2}" y="{H - 8}" font-size="11" text-anchor="middle">'
        "SUT-side latency per query (log scale)</text></svg>"
    )
    return "".join(parts)


def bars_svg(metrics: list[MetricResult], title: str) -> str:
    """Each metric's relative difference with its interval, against the tolerance band."""
    rows = [m for m in metrics if m.delta_rel is not None]
    if not rows:
        return ""
    span = max(
        [0.15]
        + [abs(m.delta_rel or 0) for m in rows]
        + [abs(v) for m in rows for v in (m.ci or [])]
        + [m.tolerance or 0 for m in rows]
    )
    span *= 1.15
    height = PAD + 26 * len(rows) + 20
    mid = 250 + (W + 150 - 250) / 2

    def px(d: float) -> float:
        return mid + d / span * (W + 150 - 250) / 2

    parts = [
        f'<svg width="{W + 150}" height="{height}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="{(W + 150) / 2}" y="18" text-anchor="middle" font-size="13">'
        f"{html.escape(title)}</text>",
        f'<line x1="{mid}" y1="{PAD - 15}" x2="{mid}" y2="{height - 10}" stroke="#999"/>',
    ]
    for i, m in enumerate(rows):
        y = PAD + 26 * i
        tol = m.tolerance or 0
        parts.append(
            f'<rect x="{px(-tol):.1f}" y="{y - 8}" width="{px(tol) - px(-tol):.1f}" '
            f'height="16" fill="#e6f4ea"/>'
        )
        parts.append(
            f'<text x="245" y="{y + 4}" font-size="11" text-anchor="end">'
            f"{html.escape(m.label[:38])}</text>"
        )
        c = COLOURS[m.verdict]
        if m.ci:
            parts.append(
                f'<line x1="{px(m.ci[0]):.1f}" y1="{y}" x2="{px(m.ci[1]):.1f}" '
                f'y2="{y}" stroke="{c}" stroke-width="2"/>'
            )
        parts.append(f'<circle cx="{px(m.delta_rel or 0):.1f}" cy="{y}" r="4" fill="{c}"/>')
        parts.append(
            f'<text x="{W + 145}" y="{y + 4}" font-size="11" text-anchor="end" '
            f'fill="{c}">{delta(m.delta_rel)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def claims_html(claims: list[ClaimResult], summary: str) -> list[str]:
    """The Claims section: one row per claim, with its verdicts and why."""
    e = html.escape
    out = [
        f"<h2>Claims</h2><p><b>{e(summary)}</b></p>",
        "<table><tr><th>claim</th><th>bound</th><th>original</th><th>this machine</th>"
        "<th>verdict</th><th>vs the original</th><th>why</th></tr>",
    ]
    for c in claims:
        cls = {"holds": "reproduced", "does not hold": "not-reproduced"}.get(
            c.verdict, "inconclusive"
        )
        out.append(
            f"<tr><td><b>{e(c.id)}</b>: {e(c.statement)}</td><td>{e(c.bound)}</td>"
            f"<td>{e(original_figure(c))}</td><td>{e(here_figure(c))}</td>"
            f"<td class='{cls}'>{e(CLAIM_MARK[c.verdict])}</td><td>{e(MATCH_MARK[c.match])}</td>"
            f"<td>{e(c.reason)}; vs the original: {e(c.match_reason)} <small>({c.rounds} "
            f"round(s), {c.elapsed_s:.0f} s)</small></td></tr>"
        )
    out.append("</table>")
    return out


def render(report: Report) -> str:
    e = html.escape
    out = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>repro report: {e(report.spec_name)}</title><style>{CSS}</style></head><body>",
        f"<h1>Reproducibility report: {e(report.spec_name)}</h1>",
        *(
            [
                *claims_html(report.claims, claims_summary(report.claims)),
                "<h2>Absolute figures against the original</h2>",
            ]
            if report.claims
            else []
        ),
        f"<p class='verdict {_cls(report.verdict)}'>{e(VERDICT_MARK[report.verdict])}</p>",
        f"<p>{e(report.summary)}</p>",
        "<ul>",
        f"<li>original: <code>{e(report.original.path)}</code> ({e(report.original.kind)}, "
        f"run <code>{e(report.original.run_id)}</code>)</li>",
    ]
    out += [
        f"<li>replay: <code>{e(r.path)}</code> (run <code>{e(r.run_id)}</code>)</li>"
        for r in report.replays
    ]
    out += [f"<li>note: {e(n)}</li>" for n in report.notes]
    out.append(
        "</ul><p>Green bands: tolerances; lines: confidence intervals of the difference.</p>"
    )
    for s in report.scenarios:
        out.append(
            f"<h2>{e(s.scenario)} — <span class='{_cls(s.verdict)}'>"
            f"{e(VERDICT_MARK[s.verdict])}</span></h2><div class='plots'>"
        )
        out.append(bars_svg(s.metrics, f"{s.scenario}: replay vs original"))
        if s.cdf:
            out.append(cdf_svg(s.cdf, f"{s.scenario}: latency CDF"))
        out.append(
            "</div><table><tr><th>metric</th><th>original</th><th>replay</th><th>Δ</th>"
            "<th>CI of Δ</th><th>verdict</th><th>why</th></tr>"
        )
        for m in s.metrics:
            out.append(
                f"<tr><td>{e(m.label)}</td><td>{e(value(m.original_value, m.unit))}"
                f"{e(runs(m.original))}</td><td>{e(value(m.replay_value, m.unit))}"
                f"{e(runs(m.replay))}</td><td>{e(delta(m.delta_rel))}</td>"
                f"<td>{e(interval(m.ci))}</td>"
                f"<td class='{_cls(m.verdict) if m.judged else NOT_COUNTED}'>{e(m.verdict)}"
                f"{'' if m.judged else ' <small>(for information)</small>'}</td>"
                f"<td>{e(m.reason)} <small>({e(m.method)})</small></td></tr>"
            )
            if m.adjusted is not None:
                a = m.adjusted
                out.append(
                    f"<tr><td>↳ adjusted for the machine (replay's machine "
                    f"{e(delta(a.machine_delta_rel))} by the {e(speed_index(a.speed_index))})"
                    f"</td><td></td><td></td>"
                    f"<td>{e(delta(a.delta_rel))}</td><td>{e(interval(a.ci))}</td>"
                    f"<td class='{_cls(a.verdict) if m.judged and not a.note else NOT_COUNTED}'>"
                    f"{e(adjusted_verdict(m))}</td><td>{e(a.note) + '; ' if a.note else ''}probe "
                    f"spread: original {a.probe_spread_original:.1%}, replay "
                    f"{a.probe_spread_replay:.1%}</td></tr>"
                )
        out.append("</table>")
        if s.prediction_agreement is not None:
            out.append(
                f"<p>Prediction agreement: {100 * s.prediction_agreement:.2f} % of "
                "samples identical.</p>"
            )
    if report.not_compared:
        out.append("<h2>Not compared (the verdict does not cover these)</h2>")
        out.append("<table><tr><th>scenario</th><th>mode</th><th>metric</th><th>why</th></tr>")
        out += [
            f"<tr><td>{e(n.scenario)}</td><td>{e(n.mode)}</td><td>{e(n.metric or 'all')}</td>"
            f"<td>{e(n.reason)}</td></tr>"
            for n in report.not_compared
        ]
        out.append("</table>")
    if report.integrity:
        out.append("<h2>Integrity: files changed since their run</h2><ul>")
        out += [f"<li>{e(problem)}</li>" for problem in report.integrity]
        out.append("</ul>")
    if report.nodes:
        keys = sorted({k for n in report.nodes for k in n.metrics})
        out.append("<h2>Nodes (the replay was dispatched)</h2><table><tr><th>node</th>")
        out.append(
            "<th>parts</th><th>status</th><th>CPU</th>"
            + "".join(f"<th>{e(k)}</th>" for k in keys)
            + "<th>hardware vs the original</th></tr>"
        )
        for n in report.nodes:
            cells = "".join(
                f"<td>{e(value(n.metrics[k], n.units.get(k, '')))}</td>"
                if k in n.metrics
                else "<td>-</td>"
                for k in keys
            )
            out.append(
                f"<tr><td>{e(n.node)}</td><td>{e(', '.join(map(str, n.parts)))}</td>"
                f"<td>{e(', '.join(n.statuses))}</td>"
                f"<td>{e(n.cpu_model or '?')} x{n.logical_cpus or '?'}</td>{cells}"
                f"<td>{e('; '.join(n.hardware_vs_original) or 'same')}</td></tr>"
            )
        out.append("</table>")
    if report.profile is not None:
        out += render_profile(report.profile)
    out.append("<h2>Settings that differ</h2>")
    if report.settings:
        out.append("<table><tr><th>where</th><th>setting</th><th>original</th><th>replay</th></tr>")
        out += [
            f"<tr><td>{e(d.scope)}</td><td><code>{e(d.key)}</code></td>"
            f"<td>{e(str(d.original))}</td><td>{e(str(d.replay))}</td></tr>"
            for d in report.settings
        ]
        out.append("</table>")
    else:
        out.append("<p>The replay ran with the original's settings.</p>")
    out.append("<h2>Environment drift (likeliest causes first)</h2>")
    if report.drift:
        out.append("<table><tr><th>impact</th><th>what</th><th>original</th><th>replay</th></tr>")
        for d in report.drift[:60]:
            out.append(
                f"<tr><td>{e(d.level)}</td><td>{e(d.group)}: <code>{e(d.key)}</code></td>"
                f"<td>{e(str(d.original))}</td><td>{e(str(d.replay))}</td></tr>"
            )
        out.append("</table>")
    else:
        out.append("<p>No difference between the two environments' fingerprints.</p>")
    out.append(
        f"<p><small>repro {e(report.repro_version)}, {e(report.generated_utc)}</small>"
        "</p></body></html>\n"
    )
    return "\n".join(out)
