"""A small plotter that writes SVG itself: the report page's two plots (each metric's difference
against its tolerance, and the latency CDFs) without matplotlib, whose import cost a `repro
report` ~0.6 s of CPU (`bench/start_speed.py`). The sweep's and the recommendation's richer
figures stay with matplotlib (`plots.py`).

A `Plot` is a frame in a fixed view box (px): a plot area with an x and a y `Scale` (linear or
log), tick labels, axis labels, a title and a legend, and marks drawn in data coordinates. Its
text is escaped as written and its output byte-stable for the same data (no ids, no dates).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

#: the page's font (DejaVu Sans where installed, as matplotlib's plots) and its sizes
FONT = "DejaVu Sans, Verdana, sans-serif"
#: a character's mean width at 10 px, for laying out labels (DejaVu Sans is wide)
CHAR_W = 6.2
AXIS = "#444"
GRID = "#e5e5e5"


def _f(v: float) -> str:
    """A coordinate: two decimals, no trailing zeros."""
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


@dataclass(frozen=True)
class Scale:
    """Data to a 0..1 fraction of an axis: linear, or logarithmic (values > 0)."""

    lo: float
    hi: float
    log: bool = False

    def fraction(self, v: float) -> float:
        if self.log:
            lo, hi, v = math.log10(self.lo), math.log10(self.hi), math.log10(max(v, self.lo))
        else:
            lo, hi = self.lo, self.hi
        return 0.5 if hi == lo else (v - lo) / (hi - lo)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi)) or (self.log and self.lo <= 0):
            raise ValueError(f"no scale from {self.lo} to {self.hi} (log: {self.log})")

    def ticks(self, most: int = 6) -> list[float]:
        """Round values within the scale: 1-2-5 steps (per decade on a log scale; a log range
        too narrow for two such values gets linear ones)."""
        if not self.log:
            return _linear_ticks(self.lo, self.hi, most)
        ticks = _log_ticks(self.lo, self.hi)
        return ticks if len(ticks) >= 2 else _linear_ticks(self.lo, self.hi, most)


def _linear_ticks(lo: float, hi: float, most: int) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / most
    decade = 10 ** math.floor(math.log10(raw))
    step = next(m * decade for m in (1, 2, 5, 10) if m * decade >= raw)
    first = math.ceil(lo / step)
    return [round(k * step, 12) for k in range(first, math.floor(hi / step) + 1)]


def _log_ticks(lo: float, hi: float) -> list[float]:
    """A tick per decade over three decades, else at 1-2-5, else (within a decade) at 1-9."""
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    ticks: list[float] = []
    for subs in ((1.0,), (1.0, 2.0, 5.0), tuple(range(1, 10))):
        ticks = [s * 10.0**d for d in decades for s in subs if lo <= s * 10.0**d <= hi]
        if math.log10(hi / lo) > 3 or len(ticks) >= 3:
            return ticks
    return ticks


def log_range(values: Sequence[float]) -> Scale:
    """A log scale around positive values, a little wider than they are."""
    lo, hi = min(values), max(values)
    if hi <= lo:
        lo, hi = lo / 2, hi * 2
    pad = (hi / lo) ** 0.03
    return Scale(lo / pad, hi * pad, log=True)


LegendKind = Literal["line", "point", "band"]
#: a legend key: its label, colour and mark
Key = tuple[str, str, LegendKind]
#: a legend row's height (px)
LEGEND_ROW = 15.0


def key_width(label: str) -> float:
    """A legend key's width (px): its mark, its label at 9 px, and the gap after it."""
    return 32 + CHAR_W * 0.9 * len(label)


def legend_rows(labels: Sequence[str], width: float) -> int:
    """The rows a legend of these labels takes in `width` px."""
    rows, used = 1, 0.0
    for label in labels:
        if used and used + key_width(label) > width:
            rows, used = rows + 1, 0.0
        used += key_width(label)
    return rows


@dataclass
class Plot:
    """One plot: its size and margins (px), its scales, and the SVG elements drawn so far."""

    title: str
    width: float
    height: float
    x: Scale
    y: Scale
    left: float = 64.0
    right: float = 16.0
    top: float = 30.0
    bottom: float = 48.0
    parts: list[str] = field(default_factory=list)

    # -- data to the view box

    def px(self, v: float) -> float:
        return self.left + self.x.fraction(v) * (self.width - self.left - self.right)

    def py(self, v: float) -> float:
        return (
            self.height - self.bottom - self.y.fraction(v) * (self.height - self.top - self.bottom)
        )

    # -- marks

    def text(
        self,
        x: float,
        y: float,
        words: str,
        *,
        size: float = 10,
        anchor: str = "middle",
        colour: str = "#222",
        rotate: bool = False,
        bold: bool = False,
    ) -> None:
        """Text at a point of the view box (px)."""
        turn = f' transform="rotate(-90 {_f(x)} {_f(y)})"' if rotate else ""
        weight = ' font-weight="bold"' if bold else ""
        self.parts.append(
            f'<text x="{_f(x)}" y="{_f(y)}" font-size="{_f(size)}" text-anchor="{anchor}" '
            f'fill="{colour}"{weight}{turn}>{html.escape(words)}</text>'
        )

    def line(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        colour: str,
        width: float = 1.8,
        steps: bool = False,
    ) -> None:
        """A polyline through data points (`steps`: each value held until the next x)."""
        points: list[tuple[float, float]] = []
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
            if steps and i:
                points.append((self.px(x), points[-1][1]))
            points.append((self.px(x), self.py(y)))
        joined = " ".join(f"{_f(a)},{_f(b)}" for a, b in points)
        self.parts.append(
            f'<polyline points="{joined}" fill="none" stroke="{colour}" '
            f'stroke-width="{_f(width)}" stroke-linejoin="round"/>'
        )

    def segment(
        self, x0: float, y0: float, x1: float, y1: float, *, colour: str, width: float = 2.0
    ) -> None:
        self.parts.append(
            f'<line x1="{_f(self.px(x0))}" y1="{_f(self.py(y0))}" x2="{_f(self.px(x1))}" '
            f'y2="{_f(self.py(y1))}" stroke="{colour}" stroke-width="{_f(width)}"/>'
        )

    def point(self, x: float, y: float, *, colour: str, r: float = 3.5) -> None:
        self.parts.append(
            f'<circle cx="{_f(self.px(x))}" cy="{_f(self.py(y))}" r="{_f(r)}" fill="{colour}"/>'
        )

    def band(self, x0: float, x1: float, y0: float, y1: float, *, colour: str) -> None:
        """A filled rectangle between data coordinates."""
        left, right = sorted((self.px(x0), self.px(x1)))
        top, low = sorted((self.py(y1), self.py(y0)))
        self.parts.append(
            f'<rect x="{_f(left)}" y="{_f(top)}" width="{_f(right - left)}" '
            f'height="{_f(low - top)}" fill="{colour}"/>'
        )

    # -- the frame

    def axes(
        self,
        *,
        xlabel: str,
        ylabel: str,
        xticks: Callable[[float], str],
        yticks: Callable[[float], str] | None = None,
        xgrid: bool = True,
    ) -> None:
        """The frame, ticks with their labels (and grid lines), the axis labels and the title;
        `yticks` None: no y tick labels (a plot that labels its rows itself)."""
        x0, x1 = self.left, self.width - self.right
        y0, y1 = self.top, self.height - self.bottom
        for v in self.x.ticks():
            x = self.px(v)
            if xgrid:
                self.parts.append(self._rule(x, y0, x, y1, GRID))
            self.parts.append(self._rule(x, y1, x, y1 + 4, AXIS))
            self.text(x, y1 + 15, xticks(v), size=9)
        if yticks is not None:
            for v in self.y.ticks():
                y = self.py(v)
                self.parts.append(self._rule(x0, y, x1, y, GRID))
                self.parts.append(self._rule(x0 - 4, y, x0, y, AXIS))
                self.text(x0 - 7, y + 3, yticks(v), size=9, anchor="end")
            self.text(14, (y0 + y1) / 2, ylabel, size=10, rotate=True)
        self.parts.append(
            f'<rect x="{_f(x0)}" y="{_f(y0)}" width="{_f(x1 - x0)}" height="{_f(y1 - y0)}" '
            f'fill="none" stroke="{AXIS}" stroke-width="0.8"/>'
        )
        self.text((x0 + x1) / 2, y1 + 32, xlabel, size=10)
        self.text(self.width / 2, 18, self.title, size=11, bold=True)

    def legend(self, items: Sequence[tuple[str, str, LegendKind]], *, x: float, y: float) -> None:
        """Keys in rows from (x, y) (px), a new row where one would pass the plot's right edge:
        a line, a point or a band in each item's colour."""
        start = x
        for label, colour, kind in items:
            if x > start and x + key_width(label) > self.width:
                x, y = start, y + LEGEND_ROW

            if kind == "band":
                self.parts.append(
                    f'<rect x="{_f(x)}" y="{_f(y - 8)}" width="16" height="10" fill="{colour}"/>'
                )
            else:
                self.parts.append(self._rule(x, y - 3, x + 16, y - 3, colour, 2))
                if kind == "point":
                    self.parts.append(
                        f'<circle cx="{_f(x + 8)}" cy="{_f(y - 3)}" r="3.5" fill="{colour}"/>'
                    )
            self.text(x + 20, y, label, size=9, anchor="start")
            x += key_width(label)

    def svg(self) -> str:
        """The plot as an inline `<svg>` element named by its title (its accessible name)."""
        name = html.escape(self.title)
        return (
            f'<svg role="img" aria-label="{name}" class="plot" '
            f'viewBox="0 0 {_f(self.width)} {_f(self.height)}" width="{_f(self.width)}" '
            f'height="{_f(self.height)}" style="max-width:100%;height:auto" '
            f'font-family="{FONT}"><title>{name}</title>'
            f'<rect width="100%" height="100%" fill="#fff"/>' + "".join(self.parts) + "</svg>"
        )

    @staticmethod
    def _rule(x0: float, y0: float, x1: float, y1: float, colour: str, width: float = 0.8) -> str:
        return (
            f'<line x1="{_f(x0)}" y1="{_f(y0)}" x2="{_f(x1)}" y2="{_f(y1)}" stroke="{colour}" '
            f'stroke-width="{_f(width)}"/>'
        )
