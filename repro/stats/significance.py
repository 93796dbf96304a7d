"""Noise-aware verdicts: bootstrap confidence intervals and an equivalence test.

For a metric with a relative tolerance `tol`, the difference is d = replay / original - 1; this
module estimates d and its confidence interval, and `repro.stats.verdicts` decides from them.
When the verdict is inconclusive the report gives the smallest difference the data could
detect. With one value on each side there is no interval: a point comparison, labelled as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

import numpy as np

from repro.stats.histogram import LatencyHistogram
from repro.stats.sequential import MIN_ROUNDS, decide_paired, first_finite
from repro.stats.student_t import t_ppf
from repro.stats.verdicts import Verdict, decide_accuracy, decide_interval, decide_point

Method = Literal[
    "bootstrap-runs",
    "bootstrap-queries",
    "student-t",
    "pooled-noise",
    "point",
    "exact",
    "probe-adjusted",
    "paired-rounds",
]
#: runs per side from which the run-level bootstrap is used instead of a t interval
MIN_BOOTSTRAP_RUNS = 5
#: z(0.975) + z(0.80): the difference a two-sided 5 % test detects with 80 % power, per SE
MDE_FACTOR = 2.8
SEED = 20261129


@dataclass(frozen=True)
class Comparison:
    """The outcome for one metric."""

    verdict: Verdict
    method: Method
    delta_rel: float  # point estimate of replay / original - 1
    ci: tuple[float, float] | None  # interval of delta_rel
    mde_rel: float | None = None  # smallest detectable relative difference (inconclusive)
    reason: str = ""
    extra: dict[str, float] = field(default_factory=dict)


def _interval(boot: np.ndarray, confidence: float) -> tuple[float, float]:
    a = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [a, 1 - a])
    return float(lo), float(hi)


def compare_runs(
    original: list[float],
    replay: list[float],
    *,
    tol: float,
    confidence: float = 0.95,
    n_boot: int = 4000,
) -> Comparison:
    """Compare run-level values (one per repeated run) of a metric."""
    a = np.asarray(original, dtype=np.float64)
    b = np.asarray(replay, dtype=np.float64)
    if len(a) == 0 or len(b) == 0 or np.any(a <= 0) or np.any(b <= 0):
        raise ValueError("need positive values on both sides")
    delta = float(b.mean() / a.mean() - 1)
    if len(a) == 1 and len(b) == 1:
        return Comparison(
            decide_point(delta, tol),
            "point",
            delta,
            None,
            reason=f"replay {delta:+.1%} vs tolerance +/-{tol:.0%}; one run on each side: "
            "a point comparison, no interval",
        )
    if len(a) >= MIN_BOOTSTRAP_RUNS and len(b) >= MIN_BOOTSTRAP_RUNS:
        rng = np.random.Generator(np.random.PCG64(SEED))
        ma = rng.choice(a, size=(n_boot, len(a))).mean(axis=1)
        mb = rng.choice(b, size=(n_boot, len(b))).mean(axis=1)
        lo, hi = _interval(mb / ma - 1, confidence)
        mde_value = MDE_FACTOR * float(np.std(mb / ma - 1))
        method: Method = "bootstrap-runs"
    else:
        lo, hi, _, mde_value, method = _t_interval(a, b, delta, confidence)
    verdict = decide_interval(lo, hi, tol)
    mde = mde_value if verdict == "inconclusive" else None
    return Comparison(
        verdict, method, delta, (lo, hi), mde, _reason(verdict, delta, tol, mde, (lo, hi))
    )


def _t_interval(
    a: np.ndarray, b: np.ndarray, delta: float, confidence: float
) -> tuple[float, float, float, float, Method]:
    """A pooled-variance t interval of replay/original - 1 (delta method on relative values).

    With fewer than MIN_BOOTSTRAP_RUNS runs a bootstrap has too few distinct resamples to be
    trusted; t quantiles widen the interval honestly. Variances are pooled: under the
    hypothesis that the result reproduces, both sides are draws of one experiment on one kind
    of machine. A side with a single run takes the other side's run-to-run variance.
    Returns (lo, hi, se, mde, method).
    """
    rel_a, rel_b = a / a.mean(), b / b.mean()
    ss = float(((rel_a - 1) ** 2).sum() + ((rel_b - 1) ** 2).sum())
    df = (len(a) - 1) + (len(b) - 1)
    pooled_var = ss / df
    se = (1 + delta) * float(np.sqrt(pooled_var * (1 / len(a) + 1 / len(b))))
    t = t_ppf(0.5 + confidence / 2, df)
    mde = (t + t_ppf(0.80, df)) * se
    method: Method = "student-t" if len(a) > 1 and len(b) > 1 else "pooled-noise"
    return delta - t * se, delta + t * se, se, mde, method


def compare_percentile(
    original: LatencyHistogram,
    replay: LatencyHistogram,
    q: float,
    *,
    tol: float,
    confidence: float = 0.95,
    n_boot: int = 400,
    point: tuple[float, float] | None = None,
) -> Comparison:
    """Compare a latency percentile by resampling the queries of each side (multinomial).

    `point` gives the (original, replay) values LoadGen reported; the interval's spread comes
    from the bootstrap of the per-query latencies.
    """
    rng = np.random.Generator(np.random.PCG64(SEED))
    sa = _boot_percentile(original, q, n_boot, rng)
    sb = _boot_percentile(replay, q, n_boot, rng)
    pa = point[0] if point else original.percentile(q)
    pb = point[1] if point else replay.percentile(q)
    delta = pb / pa - 1
    boot = sb / sa - 1
    boot = boot - np.median(boot) + delta  # centre the spread on LoadGen's values
    lo, hi = _interval(boot, confidence)
    verdict = decide_interval(lo, hi, tol)
    mde = MDE_FACTOR * float(np.std(boot)) if verdict == "inconclusive" else None
    return Comparison(
        verdict,
        "bootstrap-queries",
        delta,
        (lo, hi),
        mde,
        _reason(verdict, delta, tol, mde) + " (within-run noise of the queries)",
        {"queries_original": original.total, "queries_replay": replay.total},
    )


def _boot_percentile(
    h: LatencyHistogram, q: float, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    p = h.counts / h.total
    counts = rng.multinomial(h.total, p, size=n_boot)
    return h.percentiles_of(counts, q)


def compare_accuracy(
    original: float,
    replay: float,
    *,
    ratio: float,
    higher_is_better: bool = True,
    percent: bool = True,
) -> Comparison:
    """Accuracy is reproduced when the replay reaches `ratio` x the original (MLPerf: 0.99),
    or for a lower-is-better figure stays within the original / `ratio`."""
    delta = replay / original - 1 if original else 0.0
    verdict = decide_accuracy(original, replay, ratio=ratio, higher_is_better=higher_is_better)
    ok = verdict == "reproduced"
    if higher_is_better and percent:
        reason = (
            f"replay accuracy {replay:.4%} {'>=' if ok else '<'} {ratio:g} x original "
            f"{original:.4%} = {ratio * original:.4%}"
        )
    elif higher_is_better:
        reason = (
            f"replay {replay:.6g} {'>=' if ok else '<'} {ratio:g} x original {original:.6g} = "
            f"{ratio * original:.6g}"
        )
    else:
        reason = (
            f"replay {replay:.6g} {'<=' if ok else '>'} original {original:.6g} / {ratio:g} = "
            f"{original / ratio:.6g} (lower is better)"
        )
    return Comparison(verdict, "exact", delta, None, reason=reason)


def _reason(
    verdict: Verdict,
    delta: float,
    tol: float,
    mde: float | None,
    ci: tuple[float, float] | None = None,
) -> str:
    if verdict == "reproduced":
        return f"the interval of the difference lies within +/-{tol:.0%}"
    if verdict == "not reproduced":
        side = "higher" if delta > 0 else "lower"
        return f"the replay is {abs(delta):.1%} {side}; the interval lies outside +/-{tol:.0%}"
    if ci is not None and ci[1] - ci[0] < 2 * tol and abs(delta) >= tol / 2:
        edge = tol if delta > 0 else -tol
        return (
            f"the difference ({delta:+.1%}) sits at the tolerance's edge: its interval "
            f"[{ci[0]:+.1%}, {ci[1]:+.1%}] straddles {edge:+.0%}; more repeats (--repeat) "
            "narrow it"
        )
    return (
        f"the noise is larger than the tolerance: the data could only detect a difference "
        f"of about {mde:.1%} (tolerance {tol:.0%}); run more repeats (--repeat)"
    )


def _more_rounds(flag: str) -> str:
    """What gives paired rounds more: the knob that stopped them."""
    if flag == "--max-time":
        return "give the rounds more time (--max-time: the time cap stopped them)"
    return f"run more rounds ({flag})"


def compare_paired(
    original: list[float],
    replay: list[float],
    *,
    tol: float,
    confidence: float = 0.95,
    min_rounds: int = MIN_ROUNDS,
    more: str = "--max-rounds",
) -> Comparison:
    """Compare interleaved rounds: one (original, replay) pair per round, run back to back.

    The per-round log ratio cancels what the machine did during the round (Abedi & Brecht's
    randomized interleaved trials; Bulej et al.'s duet benchmarking), and its round-to-round
    spread is the error term at the level where the drift lives (Kalibera & Jones). The
    interval is the signed-rank interval of the rounds' centre (`repro.stats.sequential`: exact
    whatever the tails, for the symmetric log ratios an A/A gives), at `confidence` (a look's,
    when the rounds looked more than once), turned back into replay / original - 1; on fewer
    than `min_rounds` rounds nothing is decided.
    """
    a = np.asarray(original, dtype=np.float64)
    b = np.asarray(replay, dtype=np.float64)
    if len(a) != len(b) or len(a) == 0 or np.any(a <= 0) or np.any(b <= 0):
        raise ValueError("need one positive value per round on both sides")
    logs = np.log(b / a)
    decided = decide_paired(logs, tol, confidence)
    found = decided.interval
    delta = float(np.expm1(found.center))
    extra = {"rounds": float(len(logs)), "confidence": confidence}
    if len(logs) < min_rounds or not found.finite:
        need = max(min_rounds, first_finite(confidence))
        return Comparison(
            "inconclusive",
            "paired-rounds",
            delta,
            None,
            reason=f"replay {delta:+.1%} vs tolerance +/-{tol:.0%} over {len(logs)} paired "
            f"round(s): a paired verdict needs at least {need} (fewer decided identical "
            f"software wrongly in recorded A/A rounds); {_more_rounds(more)}",
            extra=extra,
        )
    _, lo, hi = found.relative()
    verdict = decided.verdict
    mde = None
    if verdict == "inconclusive":
        half = (found.hi - found.lo) / 2
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        mde = float(np.expm1(half * (1 + NormalDist().inv_cdf(0.80) / z)))
    if verdict == "inconclusive" and decide_interval(lo, hi, tol) == "not reproduced":
        _, slo, shi = decided.strict.relative()
        reason = (
            f"the replay is {abs(delta):.1%} {'higher' if delta > 0 else 'lower'} and the "
            f"interval lies outside +/-{tol:.0%}, but not the stricter one a 'not reproduced' "
            f"also needs ([{slo:+.1%}, {shi:+.1%}] at {decided.strict.confidence:.4g}); "
            f"{_more_rounds(more)}"
        )
    else:
        reason = _reason(verdict, delta, tol, mde, (lo, hi)).replace(
            "run more repeats (--repeat)", _more_rounds(more)
        )
    return Comparison(
        verdict,
        "paired-rounds",
        delta,
        (lo, hi),
        mde,
        reason + f" ({len(logs)} paired rounds, signed-rank interval at {confidence:.4g})",
        extra,
    )
