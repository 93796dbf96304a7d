"""A mean with its 95 % t-interval, and dominance judged beyond the intervals (`repro sweep`).

A candidate is dominated only when another is better on every objective beyond both
intervals; a non-dominated candidate that another beats on every mean is "tied".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from repro.stats.student_t import t_ppf


@dataclass
class Estimate:
    mean: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Estimate:
        """The mean and its 95 % t-interval (a single value: no interval). Values that are all
        positive (a rate, a latency, a size) have their interval on the log scale, so it stays
        positive: two rounds of a throughput gave [-4.269e+05, 9.418e+05]/s."""
        mean = statistics.fmean(values)
        if len(values) < 2:
            return cls(mean, mean, mean, len(values))
        t = t_ppf(0.975, len(values) - 1) / math.sqrt(len(values))
        if min(values) > 0:
            logs = [math.log(v) for v in values]
            centre, half = statistics.fmean(logs), t * statistics.stdev(logs)
            # the interval is about the geometric mean; it holds the mean, which may lie a rounding
            # error (equal values) or a skew (a wide spread over many rounds) outside it
            lo, hi = math.exp(centre - half), math.exp(centre + half)
            return cls(mean, min(lo, mean), max(hi, mean), len(values))
        half = t * statistics.stdev(values)
        return cls(mean, mean - half, mean + half, len(values))


def _beyond(a: Estimate, b: Estimate, maximize: bool) -> bool:
    return a.lo > b.hi if maximize else a.hi < b.lo


def _on_means(a: Estimate, b: Estimate, maximize: bool) -> bool:
    return a.mean > b.mean if maximize else a.mean < b.mean


def _beats(
    other: Sequence[Estimate],
    mine: Sequence[Estimate],
    maximize: Sequence[bool],
    better: Callable[[Estimate, Estimate, bool], bool],
) -> bool:
    return all(better(o, m, up) for o, m, up in zip(other, mine, maximize, strict=True))


def interval_front(
    candidates: Mapping[int, Sequence[Estimate]], maximize: Sequence[bool]
) -> dict[int, str]:
    """candidate -> "front", "tied" or "dominated"; each candidate has one estimate per
    objective, in the order of `maximize`."""
    out: dict[int, str] = {}
    for k, mine in candidates.items():
        others = [v for j, v in candidates.items() if j != k]
        if any(_beats(o, mine, maximize, _beyond) for o in others):
            out[k] = "dominated"
        elif any(_beats(o, mine, maximize, _on_means) for o in others):
            out[k] = "tied"
        else:
            out[k] = "front"
    return out
