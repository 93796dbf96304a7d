"""Formatting shared by the renderers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from repro.reports.model import ClaimResult, DriftEntry, MetricResult


def value(v: Any, unit: str) -> str:
    """A metric value with a readable unit."""
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if unit == "ns":
        if v >= 1e9:
            return f"{v / 1e9:.3f} s"
        if v >= 1e6:
            return f"{v / 1e6:.3f} ms"
        return f"{v / 1e3:.2f} µs"
    if unit == "fraction":
        return f"{100 * v:.2f} %"
    if unit == "samples/s":
        return f"{v:,.1f}/s"
    if unit == "W" or unit.startswith("J/"):  # a power result's (J/sample, J/token, J/query)
        return f"{v:.4g} {unit}"
    return f"{v:g}"


#: the probe figures a metric can be adjusted by (`MachineAdjustment.speed_index`), as named
#: in a report
SPEED_INDEX_NAMES = {
    "gpu_matmul_tflops": "GPU's fp16 matrix product",
    "compute_large_gflops": "large compute kernel",
    "compute_gflops": "small compute kernel",
}


def speed_index(key: str | None) -> str:
    """What the machine adjustment was measured by, for a reader."""
    return SPEED_INDEX_NAMES.get(key, key) if key else "probes"


def delta(d: float | None) -> str:
    return "-" if d is None else f"{100 * d:+.1f} %"


def interval(ci: list[float] | None) -> str:
    if not ci:
        return "-"
    return f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}] %"


def runs(values: list[Any]) -> str:
    return f" ({len(values)} runs)" if len(values) > 1 else ""


# Symbols present in common fonts (DejaVu): emoji render as boxes in headless browsers.
VERDICT_MARK = {
    "reproduced": "✓ reproduced",
    "reproduced after machine adjustment": "✓ reproduced after machine adjustment",
    "not reproduced": "✗ not reproduced",
    "inconclusive": "⚠ inconclusive",
    "inconclusive: machine unstable": "⚠ inconclusive: machine unstable",
    "inconclusive: machine busy": "⚠ inconclusive: machine busy",
    "not comparable: different hardware": "≠ not comparable: different hardware",
    "not comparable: hardware unknown": "? not comparable: hardware unknown",
    "not comparable: different benchmarks": "≠ not comparable: different benchmarks",
}


def adjusted_verdict(metric: MetricResult) -> str:
    """The verdict of a metric's machine-adjusted comparison as a report shows it: where it
    does not decide the scenario (an information row's, or one the metric's verdict
    overrides), it says so, so that it never reads as the scenario's verdict."""
    a = metric.adjusted
    assert a is not None
    if not metric.judged:
        return f"({a.verdict}; for information)"
    return f"({a.verdict}; does not count)" if a.note else a.verdict


def micros(ns: float | None) -> str:
    """A time in nanoseconds as microseconds; '-' for none."""
    return "-" if ns is None else f"{ns / 1e3:.1f} us"


def profile_side(name: str, side: Any) -> str:
    """One side's layer profile in a sentence (Markdown and HTML say the same)."""
    overhead = (
        f"profiler overhead {side.overhead_rel:+.1%} per inference"
        if side.overhead_rel is not None
        else "profiler overhead not measured"
    )
    return (
        f"{name}: {side.backend}, {side.layers} layers, {side.inferences} inferences, "
        f"{side.per_sample_ns / 1e3:.1f} us per sample; {side.outside_share:.1%} outside the "
        f"layers; {overhead} (a separate pass: the measured tests were not profiled)"
    )


CLAIM_MARK = {
    "holds": "✓ holds",
    "does not hold": "✗ does not hold",
    "inconclusive": "⚠ inconclusive",
}
MATCH_MARK = {
    "matches": "✓ matches",
    "differs": "≠ differs",
    "inconclusive": "⚠ inconclusive",
    "no original": "- no original",
}


def claim_figure(quantity: str, value: float | None, ci: list[float] | None) -> str:
    """A claim's quantity: `1.87x [1.80, 1.95]`, `0.0312`, `0.62 of the bound [0.55, 0.70]`."""
    if value is None:
        return "-"
    if quantity == "drop":
        return f"{value:.4f}" + ("" if ci is None else f" [{ci[0]:.4f}, {ci[1]:.4f}]")
    unit = " of the bound" if quantity == "margin" else "x"
    if ci is None:
        return f"{value:.3g}{unit} (exact)"
    if math.isinf(ci[1]):
        return f"{value:.3g}{unit} (one round)"
    return f"{value:.3g}{unit} [{ci[0]:.3g}, {ci[1]:.3g}]"


def here_figure(c: ClaimResult) -> str:
    """This machine's figure of a claim, with the Server rate a feasibility claim tested."""
    shown = claim_figure(c.quantity, c.value, c.ci)
    return shown + (f" at {c.target_qps:.3g} QPS" if c.target_qps is not None else "")


def original_figure(c: ClaimResult) -> str:
    """The original's figure of a claim."""
    return claim_figure(c.quantity, c.original_value, c.original_ci)


#: a clause of a reason said in this many rows or more is said once, below the table
SHARED_ROWS = 2
#: shorter clauses are cheaper to repeat than to refer to
SHARED_MIN_CHARS = 80


def shared_clauses(reasons: list[str]) -> tuple[list[str], list[str]]:
    """The reasons with each long clause that several of them share (the busy-machine
    explanation, six lines in every row) replaced by a reference (`[note 1]`), and the
    shared clauses, numbered in order, to say once."""
    split = [[c.strip() for c in r.split("; ")] for r in reasons]
    counts: dict[str, int] = {}
    for clauses in split:
        for c in set(clauses):
            counts[c] = counts.get(c, 0) + 1
    shared = [
        c
        for c in dict.fromkeys(c for clauses in split for c in clauses)
        if counts[c] >= SHARED_ROWS and len(c) >= SHARED_MIN_CHARS
    ]
    number = {c: k for k, c in enumerate(shared, start=1)}
    rewritten = [
        "; ".join(f"[note {number[c]}]" if c in number else c for c in clauses) for clauses in split
    ]
    return rewritten, shared


#: the drift keys a report shows as one row: the CPU flags one side has and the other has not
FLAG_PREFIX = "cpu.flags."


@dataclass(frozen=True)
class DriftLine:
    """A row of a report's drift table: one difference, or the CPU flags that differ as one
    row (`flags`: each flag with the side that has it)."""

    level: str
    group: str
    key: str
    original: str
    replay: str
    flags: tuple[tuple[str, str], ...] = ()


def drift_lines(drift: list[DriftEntry]) -> list[DriftLine]:
    """The drift as a person reads it: one row per difference, the CPU flags that differ
    collapsed into one ("16 CPU flags differ") where the first of them stood."""
    flags = [d for d in drift if d.key.startswith(FLAG_PREFIX)]
    lines: list[DriftLine] = []
    for d in drift:
        if not d.key.startswith(FLAG_PREFIX):
            lines.append(DriftLine(d.level, d.group, d.key, str(d.original), str(d.replay)))
        elif d is flags[0]:
            held = tuple(
                (f.key.removeprefix(FLAG_PREFIX), "original" if f.original else "replay")
                for f in flags
            )
            only = {side: [n for n, s in held if s == side] for side in ("original", "replay")}
            lines.append(
                DriftLine(
                    d.level,
                    d.group,
                    f"{len(flags)} CPU flag(s) differ" if len(flags) > 1 else d.key,
                    _flag_list(only["original"]),
                    _flag_list(only["replay"]),
                    held,
                )
            )
    return lines


def _flag_list(names: list[str], shown: int = 6) -> str:
    """`only here: avx512f, avx512bw, … (+8)`, or '-' for none."""
    if not names:
        return "-"
    more = f", … (+{len(names) - shown})" if len(names) > shown else ""
    return f"only here: {', '.join(names[:shown])}{more}"
