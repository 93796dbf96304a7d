"""The verdict rules, in one place: a metric, LoadGen's validity, a test, a scenario, a report.

For a metric with a relative tolerance `tol`, the difference is d = replay / original - 1.
  reproduced        the confidence interval of d lies inside [-tol, +tol]
  not reproduced    the interval lies wholly outside it
  inconclusive      otherwise
A performance metric is also compared after adjusting each run by the machine's measured speed
(a probe: see `repro.probes`), which combines with the raw verdict:
  reproduced after machine adjustment   raw not reproduced or inconclusive, adjusted inside:
                                        the machine differed, the software did not
  not reproduced                        the adjusted interval lies outside as well: the
                                        software or settings differ
  inconclusive: machine busy            interleaved rounds whose two sides ran beside different
                                        shares of other work (the probes' others_cpu_frac,
                                        beyond their own noise), and the busier side is the
                                        slower one: the load, not the software, may be why
  inconclusive: machine unstable        the probe moved by more than the tolerance within a
                                        side, and nothing else decides; or the slower side
                                        shared its machine with other work (other processes
                                        took > 10 % of the CPU time during its tests)
  not comparable: different hardware    CPU model, core count or accelerator differ: speed is
                                        shown for information; accuracy is still judged
  not comparable: hardware unknown      no fact of the hardware is known to both sides (a
                                        published result without its system description):
                                        speed is shown for information; accuracy is judged
  not comparable: different benchmarks  the sides ran different benchmarks (a report asked for
                                        with --allow-different-benchmarks): every row is shown
                                        for information, nothing is judged
LoadGen's validity: not reproduced when most replay runs are INVALID while most original runs
were VALID, or when the replay is INVALID more often than chance (Fisher's exact test, p < 0.05);
an occasional INVALID run (a latency bound broken by a loaded machine) is not a regression;
and when the replay ran beside other work (other processes took > 10 % of the CPU time during
its tests) its INVALID runs are undecided, inconclusive: machine unstable, as its speed is.
A scenario and a report take the worst verdict of their parts. The exit code follows `diff`:
0 reproduced, with or without adjustment (or inconclusive or not comparable, unless strict);
1 not reproduced.

A claim (`repro.spec.claims`) bounds a ratio (or an accuracy drop) by `relation bound`:
  holds             the interval of the ratio lies inside the claimed side of the bound
  does not hold     it lies wholly on the other side
  inconclusive      it straddles the bound (at the cap: with the smallest difference the rounds
                    could tell)
and, separately, the ratio matches the original's when the interval of here / original - 1 lies
within the metric's tolerance (differs: outside; inconclusive: straddles). Claims exit 1 when
one does not hold, 0 otherwise (1 with strict when one is inconclusive).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Final, Literal

from repro.errors import EXIT_NEGATIVE, EXIT_OK

Verdict = Literal[
    "reproduced",
    "reproduced after machine adjustment",
    "not reproduced",
    "inconclusive",
    "inconclusive: machine unstable",
    "inconclusive: machine busy",
    "not comparable: different hardware",
    "not comparable: hardware unknown",
    "not comparable: different benchmarks",
]
#: worst first: a roll-up takes the first of these its parts have
SEVERITY: Final[tuple[Verdict, ...]] = (
    "not reproduced",
    "inconclusive: machine unstable",
    "inconclusive: machine busy",
    "inconclusive",
    "not comparable: different benchmarks",
    "not comparable: different hardware",
    "not comparable: hardware unknown",
    "reproduced after machine adjustment",
    "reproduced",
)
VERDICTS: Final[tuple[Verdict, ...]] = SEVERITY
#: verdicts that leave a metric undecided: more rounds, or a quieter machine, may decide it
UNDECIDED: Final = frozenset(
    {"inconclusive", "inconclusive: machine unstable", "inconclusive: machine busy"}
)
#: verdicts that are a success (exit 0 even with --strict)
POSITIVE: Final = frozenset({"reproduced", "reproduced after machine adjustment"})
ClaimVerdict = Literal["holds", "does not hold", "inconclusive"]
#: worst first
CLAIM_SEVERITY: Final[tuple[ClaimVerdict, ...]] = ("does not hold", "inconclusive", "holds")
MatchVerdict = Literal["matches", "differs", "inconclusive", "no original"]
TestStatus = Literal["valid", "invalid", "failed", "interrupted"]
RunStatus = Literal["complete", "invalid", "failed", "interrupted"]


def decide_interval(lo: float, hi: float, tol: float) -> Verdict:
    """An equivalence test: the interval [lo, hi] of d against [-tol, +tol]."""
    if -tol <= lo and hi <= tol:
        return "reproduced"
    if hi < -tol or lo > tol:
        return "not reproduced"
    return "inconclusive"


def decide_point(delta: float, tol: float) -> Verdict:
    """One value on each side: no interval, the point estimate decides."""
    return "reproduced" if abs(delta) <= tol else "not reproduced"


def decide_accuracy(
    original: float, replay: float, *, ratio: float, higher_is_better: bool = True
) -> Verdict:
    """Accuracy is reproduced when the replay reaches `ratio` x the original (MLPerf: 0.99);
    for a lower-is-better figure (word error rate, FID), at most the original / `ratio`."""
    if higher_is_better:
        return "reproduced" if replay >= ratio * original else "not reproduced"
    return "reproduced" if replay * ratio <= original else "not reproduced"


#: what a run INVALID on both sides most likely missed, per scenario, and what to change
_NEVER_VALID = {
    "Server": "neither side met its latency bound at its target rate: raise "
    "server_target_latency_ns or lower server_target_qps",
    "Offline": "neither side's query lasted min_duration: raise offline_expected_qps",
    "SingleStream": "neither side met its early-stopping or duration minimums: raise "
    "min_duration_ms or min_query_count",
    "MultiStream": "neither side met its early-stopping or duration minimums: raise "
    "min_duration_ms or min_query_count",
}


def decide_validity(
    original: list[str], replay: list[str], scenario: str | None = None
) -> tuple[Verdict, str]:
    """LoadGen's VALID/INVALID on each side.

    A latency bound breaks at random on a loaded machine, so one INVALID run among several is
    not a regression by itself: the replay fails when most of its runs are INVALID while most of
    the original's were VALID, or when it is INVALID more often than chance allows (Fisher's
    exact test, one-sided, p < 0.05). A single replay run that is INVALID against a VALID
    original is most of its runs: it fails.
    """
    na, nb = len(original), len(replay)
    a_bad = sum(v != "VALID" for v in original)
    b_bad = sum(v != "VALID" for v in replay)
    if b_bad == 0:
        return "reproduced", (
            "LoadGen judged every run VALID"
            if a_bad == 0
            else "LoadGen judged every replay run VALID"
        )
    if a_bad == na and b_bad == nb:  # the same, and nothing to be pleased about
        advice = _NEVER_VALID.get(scenario or "", "neither side met LoadGen's minimums")
        return "reproduced", (
            f"the same on both sides, and every run INVALID ({na} original, {nb} replay): "
            f"{advice} (LoadGen's summary says which minimum each run missed)"
        )
    if a_bad == na:
        return "reproduced", "the original was not VALID either"
    said = f"LoadGen judged {b_bad} of {nb} replay run(s) INVALID, {a_bad} of {na} original run(s)"
    if 2 * b_bad > nb and 2 * a_bad < na:  # most replay runs INVALID, most original VALID
        return "not reproduced", f"{said}: most replay runs are INVALID"
    if b_bad * na <= a_bad * nb:
        return "reproduced", f"{said}: no more often than the original"
    p = fisher_greater(b_bad, nb, a_bad, na)
    if p < 0.05:
        return "not reproduced", f"{said}: more often than chance (Fisher's exact test p = {p:.3f})"
    return "reproduced", (
        f"{said}: no more often than chance (Fisher's exact test p = {p:.2f}); a latency bound "
        "breaks at random on a loaded machine"
    )


def fisher_greater(b_bad: int, nb: int, a_bad: int, na: int) -> float:
    """P(the replay has at least `b_bad` bad runs of `nb`) if both sides share one rate: the
    one-sided p of Fisher's exact test (hypergeometric tail)."""
    total, bad = na + nb, a_bad + b_bad
    denominator = math.comb(total, nb)
    return (
        sum(
            math.comb(bad, x) * math.comb(total - bad, nb - x)
            for x in range(b_bad, min(bad, nb) + 1)
        )
        / denominator
    )


def combine(raw: Verdict, adjusted: Verdict | None, *, unstable: bool) -> Verdict:
    """A performance metric's verdict from its raw and machine-adjusted comparisons."""
    if raw == "reproduced" or adjusted is None:
        return "inconclusive: machine unstable" if raw == "inconclusive" and unstable else raw
    if adjusted == "reproduced":
        return "reproduced after machine adjustment"
    if adjusted == "not reproduced":
        return "not reproduced"
    return "inconclusive: machine unstable" if unstable else "inconclusive"


def roll_up(verdicts: Iterable[Verdict]) -> Verdict:
    """The worst verdict of the parts; nothing compared is inconclusive."""
    seen = set(verdicts)
    if not seen:
        return "inconclusive"
    return next(v for v in SEVERITY if v in seen)


def exit_code(verdict: Verdict, *, strict: bool) -> int:
    """0 for a positive verdict (and an undecided one unless strict), 1 for a negative one."""
    if verdict == "not reproduced" or (strict and verdict not in POSITIVE):
        return EXIT_NEGATIVE
    return EXIT_OK


def decide_claim(lo: float, hi: float, relation: str, bound: float) -> ClaimVerdict:
    """A claim `value relation bound` from the interval [lo, hi] of the value."""
    inside, outside = (hi <= bound, lo > bound) if relation == "<=" else (lo >= bound, hi < bound)
    if inside:
        return "holds"
    return "does not hold" if outside else "inconclusive"


def claims_verdict(verdicts: Iterable[ClaimVerdict]) -> ClaimVerdict:
    """The worst of the claims' verdicts; no claim checked is inconclusive."""
    seen = set(verdicts)
    return next((v for v in CLAIM_SEVERITY if v in seen), "inconclusive")


def claims_exit_code(verdicts: Iterable[ClaimVerdict], *, strict: bool) -> int:
    """1 when a claim does not hold (or, strict, one is inconclusive); else 0."""
    worst = claims_verdict(verdicts)
    if worst == "does not hold" or (strict and worst != "holds"):
        return EXIT_NEGATIVE
    return EXIT_OK


def test_status(
    *, mode: str, validity: object, num_errors: object, audit_config_found: bool
) -> TestStatus:
    """A finished LoadGen test: performance runs need LoadGen's VALID; accuracy runs no errors.

    An audit.config found by LoadGen changes the settings behind our back: never valid.
    """
    if audit_config_found:
        return "invalid"
    if validity == "VALID" or (mode == "accuracy" and not num_errors):
        return "valid"
    return "invalid"


def run_status(statuses: Iterable[TestStatus]) -> RunStatus:
    """A run is failed if a test failed, invalid if one was invalid, else complete."""
    seen = set(statuses)
    if "failed" in seen:
        return "failed"
    if "invalid" in seen:
        return "invalid"
    return "complete"
