"""The verdict rules, in one place: a metric, LoadGen's validity, a test, a scenario, a report.

For a metric with a relative tolerance `tol`, the difference is d = replay / original - 1.
  reproduced      the confidence interval of d lies inside [-tol, +tol]
  not reproduced  the interval lies wholly outside it
  inconclusive    otherwise
A scenario and a report take the worst verdict of their parts. The exit code follows `diff`:
0 reproduced (or inconclusive, unless strict), 1 not reproduced.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

from repro.errors import EXIT_NEGATIVE, EXIT_OK

Verdict = Literal["reproduced", "not reproduced", "inconclusive"]
VERDICTS: Final[tuple[Verdict, ...]] = ("reproduced", "not reproduced", "inconclusive")
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


def decide_accuracy(original: float, replay: float, *, ratio: float) -> Verdict:
    """Accuracy is reproduced when the replay reaches `ratio` x the original (MLPerf: 0.99)."""
    return "reproduced" if replay >= ratio * original else "not reproduced"


def decide_validity(original: list[str], replay: list[str]) -> tuple[Verdict, str]:
    """LoadGen's VALID/INVALID on each side: an INVALID replay of a VALID original fails."""
    a_ok = all(v == "VALID" for v in original)
    b_ok = all(v == "VALID" for v in replay)
    if a_ok and b_ok:
        return "reproduced", "LoadGen judged every run VALID"
    if not a_ok:
        return "reproduced", "the original was not VALID either"
    return "not reproduced", f"LoadGen judged {replay.count('INVALID')} replay run(s) INVALID"


def roll_up(verdicts: Iterable[Verdict]) -> Verdict:
    """The worst verdict of the parts; nothing compared is inconclusive."""
    seen = set(verdicts)
    if "not reproduced" in seen:
        return "not reproduced"
    if "inconclusive" in seen or not seen:
        return "inconclusive"
    return "reproduced"


def exit_code(verdict: Verdict, *, strict: bool) -> int:
    """0 for reproduced (and inconclusive unless strict), 1 for a negative verdict."""
    if verdict == "not reproduced" or (strict and verdict == "inconclusive"):
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
