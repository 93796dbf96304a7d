"""Machine adjustment: a performance metric relative to the machine's measured speed.

Each LoadGen test is bracketed by two probes (`repro.probes`); the test's speed index is the
faster of their compute rates (`test_speed`): the large kernel's (`compute_large_gflops`,
probes v2) where every probe of both sides has it, else the small kernel's (`compute_gflops`:
an original captured with v1 probes is adjusted as it was). A throughput divided by it, or a
latency multiplied by it, no longer moves with the machine's phase (a slower clock, a noisy
neighbour, stolen CPU time) but still moves with the software and its settings: the probe
runs the same kind of work at the same thread count, and neither knows the experiment.

The probe's own noise is carried into the interval: with two or more runs a side the adjusted
per-run values are compared as any other runs (their spread includes the probes'); with one
run a side the raw interval is widened by the probes' relative error (the half-difference of
the probes before and after each test, at least the probes' own repeatability).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from repro.stats.significance import Comparison, compare_runs
from repro.stats.verdicts import decide_interval, decide_point

#: a probe's relative error floor: the repeatability of the small compute kernel measured here
#: (best of 20 runs: 1.0-1.3 % coefficient of variation from probe to probe); the large
#: kernel's median repeated as well as the small kernel's best in the same session (probes
#: 2.4 s apart: 3.1 % vs 4.4 % relative change, each including the machine's own drift)
PROBE_REL_ERROR = 0.015
Z95 = 1.96


SpeedKey = Literal["gpu_matmul_tflops", "compute_large_gflops", "compute_gflops"]
#: the probe figures that can serve as the speed index, best first: a GPU run's fp16 product
#: (`repro.probes.gpu`), the large CPU kernel (probes v2), else the small one (every probe
#: has it)
SPEED_KEYS: tuple[SpeedKey, ...] = ("gpu_matmul_tflops", "compute_large_gflops", "compute_gflops")
#: the speed index of GPU runs
GPU_SPEED_KEY: SpeedKey = "gpu_matmul_tflops"


def speed_key(probes: Iterable[dict[str, Any] | None]) -> SpeedKey:
    """The first of SPEED_KEYS that every one of `probes` has, the last one when none does.
    A missing probe (None) is left out here; a metric with a test that lacks one is not
    adjusted at all (`repro.compare.machine_sides.with_machine`).

    A GPU run's probes (those with a `gpu` entry) give the GPU's figure and no other: the CPU
    kernels do not measure the device the work ran on, so where a GPU run's GPU was not
    probed (torch without CUDA in the orchestrator), its tests lack the figure and are not
    adjusted, rather than adjusted by the CPU."""
    present = [p for p in probes if p]
    if any(p.get("gpu") for p in present):
        return GPU_SPEED_KEY
    for key in SPEED_KEYS[1:-1]:
        if present and all(positive(p.get(key)) for p in present):
            return key
    return SPEED_KEYS[-1]


def positive(value: Any) -> bool:
    """A figure that can be used: a finite number (not a bool, not an integer too large for a
    float: a damaged file) above zero."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and value > 0
    except OverflowError:
        return False


@dataclass(frozen=True)
class Speed:
    """The speed index of one test and its relative error."""

    index: float
    rel_error: float


def test_speed(
    before: dict[str, Any] | None, after: dict[str, Any] | None, *, key: SpeedKey
) -> Speed | None:
    """The faster of the two probes around a test (None when one is missing): a probe reads
    low when something disturbs it for a moment (a CPU shared with another thread, a slow
    wake-up), never high, and the test itself ran for seconds. Measured on the ort-resnet50
    original (8 rounds): its Offline throughput varied 3.6 % (coefficient of variation) raw,
    4.3 % adjusted by the faster probe and 13.7 % by the mean of the two, two of its 17 probes
    having read 200 GFLOP/s among ~350. The relative error is the probes' half-difference, at
    least PROBE_REL_ERROR."""
    if not before or not after:
        return None
    a, b = before.get(key), after.get(key)
    if not positive(a) or not positive(b):
        return None
    a, b = float(before[key]), float(after[key])
    return Speed(max(a, b), max(abs(a - b) / (a + b), PROBE_REL_ERROR))


def spread(speeds: Sequence[float]) -> float:
    """How far the machine moved within a side: the 90th over the 10th percentile of its
    probes, minus 1 (robust to one odd probe, unlike max / min)."""
    if len(speeds) < 2:
        return 0.0
    lo, hi = np.quantile(np.asarray(speeds, dtype=np.float64), [0.1, 0.9])
    return float(hi / lo - 1)


def adjust(values: Sequence[float], speeds: Sequence[Speed], *, latency: bool) -> list[float]:
    """Values as if measured at speed 1: throughput / speed, latency x speed."""
    return [v * s.index if latency else v / s.index for v, s in zip(values, speeds, strict=True)]


def compare_adjusted(
    raw: Comparison,
    original: tuple[Sequence[float], Sequence[Speed]],
    replay: tuple[Sequence[float], Sequence[Speed]],
    *,
    latency: bool,
    tol: float,
    confidence: float,
) -> Comparison:
    """The metric compared after removing each side's machine speed."""
    (va, sa), (vb, sb) = original, replay
    if len(va) >= 2 and len(vb) >= 2:
        return compare_runs(
            adjust(va, sa, latency=latency),
            adjust(vb, sb, latency=latency),
            tol=tol,
            confidence=confidence,
        )
    ratio = _mean_index(sb) / _mean_index(sa)
    factor = ratio if latency else 1 / ratio
    delta = (1 + raw.delta_rel) * factor - 1
    probe_se = math.sqrt(_rel_error(sa) ** 2 + _rel_error(sb) ** 2)
    if raw.ci is None:
        lo, hi = delta - Z95 * probe_se * (1 + delta), delta + Z95 * probe_se * (1 + delta)
        verdict = decide_point(delta, tol) if probe_se == 0 else decide_interval(lo, hi, tol)
        return Comparison(verdict, "probe-adjusted", delta, (lo, hi))
    raw_se = (math.log1p(raw.ci[1]) - math.log1p(max(raw.ci[0], -0.99))) / (2 * Z95)
    se = math.sqrt(raw_se**2 + probe_se**2)
    centre = math.log1p(delta)
    lo, hi = math.expm1(centre - Z95 * se), math.expm1(centre + Z95 * se)
    return Comparison(decide_interval(lo, hi, tol), "probe-adjusted", delta, (lo, hi))


def machine_delta(original: Sequence[Speed], replay: Sequence[Speed]) -> float:
    """How much faster (+) or slower (-) the replay's machine was, by the probes."""
    return _mean_index(replay) / _mean_index(original) - 1


def _mean_index(speeds: Sequence[Speed]) -> float:
    return sum(s.index for s in speeds) / len(speeds)


def _rel_error(speeds: Sequence[Speed]) -> float:
    """Relative error of a side's mean speed."""
    return math.sqrt(sum(s.rel_error**2 for s in speeds)) / len(speeds)
