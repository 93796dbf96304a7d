"""A claim's quantity from paired rounds, its verdict against the bound, and the match with the
original's, on seeded data with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.stats.claim_estimates import (
    exact_estimate,
    judge,
    judge_margin,
    margin_estimate,
    match_original,
    ratio_estimate,
    rounds_needed,
)
from repro.stats.verdicts import claims_exit_code, claims_verdict, decide_claim


@pytest.mark.parametrize(
    ("lo", "hi", "relation", "bound", "verdict"),
    [
        (1.7, 1.9, ">=", 1.6, "holds"),
        (1.4, 1.5, ">=", 1.6, "does not hold"),
        (1.5, 1.7, ">=", 1.6, "inconclusive"),
        (0.5, 0.6, "<=", 0.67, "holds"),
        (0.7, 0.8, "<=", 0.67, "does not hold"),
        (0.6, 0.7, "<=", 0.67, "inconclusive"),
        (1.6, 1.6, ">=", 1.6, "holds"),  # on the bound is inside it
    ],
)
def test_a_claim_is_decided_by_where_its_interval_lies(
    lo: float, hi: float, relation: str, bound: float, verdict: str
) -> None:
    assert decide_claim(lo, hi, relation, bound) == verdict


def test_the_ratio_is_the_centre_of_the_rounds_with_a_signed_rank_interval() -> None:
    base = [100.0, 50.0, 80.0, 120.0] * 2
    est = ratio_estimate(base, [2 * b for b in base], confidence=0.95)
    assert est.value == pytest.approx(2.0)
    assert est.lo == pytest.approx(2.0)  # the same ratio every round: no spread
    assert est.method == "paired-rounds"
    assert est.n == 8


def test_fewer_rounds_than_the_rules_minimum_decide_nothing() -> None:
    base = [100.0, 50.0, 80.0, 120.0, 90.0, 110.0]
    est = ratio_estimate(base, [2 * b for b in base], confidence=0.95)
    assert est.ci is None  # 6 rounds agree exactly, and still: no interval
    found = judge(est, ">=", 1.5, confidence=0.95)
    assert found.verdict == "inconclusive"
    # the count is the reason, not the estimate's place against the bound (a ratio of 11
    # "straddled" 3, and "could tell the ratio from the bound only if they differed by 21.6 %")
    assert found.reason == (
        "2 from 6 counted round(s): undecided, the rule decides on 8 counted rounds or more "
        "(raise --max-rounds)"
    )


def test_a_phase_of_the_machine_cancels_within_each_round() -> None:
    """The machine halves its speed in some rounds: both variants slow together, the ratio
    stays 1.8 with a narrow interval."""
    rng = np.random.Generator(np.random.PCG64(0))
    phase = rng.choice([0.5, 1.0], size=8)
    base = list(100 * phase * rng.normal(1, 0.01, 8))
    cand = list(180 * phase * rng.normal(1, 0.01, 8))
    est = ratio_estimate(base, cand, confidence=0.95)
    assert 1.75 < est.lo < est.value < est.hi < 1.85
    assert judge(est, ">=", 1.6, confidence=0.95).verdict == "holds"
    assert judge(est, ">=", 2.0, confidence=0.95).verdict == "does not hold"


def test_one_round_decides_nothing() -> None:
    est = ratio_estimate([100.0], [180.0], confidence=0.95)
    assert math.isinf(est.hi)
    found = judge(est, ">=", 1.0, confidence=0.95)
    assert found.verdict == "inconclusive"
    assert "one round" in found.reason


def test_an_undecided_claim_says_the_smallest_difference_the_rounds_could_tell() -> None:
    rng = np.random.Generator(np.random.PCG64(1))
    base = list(100 * rng.uniform(0.7, 1.3, 8))
    cand = list(160 * rng.uniform(0.7, 1.3, 8))
    est = ratio_estimate(base, cand, confidence=0.95)
    found = judge(est, ">=", est.value, confidence=0.95)
    assert found.verdict == "inconclusive"
    assert found.mde is not None
    assert found.mde > 0.05
    assert f"{found.mde:.1%}" in found.reason


def test_an_undecided_claim_says_how_many_rounds_this_noise_would_need() -> None:
    # log ratios 0.5 +- 0.3 (sd 0.32 over 8 rounds), 0.1 from a bound of e^0.4
    logs = [0.2, 0.8] * 4
    est = ratio_estimate([1.0] * 8, [math.exp(x) for x in logs], confidence=0.95)
    sd = float(np.std(logs, ddof=1))
    found = judge(est, ">=", math.exp(0.4), confidence=0.95)
    assert found.verdict == "inconclusive"
    needed = rounds_needed(est, math.exp(0.4), confidence=0.95)
    assert needed == math.ceil(((1.95996 + 0.84162) * sd / 0.1) ** 2)  # 81
    assert f"about {needed} rounds would tell" in found.reason
    assert f"sd {sd:.3f}" in found.reason
    # on the bound itself no number of rounds tells them apart
    assert rounds_needed(est, est.value, confidence=0.95) is None


def test_a_feasibility_holds_within_the_latency_bound_and_fails_beyond_it() -> None:
    within = margin_estimate([0.4, 0.45, 0.42, 0.41] * 2, confidence=0.95)
    beyond = margin_estimate([1.6, 1.5, 1.7, 1.55] * 2, confidence=0.95)
    straddles = margin_estimate([0.6, 1.4, 0.7, 1.3] * 2, confidence=0.95)
    assert judge_margin(within, ">=", 0.75, confidence=0.95).verdict == "holds"
    assert judge_margin(beyond, ">=", 0.75, confidence=0.95).verdict == "does not hold"
    assert judge_margin(straddles, ">=", 0.75, confidence=0.95).verdict == "inconclusive"
    # `<=`: the claim that Server cannot hold the bound at that rate
    assert judge_margin(beyond, "<=", 0.75, confidence=0.95).verdict == "holds"
    assert "at least 0.75 x the Offline" in judge_margin(within, ">=", 0.75, confidence=0.95).reason


def test_an_accuracy_drop_is_exact() -> None:
    est = exact_estimate(0.97 - 0.95)
    assert est.ci is None
    assert judge(est, "<=", 0.03, confidence=0.95).verdict == "holds"
    assert judge(est, "<=", 0.01, confidence=0.95).verdict == "does not hold"


def test_the_ratio_matches_the_original_within_the_tolerance() -> None:
    original = ratio_estimate([100.0, 101, 99, 100], [180.0, 182, 178, 181], confidence=0.95)
    same = ratio_estimate([50.0, 51, 49, 50], [90.0, 91.5, 88.5, 90], confidence=0.95)
    other = ratio_estimate([100.0, 101, 99, 100], [120.0, 121, 119, 120], confidence=0.95)
    assert match_original(same, original, tolerance=0.05, drop=False, confidence=0.95)[0] == (
        "matches"
    )
    assert match_original(other, original, tolerance=0.05, drop=False, confidence=0.95)[0] == (
        "differs"
    )
    assert match_original(same, None, tolerance=0.05, drop=False, confidence=0.95)[0] == (
        "no original"
    )
    drop_here, drop_there = exact_estimate(0.03), exact_estimate(0.035)
    assert match_original(drop_here, drop_there, tolerance=0.01, drop=True, confidence=0.95)[0] == (
        "matches"
    )


def test_the_claims_exit_code_follows_the_worst_claim() -> None:
    assert claims_verdict(["holds", "inconclusive"]) == "inconclusive"
    assert claims_verdict([]) == "inconclusive"
    assert claims_exit_code(["holds", "holds"], strict=True) == 0
    assert claims_exit_code(["holds", "inconclusive"], strict=False) == 0
    assert claims_exit_code(["holds", "inconclusive"], strict=True) == 1
    assert claims_exit_code(["does not hold", "holds"], strict=False) == 1


def test_an_interval_too_wide_to_tell_is_said_as_such_not_as_a_huge_percentage() -> None:
    """A claim's reason said it "differed by 2230637.0 % or more"."""
    from repro.stats.claim_estimates import ClaimEstimate, judge

    wide = ClaimEstimate(1.5, 0.001, 900.0, "paired-rounds", 8, log_se=3.0, df=7)
    found = judge(wide, ">=", 1.8, confidence=0.95)
    assert found.verdict == "inconclusive"
    assert "%" not in found.reason.split("rounds would")[0]
    assert "too wide to tell the ratio from the bound" in found.reason
    assert "a factor of 9e+05" in found.reason
