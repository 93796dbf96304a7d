"""report.html: self-contained (inline CSS, and SVG plots from `report_plots`), for a person."""

from __future__ import annotations

import html

from repro.reports.fmt import (
    CLAIM_MARK,
    MATCH_MARK,
    VERDICT_MARK,
    adjusted_verdict,
    delta,
    drift_lines,
    here_figure,
    interval,
    original_figure,
    runs,
    shared_clauses,
    speed_index,
    value,
)
from repro.reports.model import ClaimResult, Report, claims_summary
from repro.reports.profile_html import render_profile
from repro.reports.report_plots import bars_svg, cdf_svg

CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;width:100%;font-size:14px;margin:.5em 0 1.5em}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
.reproduced{color:#1a7f37}.not-reproduced{color:#cf222e}.inconclusive{color:#9a6700}
.not-counted{color:#57606a}
.verdict{font-size:1.3em;font-weight:bold} svg.plot{border:1px solid #eee}
.plots{display:flex;gap:1em;flex-wrap:wrap} code{font-size:13px}
"""
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
        reasons, said_once = shared_clauses([m.reason for m in s.metrics])
        for m, reason in zip(s.metrics, reasons, strict=True):
            out.append(
                f"<tr><td>{e(m.label)}</td><td>{e(value(m.original_value, m.unit))}"
                f"{e(runs(m.original))}</td><td>{e(value(m.replay_value, m.unit))}"
                f"{e(runs(m.replay))}</td><td>{e(delta(m.delta_rel))}</td>"
                f"<td>{e(interval(m.ci))}</td>"
                f"<td class='{_cls(m.verdict) if m.judged else NOT_COUNTED}'>{e(m.verdict)}"
                f"{'' if m.judged else ' <small>(for information)</small>'}</td>"
                f"<td>{e(reason)} <small>({e(m.method)})</small></td></tr>"
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
        if said_once:  # a clause every row shared, said once
            out.append("<ol class='notes'>")
            out += [f"<li>[note {k}] {e(c)}</li>" for k, c in enumerate(said_once, start=1)]
            out.append("</ol>")
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
        for d in drift_lines(report.drift)[:60]:
            what = f"{e(d.group)}: <code>{e(d.key)}</code>"
            if d.flags:  # the flags that differ, one row a person opens to read them
                listed = ", ".join(f"<code>{e(n)}</code> ({e(side)})" for n, side in d.flags)
                what = f"<details><summary>{e(d.group)}: {e(d.key)}</summary>{listed}</details>"
            out.append(
                f"<tr><td>{e(d.level)}</td><td>{what}</td>"
                f"<td>{e(d.original)}</td><td>{e(d.replay)}</td></tr>"
            )
        out.append("</table>")
    else:
        out.append("<p>No difference between the two environments' fingerprints.</p>")
    out.append(
        f"<p><small>repro {e(report.repro_version)}, {e(report.generated_utc)}</small>"
        "</p></body></html>\n"
    )
    return "\n".join(out)
