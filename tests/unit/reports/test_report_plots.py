"""report.html's two plots (`report_plots`): round ticks on the latency axis, what is not finite
left out, and every label inside its plot and apart from the others (the plots place their axes
themselves, without matplotlib's layout engine)."""

from __future__ import annotations

import html
import math
import re

import pytest

from repro.reports import plots
from repro.reports.model import CdfPoints, MetricResult
from repro.reports.report_plots import bars_svg, cdf_svg

_TEXT = re.compile(r"<text ([^>]*)>([^<]*)</text>")
_XTICK = re.compile(r'<g id="xtick_\d+">.*?<text[^>]*>([^<]*)</text>', re.DOTALL)


def _row(
    label: str,
    delta: float,
    ci: list[float] | None,
    verdict: str = "reproduced",
    *,
    judged: bool = True,
) -> MetricResult:
    return MetricResult(
        metric="samples_per_second",
        label=label,
        unit="1/s",
        original=[1.0],
        replay=[1.0],
        original_value=1.0,
        replay_value=1.0,
        delta_rel=delta,
        ci=ci,
        tolerance=0.05,
        method="student-t",
        verdict=verdict,
        reason="",
        judged=judged,
    )


def _cdf(lo: float, hi: float) -> dict[str, CdfPoints]:
    xs = [lo, math.sqrt(lo * hi), hi]
    return {
        "original": CdfPoints(latency_ns=xs, fraction=[0.1, 0.5, 1.0]),
        "replay": CdfPoints(latency_ns=xs, fraction=[0.2, 0.6, 1.0]),
    }


def _xticks(svg: str) -> list[str]:
    return _XTICK.findall(svg)


def _ns(label: str) -> float:
    number, unit = label.split()
    return float(number) * {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}[unit]


def test_the_latency_axis_has_round_ticks() -> None:
    """A tick per decade over three decades, else at 1-2-5; within a decade (no two such values)
    linear ones."""
    decades = _xticks(cdf_svg(_cdf(1e3, 1e8), "c"))
    assert decades == ["1 µs", "10 µs", "100 µs", "1 ms", "10 ms", "100 ms"]
    steps = _xticks(cdf_svg(_cdf(1_000.0, 9_000.0), "c"))
    assert {"1 µs", "2 µs", "5 µs"} <= set(steps)
    assert {t.split()[0] for t in steps} <= {"1", "2", "5", "10"}
    for lo, hi in ((5e3, 9e3), (1.2e6, 1.8e6)):
        ticks = [_ns(t) for t in _xticks(cdf_svg(_cdf(lo, hi), "c"))]
        assert len(ticks) >= 2, (lo, hi)
        assert all(0.9 * lo < t < 1.1 * hi for t in ticks), (lo, hi, ticks)


def test_the_reports_plots_leave_out_what_is_not_finite() -> None:
    """An infinite or undefined difference (a side measured 0) or latency is left out of the
    plots, never a crash of `repro report` or `nan` in the SVG."""
    svg = bars_svg(
        [
            _row("finite", 0.01, [0.0, 0.02]),
            _row("infinite", math.inf, None),
            _row("undefined", math.nan, None),
            _row("infinite interval", 0.02, [0.01, math.inf]),
        ],
        "t",
    )
    texts = [t for _, t in _TEXT.findall(svg)]
    assert "finite" in texts
    assert "+1.0 %" in texts
    assert not {"infinite", "undefined", "infinite interval", "+2.0 %"} & set(texts)
    assert not re.search(r"\b(nan|inf)\b", svg)
    assert bars_svg([_row("infinite", math.inf, None)], "t") == ""
    cdf = CdfPoints(latency_ns=[1e6, math.inf, 2e6], fraction=[0.5, 0.9, 1.0])
    assert not re.search(r"\b(nan|inf)\b", cdf_svg({"replay": cdf}, "c"))


def test_a_row_is_named_and_its_difference_written_in_its_verdicts_colour() -> None:
    svg = bars_svg(
        [
            _row("throughput", -0.3, [-0.35, -0.25], "not reproduced"),
            _row("latency p50", 0.01, None, "inconclusive", judged=False),
        ],
        "t",
    )
    fills = {t: "".join(re.findall(r"fill: (#\w+)", a)) for a, t in _TEXT.findall(svg)}
    assert fills["throughput"] == "#cf222e"
    assert fills["-30.0 %"] == "#cf222e"
    assert fills["latency p50"] == plots.GREY  # for information
    assert {"not reproduced", "for information", "tolerance"} <= set(fills)  # the legend


X, Y = r' x="([-\d.]+)"', r' y="([-\d.]+)"'


def _find(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    assert found, (pattern, text)
    return found[1]


def _boxes(svg: str) -> tuple[float, float, list[tuple[str, tuple[float, float, float, float]]]]:
    """The plot's size and each text's box (points), from its anchor, its font's size and
    metrics, and its rotation."""
    boxes = []
    for attrs, raw in _TEXT.findall(svg):
        text = html.unescape(raw)
        font, x, y = (float(_find(p, attrs)) for p in (r"font-size: ([\d.]+)px", X, Y))
        anchor = re.search(r"text-anchor: (\w+)", attrs)
        width = plots.text_box_in([text], size_pt=font)[0] * 72
        start = {"start": 0.0, "middle": -width / 2, "end": -width}[
            anchor[1] if anchor else "start"
        ]
        # the baseline: an ascent of 0.76 em above it, a descent of 0.24 em below (DejaVu Sans)
        up, down = 0.76 * font, 0.24 * font
        if "rotate(-90" in attrs:
            box = (x - up, y - start - width, x + down, y - start)
        else:
            box = (x + start, y - up, x + start + width, y + down)
        boxes.append((text, box))
    width, height = _find(r'viewBox="0 0 ([\d.]+ [\d.]+)"', svg).split()
    return float(width), float(height), boxes


CASES = {
    "one row": [_row("throughput", 0.01, [0.0, 0.02])],
    "verdicts": [
        _row("latency p90 (MLPerf metric)", -0.3, [-0.35, -0.25], "not reproduced"),
        _row("throughput", 0.01, [0.0, 0.02]),
        _row("a metric with a long name " + "x" * 40, 0.5, [-2.0, 3.0], "inconclusive"),
        _row("p50", -0.123, None, "not comparable: different hardware"),
        _row("p99", 0.0, None, "reproduced after machine adjustment"),
        _row("p999", 15.0, None, "not comparable: hardware unknown", judged=False),
    ],
}


@pytest.mark.parametrize(
    "svg",
    [
        *(bars_svg(rows, f"{name}: replay vs original") for name, rows in CASES.items()),
        *(cdf_svg(_cdf(lo, hi), "latency CDF") for lo, hi in ((3e5, 2.5e6), (1e3, 9e3), (90, 1e9))),
    ],
    ids=[*CASES, "cdf ms", "cdf µs", "cdf decades"],
)
def test_every_label_is_inside_its_plot_and_apart(svg: str) -> None:
    width, height, boxes = _boxes(svg)
    assert len(boxes) >= 6
    for text, (x0, y0, x1, y1) in boxes:
        assert -0.5 <= x0 < x1 <= width + 0.5, (text, x0, x1, width)
        assert -0.5 <= y0 < y1 <= height + 0.5, (text, y0, y1, height)
    for i, (a, (ax0, ay0, ax1, ay1)) in enumerate(boxes):
        for b, (bx0, by0, bx1, by1) in boxes[i + 1 :]:
            overlap = min(ax1, bx1) - max(ax0, bx0), min(ay1, by1) - max(ay0, by0)
            assert min(overlap) <= 0.5, (a, b)
