"""report.md: for a pull request or a CI log."""

from __future__ import annotations

from repro.profiles.diff import share_text
from repro.reports.fmt import (
    CLAIM_MARK,
    MATCH_MARK,
    VERDICT_MARK,
    adjusted_verdict,
    delta,
    drift_lines,
    here_figure,
    interval,
    micros,
    original_figure,
    profile_side,
    runs,
    shared_clauses,
    speed_index,
    value,
)
from repro.reports.model import ClaimResult, Report, claims_summary


def render(report: Report) -> str:
    t = report.tolerances
    lines = [
        f"# Reproducibility report: {text(report.spec_name)}",
        "",
        # the claims first: they are what `replay --claims` asked about, and they are judged
        # also where the absolute figures are not comparable (other hardware)
        *(
            [
                *claims_lines(report.claims, claims_summary(report.claims)),
                "",
                "## Absolute figures against the original",
                "",
            ]
            if report.claims
            else []
        ),
        f"**{VERDICT_MARK[report.verdict]}** — {text(report.summary)}",
        "",
        f"- original: {code(report.original.path)} ({report.original.kind}, run "
        f"{code(report.original.run_id)})",
        *[
            f"- replay: {code(r.path)} (run {code(r.run_id)}, environment "
            f"{text(str(r.environment.get('manager')))})"
            for r in report.replays
        ],
        f"- tolerances: throughput ±{t['throughput_rel']:.0%}, latency ±{t['latency_rel']:.0%}, "
        f"accuracy ≥ {t['accuracy_ratio']:.0%} of the original; "
        f"{report.confidence:.0%} confidence intervals",
        *[f"- note: {text(n)}" for n in report.notes],
        *(
            [f"- **different hardware**: {text('; '.join(report.different_hardware))}"]
            if report.different_hardware
            else []
        ),
        *(
            [f"- **hardware unknown**: {text('; '.join(report.unknown_hardware))}"]
            if report.unknown_hardware
            else []
        ),
    ]
    for s in report.scenarios:
        lines += [
            "",
            f"## {s.scenario} — {VERDICT_MARK[s.verdict]}",
            "",
            f"| metric | original | replay | Δ | {report.confidence:.0%} CI of Δ | verdict | why |",
            "|---|---|---|---|---|---|---|",
        ]
        reasons, said_once = shared_clauses([m.reason for m in s.metrics])
        for m, reason in zip(s.metrics, reasons, strict=True):
            lines.append(
                f"| {cell(m.label)} | {cell(value(m.original_value, m.unit))}{runs(m.original)} "
                f"| {cell(value(m.replay_value, m.unit))}{runs(m.replay)} | {delta(m.delta_rel)} "
                f"| {interval(m.ci)} | {_mark(m.verdict, m.judged)} | {cell(reason)} "
                f"({m.method}) |"
            )
            if m.adjusted is not None:
                a = m.adjusted
                lines.append(
                    f"| ↳ adjusted for the machine (replay's machine {delta(a.machine_delta_rel)}"
                    f" by the {speed_index(a.speed_index)}) | | | {delta(a.delta_rel)} "
                    f"| {interval(a.ci)} "
                    f"| {adjusted_verdict(m)} | {cell(a.note) + '; ' if a.note else ''}probe "
                    f"spread: original {a.probe_spread_original:.1%}, "
                    f"replay {a.probe_spread_replay:.1%} ({a.method}) |"
                )
        if said_once:  # a clause every row shared, said once
            lines.append("")
            lines += [f"- [note {k}] {text(c)}" for k, c in enumerate(said_once, start=1)]
        if s.prediction_agreement is not None:
            lines += [
                "",
                f"Prediction agreement (accuracy logs): "
                f"{100 * s.prediction_agreement:.2f} % of samples identical.",
            ]
    if report.not_compared:
        lines += [
            "",
            "## Not compared (the verdict does not cover these)",
            "",
            "| scenario | mode | metric | why |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {n.scenario} | {n.mode} | {cell(n.metric or 'all')} | {cell(n.reason)} |"
            for n in report.not_compared
        ]
    if report.integrity:
        lines += ["", "## Integrity: files changed since their run", ""]
        lines += [f"- {text(problem)}" for problem in report.integrity]
    if report.nodes:
        lines += node_lines(report)
    if report.profile is not None:
        lines += profile_lines(report)
    lines += ["", "## Settings that differ", ""]
    if report.settings:
        lines += ["| where | setting | original | replay |", "|---|---|---|---|"]
        lines += [
            f"| {cell(d.scope)} | {code(d.key)} | {cell(str(d.original))} | {cell(str(d.replay))} |"
            for d in report.settings
        ]
    else:
        lines.append("The replay ran with the original's settings.")
    lines += ["", "## Environment drift (likeliest causes first)", ""]
    if report.drift:
        lines += ["| impact | what | original | replay |", "|---|---|---|---|"]
        drift = drift_lines(report.drift)
        for d in drift[:40]:
            what = f"{d.group}: {d.key}" if d.flags else f"{d.group}: {code(d.key)}"
            lines.append(f"| {d.level} | {what} | {cell(d.original)} | {cell(d.replay)} |")
        if len(drift) > 40:
            lines.append(f"| | … {len(drift) - 40} more in report.json | | |")
    else:
        lines.append("No difference between the two environments' fingerprints.")
    lines += ["", f"_repro {report.repro_version}, {report.generated_utc}_", ""]
    return "\n".join(lines)


def claims_lines(claims: list[ClaimResult], summary: str) -> list[str]:
    """`## Claims`: one row per claim (the claim, its bound, the original's figure and this
    machine's, the verdicts), then each claim's reasons."""
    lines = [
        "## Claims",
        "",
        f"**{text(summary)}**",
        "",
        "| claim | bound | original | this machine | verdict | vs the original |",
        "|---|---|---|---|---|---|",
    ]
    for c in claims:
        lines.append(
            f"| {code(c.id)}: {cell(c.statement)} | {cell(c.bound)} | {cell(original_figure(c))} "
            f"| {cell(here_figure(c))} | {CLAIM_MARK[c.verdict]} | {MATCH_MARK[c.match]} |"
        )
    lines.append("")
    for c in claims:
        lines.append(
            f"- {code(c.id)}: {text(c.reason)} ({c.method}; {c.rounds} round(s), "
            f"{c.elapsed_s:.0f} s; {text(c.stopped)}); vs the original: {text(c.match_reason)}"
            + (f"; the original ran on {text(c.original_machine)}" if c.original_machine else "")
        )
    return lines


def _mark(verdict: str, judged: bool) -> str:
    """The verdict's mark; a metric outside the scenario's verdict says so."""
    return VERDICT_MARK[verdict] if judged else f"({verdict}; for information)"


def profile_lines(report: Report) -> list[str]:
    """Where the time went (each side's top layers) and the profile diff."""
    p = report.profile
    assert p is not None
    lines = ["", f"## Where the time went: layer profiles ({p.scenario})", ""]
    lines += [f"- note: {text(n)}" for n in p.notes]
    for name, side in (("original", p.original), ("replay", p.replay)):
        if side is None:
            continue
        lines.append(f"- {text(profile_side(name, side))}; {code(side.path)}")
    for name, side in (("original", p.original), ("replay", p.replay)):
        if side is None:
            continue
        lines += [
            "",
            f"Top layers, {name}:",
            "",
            "| layer | op | share | median per call |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {code(r.name)} | {cell(r.op_type)} | {r.share:.1%} | {r.median_ns / 1e3:.1f} us |"
            for r in side.top
        ]
    d = p.diff
    if d is not None:
        lines += [
            "",
            f"### Profile diff: inference time per sample {d.original_ns / 1e3:.1f} -> "
            f"{d.replay_ns / 1e3:.1f} us ({delta(d.delta_rel)})",
            "",
            f"**{d.headline()}.**",
            "",
            "By kind: "
            + ", ".join(
                f"{k.kind} {k.delta_ns / 1e3:+.1f} us"
                + (f" ({share_text(k.share_of_change)})" if k.share_of_change is not None else "")
                for k in d.kinds[:6]
            )
            + ".",
            "",
            f"Matched {d.matched_by_name} layers by name and {d.matched_by_position} by kind and "
            f"position; {d.original_only} only in the original, {d.replay_only} only in the "
            "replay (fused or split on the other side). Largest changes first:",
            "",
            "| layer | kind | matched | original | replay | change | x | share of the change |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for c in d.changes[:15]:
            name = code(c.name) + (f" ↔ {code(c.replay_name)}" if c.replay_name else "")
            lines.append(
                f"| {name} | {c.kind} | {c.match} | {micros(c.original_ns)} "
                f"| {micros(c.replay_ns)} "
                f"| {c.delta_ns / 1e3:+.1f} us | "
                + (f"{c.ratio:.2f}" if c.ratio is not None else "-")
                + " | "
                + share_text(c.share_of_change)
                + " |"
            )
    return lines


def node_lines(report: Report) -> list[str]:
    """Each node of a dispatched replay on its own."""
    keys = sorted({k for n in report.nodes for k in n.metrics})
    lines = [
        "",
        "## Nodes (the replay was dispatched)",
        "",
        "| node | parts | status | CPU | " + " | ".join(keys) + " | hardware vs the original |",
        "|---|---|---|---|" + "---|" * len(keys) + "---|",
    ]
    for n in report.nodes:
        cells = [value(n.metrics[k], n.units.get(k, "")) if k in n.metrics else "-" for k in keys]
        lines.append(
            f"| {cell(n.node)} | {', '.join(map(str, n.parts))} | {', '.join(n.statuses)} "
            f"| {cell(n.cpu_model or '?')} x{n.logical_cpus or '?'} | "
            + " | ".join(cells)
            + f" | {cell('; '.join(n.hardware_vs_original) or 'same')} |"
        )
    return lines


def text(value: str) -> str:
    """Text from outside repro (a published tree's names, paths, a system description) as one
    line of Markdown that renders as that text: no HTML, no link, no heading, no code span."""
    out = _one_line(value).replace("\\", "\\\\").replace("<", "&lt;")
    for ch in "[]`|":
        out = out.replace(ch, "\\" + ch)
    return out


def cell(value: str) -> str:
    """Text that stays inside one Markdown table cell and renders no HTML nor a link."""
    return text(value)


def code(text: str) -> str:
    """A name as inline code in a table cell: a pipe is escaped (GFM tables need it inside code
    too), a backtick cannot close the span."""
    inner = _one_line(text).replace("|", "\\|").replace("`", "'")
    return f"`{inner}`"


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")
