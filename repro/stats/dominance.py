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
        """The mean and its 95 % t-interval (a single value: no interval)."""
        mean = statistics.fmean(values)
        if len(values) < 2:
            return cls(mean, mean, mean, len(values))
        half = t_ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
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
