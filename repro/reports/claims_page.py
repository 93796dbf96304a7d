"""`repro claim check`'s pages: claims.md and the terminal summary (report.json's Claims section
is rendered by the report's own renderers)."""

from __future__ import annotations

from repro.reports import markdown
from repro.reports import text as terminal
from repro.reports.model import ClaimsCheck


def render_markdown(check: ClaimsCheck) -> str:
    """claims.md."""
    lines = [
        f"# Claims: {markdown.text(check.spec_name)}",
        "",
        f"- spec id: `{check.spec_id}`",
        f"- this machine: {markdown.text(check.machine)}",
        "",
        *markdown.claims_lines(check.claims, check.summary),
        "",
        f"_repro {check.repro_version}, {check.generated_utc}_",
        "",
    ]
    return "\n".join(lines)


def render_text(check: ClaimsCheck) -> str:
    """The terminal summary."""
    return "\n".join(terminal.claims_lines(check.claims, check.summary)) + "\n"
