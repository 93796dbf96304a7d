"""Plots for the HTML pages: matplotlib figures written as SVG, inlined in the page.

matplotlib is imported only inside the functions that draw (here and the pages' `draw`
functions), so the CLI's start-up never pays for it. No pyplot and no GUI backend: a bare
`Figure` saved through its SVG canvas (no `matplotlib.use`, no global state changed). The
output is byte-stable for the same data: matplotlib's own defaults (a user's matplotlibrc or
style is not read), a fixed `svg.hashsalt`, no date in the metadata. Text stays text
(`svg.fonttype: none`), so a browser can search it and a test can read the axis labels, and
mathtext is off: a system named `$x$` is shown as written, never parsed as a formula.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import html
import io
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

#: the colours of the pages (the verdict colours of report.html, matplotlib's blue and orange)
BLUE, ORANGE, GREEN, RED, GREY = "#1f77b4", "#ff7f0e", "#1a7f37", "#cf222e", "#8c959f"
#: the opacity of a faded point (dominated, excluded): there, but behind the front
FADED = 0.25

_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",  # <text> elements, not glyph outlines
    "text.parse_math": False,  # names are anyone's text: `$...$` is not a formula
    "font.family": ["sans-serif"],
    "font.sans-serif": ["DejaVu Sans"],  # bundled with matplotlib: the same metrics everywhere
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.grid": True,
    "grid.color": "#e4e4e4",
    "axes.axisbelow": True,
    "legend.fontsize": 8.0,
    "legend.framealpha": 0.9,
    "svg.image_inline": True,
}
#: distances (points) in matplotlib's default style, which `svg` draws with: a tick's length
#: and its label's pad, an axis label's pad, the title's pad, a legend's pad to the figure's edge
TICK_PT, LABELPAD_PT, TITLEPAD_PT, LEGEND_EDGE_PT = 7.0, 4.0, 6.0, 4.0
#: the room kept free around a figure's text (points)
PAD_PT = 4.0
_XML_HEAD = re.compile(r"\A.*?(?=<svg)", re.DOTALL)
_NAMESPACES = re.compile(r' xmlns(?::xlink)?="[^"]*"| version="1\.1"')


def svg(
    draw: Callable[[Figure], None],
    *,
    title: str,
    width_in: float,
    height_in: float,
    layout: bool = True,
) -> str:
    """`draw` fills a new figure; the figure as an inline `<svg>` element named `title` (its
    accessible name and tooltip; the plot draws its own title). `layout` False: no constrained
    layout, `draw` places its axes itself (`place`, `text_box_in`)."""
    with _gc_paused():
        import matplotlib
        import matplotlib.style
        from matplotlib.figure import Figure

        # NOTE: the salt is the title, so that two plots of one page never share an id
        # (matplotlib names clip paths and markers by a hash of the salt and their content)
        rc: dict[RcKeyType, Any] = {**_RC, "svg.hashsalt": f"repro:{title}"}
        with matplotlib.style.context("default"), matplotlib.rc_context(rc):
            # NOTE: constrained layout draws the figure once more to measure it, ~40 ms of CPU
            # a plot: what `repro report`'s start-up feels (bench/start_speed.py), so its
            # page's plots place their axes from their labels' widths instead
            fig = Figure(figsize=(width_in, height_in), layout="constrained" if layout else None)
            draw(fig)
            out = io.StringIO()
            # no metadata at all: no date, and no RDF block naming other sites' namespaces
            meta = dict.fromkeys(("Date", "Creator", "Format", "Type"))
            fig.savefig(out, format="svg", metadata=meta)
    return _inline(out.getvalue(), title)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while matplotlib is imported and a figure drawn:
    their ~10^5 new objects start full collections that walk every live object (the CLI's
    modules' too), ~0.1 s of `repro report`'s CPU. What a figure leaves is collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def document(
    draw: Callable[[Figure], None], *, title: str, width_in: float, height_in: float
) -> str:
    """`draw` fills a new figure; the figure as an SVG file of its own (the same defaults as
    `svg`, with its namespaces)."""
    import matplotlib
    import matplotlib.style
    from matplotlib.figure import Figure

    rc: dict[RcKeyType, Any] = {**_RC, "svg.hashsalt": f"repro:{title}"}
    with matplotlib.style.context("default"), matplotlib.rc_context(rc):
        fig = Figure(figsize=(width_in, height_in), layout="constrained")
        draw(fig)
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Title": title, "Date": None})
    return out.getvalue()


def _inline(text: str, title: str) -> str:
    """matplotlib's SVG document as an element of an HTML page: no XML declaration or DOCTYPE,
    no namespace URLs (HTML's parser puts inline SVG in its namespace; the page names no
    other site), an accessible role, and a width that shrinks with the window."""
    body = _NAMESPACES.sub("", _XML_HEAD.sub("", text, count=1)).strip()
    head, _, rest = body.partition(">")
    name = html.escape(title)
    head = head.replace(
        "<svg ",
        f'<svg role="img" aria-label="{name}" class="plot" style="max-width:100%;height:auto" ',
        1,
    )
    return f"{head}><title>{name}</title>{rest}"


def text_box_in(texts: Iterable[str], *, size_pt: float) -> tuple[float, float]:
    """The widest of `texts` and a line's height (inches) in the plots' font at `size_pt`, as
    the SVG renderer lays them out."""
    # NOTE: matplotlib gives a line of text the height of "lp" (ascent and descent) at least
    line = _text_box_pt("lp", size_pt)[1]
    return max((_text_box_pt(t, size_pt)[0] for t in texts), default=0.0) / 72, line / 72


@functools.cache
def _text_box_pt(text: str, size_pt: float) -> tuple[float, float]:
    """A text's width and height (points); cached, as the pages' labels repeat (FreeType's
    layout of a text is ~0.2 ms of CPU)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    prop = FontProperties(family=_RC["font.sans-serif"], size=size_pt)
    width, height, _ = text_to_path.get_text_width_height_descent(text, prop, ismath=False)
    return width, height


def legend_box_in(labels: Sequence[str], *, width_in: float, most: int = 4) -> tuple[int, float]:
    """A frameless legend of `labels` (matplotlib's default style): the most columns, up to
    `most`, that fit in `width_in`, and its height (inches) in that many columns."""
    size = float(_RC["legend.fontsize"])
    # NOTE: in ems of the legend's font: its border's pad, the space between its rows and
    # between its columns, a key and the space after it (matplotlib's rcParams legend.*)
    border, between_rows, between_columns, key = 0.4, 0.5, 2.0, 2.8
    line = text_box_in([], size_pt=size)[1] * 72
    for columns in range(min(most, len(labels)), 0, -1):
        # matplotlib splits the labels into `columns` runs, the longer ones first (numpy's
        # array_split), a run a column
        rows, longer = divmod(len(labels), columns)
        widths, start = [], 0
        for column in range(columns):
            run = labels[start : start + rows + (column < longer)]
            widths.append(text_box_in(run, size_pt=size)[0] * 72)
            start += len(run)
        rows += longer > 0
        used = sum(widths) + size * (2 * border + key * columns + between_columns * (columns - 1))
        if used <= width_in * 72 or columns == 1:
            height = rows * line + size * (2 * border + between_rows * (rows - 1))
            return columns, height / 72
    return 1, 0.0  # no labels


def tick_labels(axis: Axis) -> list[str]:
    """The labels of the major ticks an axis will draw (those in its view)."""
    lo, hi = sorted(axis.get_view_interval())
    locs = [v for v in axis.get_majorticklocs() if lo <= v <= hi]
    return list(axis.get_major_formatter().format_ticks(locs))


def place(fig: Figure, *, left_in: float, right_in: float, top_in: float, bottom_in: float) -> None:
    """The axes' margins (inches) in a figure drawn without a layout engine."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(
        left=left_in / width,
        right=1 - right_in / width,
        top=1 - top_in / height,
        bottom=bottom_in / height,
    )


def spans_decades(values: Sequence[float], *, decades: float = 2.0) -> bool:
    """Whether a log axis suits the values: all positive, the largest over 10**decades times
    the smallest."""
    finite = [v for v in values if math.isfinite(v)]
    return bool(finite) and min(finite) > 0 and max(finite) / min(finite) > 10**decades


def number(v: float) -> str:
    """A tick label: 250k, 1.5M, 0.02 (never mathtext, which is off)."""
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def latency(ns: float) -> str:
    """A latency tick label: 100 µs, 2 ms, 1.5 s."""
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if ns >= scale:
            return f"{ns / scale:g} {unit}"
    return f"{ns:g} ns"


def log_scale(
    ax: Axes,
    axis: str,
    values: Sequence[float],
    label: Callable[[float], str],
    *,
    decades: float = 3.0,
) -> None:
    """A log scale on `axis` ("x" or "y") with plain tick labels (matplotlib's own log labels
    are mathtext): a tick per decade where the values span more than `decades`, else 1-2-5
    steps."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if axis == "x":
        ax.set_xscale("log")
    else:
        ax.set_yscale("log")
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(
        LogLocator(subs=(1.0,) if spans_decades(values, decades=decades) else (1.0, 2.0, 5.0))
    )
    target.set_major_formatter(FuncFormatter(lambda v, _: label(v)))
    target.set_minor_formatter(NullFormatter())


def scales(
    ax: Axes,
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    xlabel: Callable[[float], str] = number,
    ylabel: Callable[[float], str] = number,
    decades: float = 3.0,
) -> tuple[bool, bool]:
    """A log scale on each axis whose values span more than two decades (`log_scale`, its
    ticks per decade beyond `decades`), plain tick labels on a linear one (250k, not
    250000); which axes got a log scale."""
    from matplotlib.ticker import FuncFormatter

    logx, logy = spans_decades(xs), spans_decades(ys)
    for axis, log, values, label in (("x", logx, xs, xlabel), ("y", logy, ys, ylabel)):
        if log:
            log_scale(ax, axis, values, label, decades=decades)
        else:
            target = ax.xaxis if axis == "x" else ax.yaxis
            target.set_major_formatter(FuncFormatter(lambda v, _, f=label: f(v)))
    return logx, logy


def name_point(ax: Axes, name: str, x: float, y: float, n: int) -> None:
    """A point's name beside it: above and below in turn (the n-th of a front), and on its left
    in the right third of the axes, so that it stays inside."""
    ax.autoscale_view()
    right = ax.transAxes.inverted().transform(ax.transData.transform((x, y)))[0] > 0.66
    ax.annotate(
        name,
        (x, y),
        xytext=(-6 if right else 6, 6 if n % 2 == 0 else -12),
        textcoords="offset points",
        ha="right" if right else "left",
        fontsize=7.5,
        zorder=5,
    )


def axis_label(name: str, unit: str, log: bool) -> str:
    """`name (unit, log scale)`; the unit left out where there is none."""
    extra = ", ".join(p for p in (unit, "log scale" if log else "") if p)
    return f"{name} ({extra})" if extra else name


def shorten(text: str, width: int = 40) -> str:
    """A label cut to `width` characters, with an ellipsis where it was cut."""
    return text if len(text) <= width else text[: width - 1] + "…"
