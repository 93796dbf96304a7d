"""The terminal summary of a report: the headline, one line per scenario, the likeliest cause."""

from __future__ import annotations

from repro.reports.fmt import here_figure, original_figure
from repro.reports.model import ClaimResult, Report, claims_summary


def claims_lines(claims: list[ClaimResult], summary: str) -> list[str]:
    """The claims, a line each: the verdict, the bound, this machine's and the original's."""
    lines = [f"claims: {summary}"]
    for c in claims:
        lines.append(
            f"  {c.id:<16} {c.verdict:<13} {c.bound}: here {here_figure(c)}, original "
            f"{original_figure(c)} ({c.match}); {c.reason}"
        )
    return lines


def render(report: Report) -> str:
    """A few lines for a terminal or a CI log (the claims first, when checked)."""
    lines = claims_lines(report.claims, claims_summary(report.claims)) if report.claims else []
    lines.append(report.summary)
    if report.different_hardware:
        lines.append(f"  different hardware: {'; '.join(report.different_hardware)}")
    if report.unknown_hardware:
        lines.append(f"  hardware unknown: {'; '.join(report.unknown_hardware)}")
    for s in report.scenarios:
        # the metric that decided the scenario's verdict, not merely the first unreproduced one
        worst = [
            m
            for m in s.metrics
            if m.judged and m.verdict == s.verdict and m.verdict != "reproduced"
        ]
        line = f"  {s.scenario:<12} {s.verdict}"
        never_valid = next(
            (
                m
                for m in s.metrics
                if m.metric == "validity" and m.original_value == m.replay_value == "INVALID"
            ),
            None,
        )
        if worst:
            line += f": {worst[0].label} {worst[0].reason}"
        elif never_valid is not None:  # "Server reproduced" said nothing of every run INVALID
            line += f": {never_valid.reason}"
        lines.append(line)
    for problem in report.integrity:
        lines.append(f"  integrity: {problem}")
    for n in report.not_compared:
        what = f"{n.scenario} {n.mode}" + (f" {n.metric}" if n.metric else "")
        lines.append(f"  not compared: {what} ({n.reason})")
    for d in report.settings[:5]:
        lines.append(f"  setting differs: {d.scope} {d.key}: {d.original} -> {d.replay}")
    if len(report.settings) > 5:
        lines.append(f"  ... {len(report.settings) - 5} more settings differ (see the report)")
    if report.drift:
        top = report.drift[0]
        lines.append(
            f"  likeliest cause of drift: {top.group} {top.key}: {top.original} -> {top.replay}"
        )
    return "\n".join(lines) + "\n"
