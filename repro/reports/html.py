"""report.html: self-contained (inline CSS, and SVG plots drawn by `svg_plot`), for a person."""

from __future__ import annotations

import html
import math

from repro.reports import plots
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
from repro.reports.svg_plot import CHAR_W, LEGEND_ROW, Key, Plot, Scale, legend_rows, log_range

CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;width:100%;font-size:14px;margin:.5em 0 1.5em}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
.reproduced{color:#1a7f37}.not-reproduced{color:#cf222e}.inconclusive{color:#9a6700}
.not-counted{color:#57606a}
.verdict{font-size:1.3em;font-weight:bold} svg.plot{border:1px solid #eee}
.plots{display:flex;gap:1em;flex-wrap:wrap} code{font-size:13px}
"""
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


#: the class of a verdict that does not decide its scenario (an information row's, an
#: adjusted comparison the metric's verdict overrides): never coloured as a verdict
NOT_COUNTED = "not-counted"


def _cls(verdict: str) -> str:
    return {
        "reproduced after machine adjustment": "reproduced",
        "inconclusive: machine unstable": "inconclusive",
        "inconclusive: machine busy": "inconclusive",
        "not comparable: different hardware": "inconclusive",
        "not comparable: hardware unknown": "inconclusive",
        "not comparable: different benchmarks": "inconclusive",
    }.get(verdict, verdict.replace(" ", "-"))


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
    plot = Plot(title, 460, 300, x=log_range(xs), y=Scale(0.0, 1.02))
    plot.axes(
        xlabel="SUT-side latency per query (log scale)",
        ylabel="fraction of queries at or below",
        xticks=plots.latency,
        yticks=lambda v: f"{v:g}",
    )
    for name, points in curves.items():
        plot.line(
            [x for x, _ in points],
            [f for _, f in points],
            steps=True,
            colour=CDF_COLOURS.get(name, plots.GREY),
        )
    if len(curves) > 1:
        keys: list[Key] = [(name, CDF_COLOURS.get(name, plots.GREY), "line") for name in curves]
        plot.legend(keys, x=plot.width - plot.right - 150, y=plot.py(0.1))
    return plot.svg()


#: the tolerance band's colour in the bars plot
BAND = "#e6f4ea"


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
    names = [plots.shorten(m.label, 38) for m in rows]
    deltas = [delta(m.delta_rel) for m in rows]
    colours = [COLOURS[m.verdict] if m.judged else plots.GREY for m in rows]
    shown = dict.fromkeys(m.verdict if m.judged else "for information" for m in rows)
    keys: list[Key] = [(v, COLOURS.get(v, plots.GREY), "point") for v in shown] + [
        ("tolerance", BAND, "band")
    ]
    width = 640.0
    left = 16 + CHAR_W * max(len(n) for n in names)
    lines = legend_rows([k[0] for k in keys], width - left)
    plot = Plot(
        title,
        width,
        84 + 26 * len(rows) + LEGEND_ROW * lines,
        x=Scale(-span, span),
        y=Scale(-0.7, len(rows) - 0.3),
        left=left,
        right=16 + CHAR_W * max(len(d) for d in deltas),
        bottom=54 + LEGEND_ROW * lines,
    )
    ys = list(range(len(rows)))[::-1]  # the first metric on top
    for y, m in zip(ys, rows, strict=True):
        if m.tolerance:
            plot.band(-m.tolerance, m.tolerance, y - 0.35, y + 0.35, colour=BAND)
    plot.axes(
        xlabel="relative difference, replay / original - 1 (%)",
        ylabel="",
        xticks=lambda v: f"{v * 100:.0f}%",
        yticks=None,  # the span is 17 % or more
    )
    plot.segment(0, -0.7, 0, len(rows) - 0.3, colour="#777", width=0.8)
    for y, m, name, text, c in zip(ys, rows, names, deltas, colours, strict=True):
        if m.ci:
            lo, hi = (max(-span, min(span, v)) for v in m.ci)
            plot.segment(lo, y, hi, y, colour=c)
        plot.point(m.delta_rel or 0.0, y, colour=c)
        plot.text(plot.left - 7, plot.py(y) + 3, name, size=9.5, anchor="end", colour=c)
        plot.text(width - plot.right + 7, plot.py(y) + 3, text, size=9.5, anchor="start", colour=c)
    plot.legend(keys, x=plot.left, y=plot.height - 12 - LEGEND_ROW * (lines - 1))
    return plot.svg()


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
