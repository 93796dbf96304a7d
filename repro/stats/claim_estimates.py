"""A claim's quantity from paired rounds: the estimate, its interval, the verdict, the match.

A performance claim's quantity is the ratio candidate/baseline. The two variants ran
interleaved, one test of each per round, so the per-round log ratio cancels what the machine did
during the round (randomized multiple interleaved trials: Abedi & Brecht, ICPE 2017), and the
rounds' spread is the error term (Kalibera & Jones, ISMM 2013): the signed-rank interval of the
rounds' log ratios (`repro.stats.sequential`), turned back into a ratio. A feasibility claim's
quantity is the margin (Server's latency percentile over its bound at the claimed rate), one per
round, in the same way. An accuracy drop is exact: the same model on the same data set scores
the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from repro.stats.sequential import MIN_ROUNDS, signed_rank_interval
from repro.stats.student_t import t_ppf
from repro.stats.verdicts import ClaimVerdict, MatchVerdict, decide_claim, decide_interval


@dataclass(frozen=True)
class ClaimEstimate:
    """A claim's quantity as measured: the value, its interval, and what it came from."""

    value: float
    lo: float
    hi: float
    method: str  # "paired-rounds", "rounds" or "exact"
    n: int
    #: the standard error and degrees of freedom of the mean log (None: exact)
    log_se: float | None = None
    df: int | None = None

    @property
    def ci(self) -> list[float] | None:
        """[lo, hi]; None when exact, or when the rounds are too few for an interval."""
        if self.method == "exact" or not (self.lo > 0 and math.isfinite(self.hi)):
            return None
        return [self.lo, self.hi]


@dataclass(frozen=True)
class ClaimJudgement:
    """The verdict on a claim, why, and (inconclusive) what the rounds could tell."""

    verdict: ClaimVerdict
    reason: str
    mde: float | None = None


def log_estimate(logs: Sequence[float], confidence: float, method: str) -> ClaimEstimate:
    """The centre of exp(logs) with its interval: the signed-rank interval of the rounds
    (`repro.stats.sequential`, the rule of every paired comparison), which spans everything
    on too few rounds, so that nothing is decided from them. The standard error of the mean log
    is kept for what the rounds could tell and how many more would (`smallest_difference`,
    `rounds_needed`) and for the match with the original's figure. On fewer rounds than the
    rule's minimum (MIN_ROUNDS) the interval spans everything too."""
    x = np.asarray(logs, dtype=np.float64)
    found = signed_rank_interval(x, confidence)
    value, lo, hi = found.ratio()
    if len(x) < MIN_ROUNDS:  # no verdict on fewer rounds than the rule's minimum
        lo, hi = 0.0, math.inf
    if len(x) < 2:
        return ClaimEstimate(value, lo, hi, method, len(x))
    se = float(x.std(ddof=1) / math.sqrt(len(x)))
    return ClaimEstimate(value, lo, hi, method, len(x), se, len(x) - 1)


def ratio_estimate(
    baseline: Sequence[float], candidate: Sequence[float], *, confidence: float
) -> ClaimEstimate:
    """candidate/baseline from one pair of values per round."""
    if len(baseline) != len(candidate) or not baseline:
        raise ValueError("need one value of each variant per round")
    if min(baseline) <= 0 or min(candidate) <= 0:
        raise ValueError("a metric is not a positive number")
    logs = [math.log(c / b) for b, c in zip(baseline, candidate, strict=True)]
    return log_estimate(logs, confidence, "paired-rounds")


def margin_estimate(margins: Sequence[float], *, confidence: float) -> ClaimEstimate:
    """Server's latency percentile over its bound, one per round."""
    if not margins or min(margins) <= 0:
        raise ValueError("need a positive margin per round")
    return log_estimate([math.log(m) for m in margins], confidence, "rounds")


def exact_estimate(value: float) -> ClaimEstimate:
    """A deterministic quantity (an accuracy drop or ratio): no interval but the value."""
    return ClaimEstimate(value, value, value, "exact", 1)


def judge(
    estimate: ClaimEstimate, relation: str, bound: float, *, confidence: float
) -> ClaimJudgement:
    """The claim `quantity relation bound` against the estimate's interval."""
    verdict = decide_claim(estimate.lo, estimate.hi, relation, bound)
    shown = _interval(estimate)
    if verdict == "holds":
        return ClaimJudgement(verdict, f"{shown} lies inside {relation} {bound:g}")
    if verdict == "does not hold":
        return ClaimJudgement(verdict, f"{shown} lies outside {relation} {bound:g}")
    mde = smallest_difference(estimate, confidence)
    if mde is None:
        return ClaimJudgement(
            verdict, f"{shown} straddles {bound:g}: one round has no interval; more rounds"
        )
    if estimate.n < MIN_ROUNDS and estimate.method != "exact":
        # the interval spans everything below the rule's minimum: the reason is the count,
        # not the estimate's place (a ratio of 11 "straddled" a bound of 3)
        return ClaimJudgement(
            verdict,
            f"{estimate.value:.3g} from {estimate.n} counted round(s): undecided, the rule "
            f"decides on {MIN_ROUNDS} counted rounds or more (raise --max-rounds)",
            mde,
        )
    if mde > 1:  # "differed by 2230637.0 % or more" told nothing: the interval is the fact
        bounded = estimate.lo > 0 and math.isfinite(estimate.hi)
        span = f"spans a factor of {estimate.hi / estimate.lo:.3g}" if bounded else "is unbounded"
        return ClaimJudgement(
            verdict,
            f"{shown} straddles {bound:g}: its interval {span}, too wide to tell the ratio from "
            f"the bound (the rounds are too few or too noisy)"
            f"{_rounds_needed(estimate, bound, confidence)}",
            mde,
        )
    return ClaimJudgement(
        verdict,
        f"{shown} straddles {bound:g}: the rounds could tell the ratio from the bound only "
        f"if they differed by {mde:.1%} or more{_rounds_needed(estimate, bound, confidence)}",
        mde,
    )


def rounds_needed(estimate: ClaimEstimate, bound: float, *, confidence: float) -> int | None:
    """About how many rounds, at the spread these had, would tell this estimate from the bound
    (the same confidence, 80 % power; a normal approximation): None without a spread or when
    the estimate is on the bound."""
    if estimate.log_se is None or estimate.n < 2:
        return None
    gap = abs(math.log(estimate.value) - math.log(bound))
    if gap == 0:
        return None
    sd = estimate.log_se * math.sqrt(estimate.n)
    z = _z(0.5 + confidence / 2) + _z(0.80)
    # never fewer than the rule decides on: one number, not "about 7" beside "the 8 it needs"
    return max(math.ceil((z * sd / gap) ** 2), estimate.n + 1, MIN_ROUNDS)


def _rounds_needed(estimate: ClaimEstimate, bound: float, confidence: float) -> str:
    needed = rounds_needed(estimate, bound, confidence=confidence)
    if needed is None:
        return ""
    sd = (estimate.log_se or 0.0) * math.sqrt(estimate.n)
    shown = f"about {needed}" if needed <= 1000 else "more than 1000"
    return (
        f"; at the rounds' noise (one round's log sd {sd:.3f}) {shown} rounds would "
        f"tell {estimate.value:.3g} from {bound:g} (--max-rounds, or a quieter machine)"
    )


def _z(p: float) -> float:
    """The standard normal quantile (Student t with very many degrees of freedom)."""
    return t_ppf(p, 1_000_000)


def judge_margin(
    estimate: ClaimEstimate, relation: str, bound: float, *, confidence: float
) -> ClaimJudgement:
    """A feasibility claim `Server's valid rate / Offline throughput relation bound` from the
    margin at `bound` x the Offline rate: within the latency bound (margin < 1), Server's
    highest valid rate is at least that; beyond it, less (a queue only grows with the rate)."""
    within = decide_claim(estimate.lo, estimate.hi, "<=", 1.0)
    if within == "inconclusive":
        found = judge(estimate, "<=", 1.0, confidence=confidence)
        return ClaimJudgement("inconclusive", f"the margin {found.reason}", found.mde)
    holds_there = within == "holds"
    verdict: ClaimVerdict = "holds" if holds_there == (relation == ">=") else "does not hold"
    said = "within" if holds_there else "beyond"
    return ClaimJudgement(
        verdict,
        f"at {bound:g} x the Offline rate the latency percentile is {_interval(estimate)} of "
        f"its bound: {said} it, so Server's highest valid rate is "
        f"{'at least' if holds_there else 'below'} {bound:g} x the Offline throughput",
    )


def smallest_difference(estimate: ClaimEstimate, confidence: float) -> float | None:
    """The relative difference a test at this confidence would detect with 80 % power."""
    if estimate.log_se is None or estimate.df is None:
        return None
    t = t_ppf(0.5 + confidence / 2, estimate.df) + t_ppf(0.80, estimate.df)
    return math.expm1(t * estimate.log_se)


def match_original(
    here: ClaimEstimate,
    original: ClaimEstimate | None,
    *,
    tolerance: float,
    drop: bool,
    confidence: float,
) -> tuple[MatchVerdict, str]:
    """Whether this machine's quantity matches the original's: the interval of here/original
    - 1 (for a drop: here - original) within +-tolerance."""
    if original is None:
        return "no original", "the spec has no evidence of this claim (`repro claim measure`)"
    if drop or here.method == "exact" or original.method == "exact":
        diff = here.value - original.value if drop else here.value / original.value - 1
        exact: MatchVerdict = "matches" if abs(diff) <= tolerance else "differs"
        unit = f"{diff:+.4f}" if drop else f"{diff:+.1%}"
        return exact, f"{unit} from the original's (tolerance +/-{tolerance:g}; exact)"
    if original.log_se is None or here.log_se is None or original.df is None or here.df is None:
        return "inconclusive", "a side measured one round: no interval to compare"
    d = math.log(here.value) - math.log(original.value)
    se = math.hypot(here.log_se, original.log_se)
    df = _welch_df(here.log_se, here.df, original.log_se, original.df)
    t = t_ppf(0.5 + confidence / 2, df)
    lo, hi = math.expm1(d - t * se), math.expm1(d + t * se)
    verdict = decide_interval(lo, hi, tolerance)
    word: MatchVerdict = (
        "matches"
        if verdict == "reproduced"
        else "differs"
        if verdict == "not reproduced"
        else "inconclusive"
    )
    return word, (
        f"{math.expm1(d):+.1%} from the original's, interval [{lo:+.1%}, {hi:+.1%}] "
        f"(tolerance +/-{tolerance:.0%})"
    )


def _welch_df(se_a: float, df_a: int, se_b: float, df_b: int) -> int:
    """Welch-Satterthwaite degrees of freedom of a difference of two means, at least 1."""
    va, vb = se_a**2, se_b**2
    if va + vb == 0:
        return max(df_a + df_b, 1)
    return max(int((va + vb) ** 2 / (va**2 / df_a + vb**2 / df_b)), 1)


def _interval(estimate: ClaimEstimate) -> str:
    if estimate.method == "exact":
        return f"{estimate.value:.4g} (exact)"
    if math.isinf(estimate.hi) or estimate.lo == 0:
        rounds = (
            "one round"
            if estimate.n == 1
            else f"{estimate.n} rounds: fewer than the {MIN_ROUNDS} a paired verdict needs"
        )
        return f"{estimate.value:.3g} ({rounds})"
    return f"{estimate.value:.3g} [{estimate.lo:.3g}, {estimate.hi:.3g}]"
