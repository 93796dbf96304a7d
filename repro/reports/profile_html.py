"""The report.html section of layer profiles: top layers per side, a bar chart of the largest
layer changes and the profile diff's table."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from repro.profiles.diff import LayerChange, share_text
from repro.reports import plots
from repro.reports.fmt import delta, micros, profile_side
from repro.reports.model import ProfileSection

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_BARS = 12
_TITLE = "largest changes of time per sample, by layer"


def changes_svg(changes: list[LayerChange]) -> str:
    """Horizontal bars: the largest changes of time per sample (red slower, green faster);
    layers that did not change are left out."""
    rows = [c for c in changes if c.delta_ns][:_BARS]
    if not rows:
        return ""

    def draw(fig: Figure) -> None:
        from matplotlib.patches import Patch

        ax = fig.add_subplot()
        ys = list(range(len(rows)))[::-1]  # the largest change on top
        us = [c.delta_ns / 1e3 for c in rows]
        colours = [plots.RED if d > 0 else plots.GREEN for d in us]
        bars = ax.barh(ys, us, height=0.7, color=colours)
        ax.bar_label(bars, labels=[f"{d:+.1f} µs" for d in us], padding=3, fontsize=8)
        ax.axvline(0, color="#777", linewidth=0.8)
        span = max(abs(d) for d in us) or 1.0
        ax.set_xlim(-1.3 * span if min(us) < 0 else 0, 1.3 * span if max(us) > 0 else 0)
        labels = [c.name + (f" / {c.replay_name}" if c.replay_name else "") for c in rows]
        ax.set_yticks(ys, labels=[plots.shorten(label) for label in labels])
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("change of time per sample, replay - original (µs)")
        ax.set_title(_TITLE)
        kinds = [
            ("slower in the replay", plots.RED, max(us) > 0),
            ("faster in the replay", plots.GREEN, min(us) < 0),
        ]
        handles = [Patch(color=c, label=label) for label, c, shown in kinds if shown]
        if len(handles) > 1:
            fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False)

    return plots.svg(draw, title=_TITLE, width_in=7.5, height_in=1.6 + 0.28 * len(rows))


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
            f"<td>{share_text(c.share_of_change)}</td></tr>"
        )
    out.append("</table>")
    return out
