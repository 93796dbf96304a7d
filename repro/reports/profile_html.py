"""The report.html section of layer profiles: top layers per side, a bar chart of the largest
layer changes and the profile diff's table."""

from __future__ import annotations

import html

from repro.profiles.diff import LayerChange
from repro.reports.fmt import delta, micros, profile_side
from repro.reports.model import ProfileSection

_BARS = 12
_W, _LABEL, _ROW = 720, 260, 22


def changes_svg(changes: list[LayerChange]) -> str:
    """Horizontal bars: each layer's change of time per sample (red slower, green faster)."""
    rows = changes[:_BARS]
    if not rows:
        return ""
    span = max(abs(c.delta_ns) for c in rows) or 1.0
    mid = _LABEL + (_W - _LABEL) / 2
    half = (_W - _LABEL) / 2 - 60
    height = 30 + _ROW * len(rows)
    parts = [
        f'<svg width="{_W}" height="{height}" role="img" aria-label="largest layer changes">',
        f'<text x="{_W / 2}" y="16" text-anchor="middle" font-size="13">'
        "largest changes of time per sample, by layer</text>",
        f'<line x1="{mid}" y1="22" x2="{mid}" y2="{height}" stroke="#999"/>',
    ]
    for i, c in enumerate(rows):
        y = 30 + _ROW * i
        length = abs(c.delta_ns) / span * half
        x = mid if c.delta_ns >= 0 else mid - length
        colour = "#cf222e" if c.delta_ns > 0 else "#1a7f37"
        label = c.name + (f" / {c.replay_name}" if c.replay_name else "")
        parts.append(
            f'<text x="{_LABEL - 6}" y="{y + 12}" font-size="11" text-anchor="end">'
            f"{html.escape(label[:40])}</text>"
        )
        parts.append(
            f'<rect x="{x:.1f}" y="{y + 2}" width="{max(length, 1):.1f}" height="14" '
            f'fill="{colour}"/>'
        )
        tx = mid + length + 4 if c.delta_ns >= 0 else mid - length - 4
        anchor = "start" if c.delta_ns >= 0 else "end"
        parts.append(
            f'<text x="{tx:.1f}" y="{y + 13}" font-size="11" text-anchor="{anchor}">'
            f"{c.delta_ns / 1e3:+.1f} us</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def render_profile(p: ProfileSection) -> list[str]:
    e = html.escape
    out = [f"<h2>Where the time went: layer profiles ({e(p.scenario)})</h2><ul>"]
    out += [f"<li>note: {e(n)}</li>" for n in p.notes]
    for name, side in (("original", p.original), ("replay", p.replay)):
        if side is None:
            continue
        out.append(f"<li>{e(profile_side(name, side))}</li>")
    out.append("</ul><div class='plots'>")
    for name, side in (("original", p.original), ("replay", p.replay)):
        if side is None:
            continue
        out.append(
            f"<table style='width:auto'><tr><th colspan='3'>top layers, {name}</th></tr>"
            "<tr><th>layer</th><th>op</th><th>share</th></tr>"
        )
        out += [
            f"<tr><td><code>{e(r.name)}</code></td><td>{e(r.op_type)}</td>"
            f"<td>{r.share:.1%}</td></tr>"
            for r in side.top
        ]
        out.append("</table>")
    out.append("</div>")
    d = p.diff
    if d is None:
        return out
    out.append(
        f"<h3>Profile diff: {d.original_ns / 1e3:.1f} → {d.replay_ns / 1e3:.1f} us per sample "
        f"({e(delta(d.delta_rel))})</h3><p><b>{e(d.headline())}.</b></p>"
        f"<p>Matched {d.matched_by_name} layers by name and "
        f"{d.matched_by_position} by kind and position; {d.original_only} only in the original, "
        f"{d.replay_only} only in the replay (fused or split on the other side).</p>"
    )
    out.append(changes_svg(d.changes))
    out.append(
        "<table><tr><th>layer</th><th>kind</th><th>matched</th><th>original</th>"
        "<th>replay</th><th>change</th><th>ratio</th><th>share of the change</th></tr>"
    )
    for c in d.changes[:25]:
        name = f"<code>{e(c.name)}</code>" + (
            f" ↔ <code>{e(c.replay_name)}</code>" if c.replay_name else ""
        )
        out.append(
            f"<tr><td>{name}</td><td>{e(c.kind)}</td><td>{e(c.match)}</td>"
            f"<td>{micros(c.original_ns)}</td><td>{micros(c.replay_ns)}</td>"
            f"<td>{c.delta_ns / 1e3:+.1f} us</td>"
            f"<td>{'-' if c.ratio is None else f'{c.ratio:.2f}'}</td>"
            f"<td>{'-' if c.share_of_change is None else f'{c.share_of_change:.0%}'}</td></tr>"
        )
    out.append("</table>")
    return out
