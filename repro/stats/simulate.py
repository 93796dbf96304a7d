"""The sequential rule (`repro.stats.sequential`) replayed on recorded rounds: its error.

Material is what `bench/verdict_fidelity.py` records: trials of paired rounds on these
machines, each round's log ratio of every judged metric, under a known load. A synthetic
comparison draws one trial and builds a sequence of rounds from it by a circular block
bootstrap (blocks of whole pairs of rounds, every metric of a round together, each block's
sides swapped at random: an A/A's sides are exchangeable): the tails, the drift within a block
and the correlation between neighbouring rounds and between metrics stay as the machine made
them. The rule is then applied as `repro replay --against --until-decided`
applies it: at each look, every metric still open is judged on the rounds so far and stops once
decided. A comparison's verdict is *not reproduced* when any metric is.

For an A/A trial every *not reproduced* is false; a known shift added to one metric's log
ratios makes a real change, and the share of comparisons that find it is the rule's power.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from repro.stats.sequential import Interval, Stopping, decide_paired, signed_rank_interval
from repro.stats.verdicts import decide_interval

IntervalRule = Callable[[np.ndarray, float], Interval]


@dataclass(frozen=True)
class Trial:
    """One recorded comparison: each judged metric's log ratio per round, and its tolerance."""

    logs: Mapping[str, Sequence[float]]
    tolerances: Mapping[str, float]
    load: str = ""

    @property
    def rounds(self) -> int:
        return min(len(v) for v in self.logs.values())


@dataclass(frozen=True)
class Judged:
    """A synthetic comparison judged: each metric's verdict and the rounds it took."""

    verdicts: dict[str, str]
    rounds: dict[str, int]

    @property
    def not_reproduced(self) -> bool:
        return "not reproduced" in self.verdicts.values()

    @property
    def reproduced(self) -> bool:
        return all(v == "reproduced" for v in self.verdicts.values())


@dataclass(frozen=True)
class Rate:
    """How often an outcome happened in `n` synthetic comparisons, with a 95 % Wilson interval."""

    hits: int
    n: int
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def value(self) -> float:
        return self.hits / self.n if self.n else math.nan

    @property
    def upper(self) -> float:
        """The upper end of the Wilson 95 % interval of the rate."""
        if not self.n:
            return math.nan
        z, p, n = 1.96, self.value, self.n
        centre = p + z * z / (2 * n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        return (centre + half) / (1 + z * z / n)


def block_bootstrap(
    trial: Trial, rounds: int, rng: np.random.Generator, *, block: int = 4, swap: bool = True
) -> dict[str, np.ndarray]:
    """`rounds` rounds drawn from a trial in circular blocks of `block` rounds that start at a
    pair (an odd round), every metric of a round together; with `swap`, each block's two sides
    swapped (its log ratios' signs flipped) with probability 1/2.

    Why the swap: the two sides of an A/A are exchangeable (which one is called the replay is
    arbitrary), so a block with its sides swapped is as likely an outcome as the one recorded.
    Without it, resampling a 10-round trial into 40 manufactures certainty about that trial's
    chance offset (a trial whose 10 rounds lean +7 % by chance becomes a machine 7 % apart);
    with it the null the A/A is holds, and the tails, the drift within a block and the
    correlation of the metrics of a round stay as recorded."""
    n = trial.rounds
    if n < 2:
        raise ValueError("a trial needs at least two rounds")
    block = max(2, min(block, n - n % 2))
    starts = np.arange(0, n - n % 2, 2)
    picks: list[int] = []
    signs: list[float] = []
    while len(picks) < rounds:
        s = int(rng.choice(starts))
        picks += [(s + i) % n for i in range(block)]
        signs += [-1.0 if swap and rng.random() < 0.5 else 1.0] * block
    index, sign = np.asarray(picks[:rounds]), np.asarray(signs[:rounds])
    return {name: sign * np.asarray(v, dtype=np.float64)[index] for name, v in trial.logs.items()}


def judge(
    logs: Mapping[str, np.ndarray],
    tolerances: Mapping[str, float],
    stopping: Stopping,
    *,
    overall: float = 0.95,
    rule: IntervalRule = signed_rank_interval,
    looks: Sequence[int] | None = None,
    confidence: float | None = None,
) -> Judged:
    """Each metric judged at the looks (default: the rule's, each at its share of `overall`;
    given looks are each at `confidence`), stopping once decided."""
    if confidence is None:
        confidence = stopping.confidence(overall)
    verdicts = dict.fromkeys(logs, "inconclusive")
    used = dict.fromkeys(logs, 0)
    open_ = set(logs)
    for k in looks or stopping.looks:
        if k < stopping.min_rounds:
            continue
        for name in sorted(open_):
            if rule is signed_rank_interval:  # the rule: `repro.stats.sequential.decide_paired`
                verdict = decide_paired(logs[name][:k], tolerances[name], confidence).verdict
            else:
                found = rule(logs[name][:k], confidence)
                _, lo, hi = found.relative()
                verdict = (
                    decide_interval(lo, hi, tolerances[name]) if found.finite else "inconclusive"
                )
            used[name] = k
            if verdict != "inconclusive":
                verdicts[name] = verdict
                open_.discard(name)
        if not open_:
            break
    return Judged(verdicts, used)


def simulate(
    material: Sequence[Trial],
    stopping: Stopping,
    *,
    comparisons: int = 2000,
    seed: int = 20261204,
    overall: float = 0.95,
    rule: IntervalRule = signed_rank_interval,
    shift: Mapping[str, float] | None = None,
    looks: Sequence[int] | None = None,
    confidence: float | None = None,
    block: int = 4,
    swap: bool = True,
) -> tuple[Rate, Rate]:
    """(not reproduced, reproduced) over `comparisons` synthetic comparisons drawn from the
    material; `shift` adds a log shift to named metrics (a real change)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    usable = [t for t in material if t.rounds >= 2]
    if not usable:
        raise ValueError("no trial with two rounds or more")
    nr = rp = 0
    for _ in range(comparisons):
        trial = usable[int(rng.integers(len(usable)))]
        logs = block_bootstrap(trial, stopping.max_rounds, rng, block=block, swap=swap)
        for name, s in (shift or {}).items():
            if name in logs:
                logs[name] = logs[name] + s
        judged = judge(
            logs,
            trial.tolerances,
            stopping,
            overall=overall,
            rule=rule,
            looks=looks,
            confidence=confidence,
        )
        nr += judged.not_reproduced
        rp += judged.reproduced
    return Rate(nr, comparisons), Rate(rp, comparisons)


def every_pair(stopping: Stopping, first: int = 2) -> list[int]:
    """The looks of the rule before issue 43: after every pair of rounds from `first`."""
    return list(range(first, stopping.max_rounds + 1, 2)) or [stopping.max_rounds]
