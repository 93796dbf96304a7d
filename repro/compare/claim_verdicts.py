"""A claim judged from its rounds: the quantity each kind of claim measures, its verdict, and the
comparison of this machine's figure with the original's evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from repro.reports.model import ClaimResult
from repro.spec.claims import Claim, ClaimEvidence
from repro.spec.types import Hardware, Tolerances
from repro.stats.claim_estimates import (
    ClaimEstimate,
    ClaimJudgement,
    exact_estimate,
    judge,
    judge_margin,
    margin_estimate,
    match_original,
    ratio_estimate,
)

Quantity = Literal["ratio", "drop", "margin"]


@dataclass(frozen=True)
class Measured:
    """What the rounds of one claim measured on this machine."""

    estimate: ClaimEstimate
    judgement: ClaimJudgement
    baseline: list[float]
    candidate: list[float]
    rounds: int
    stopped: str
    elapsed_s: float
    runs: dict[str, Path] = field(default_factory=dict)
    target_qps: float | None = None
    #: seconds from the first round's start to each round's end
    round_end_s: list[float] = field(default_factory=list)
    #: the confidence of the estimate's interval (each look's: see
    #: `repro.replay.claim_rounds.Stopping`)
    confidence: float | None = None


def quantity_of(claim: Claim) -> Quantity:
    """What the claim's figure is: a ratio, an accuracy drop, or a feasibility's margin."""
    if claim.parsed_metric.is_feasibility:
        return "margin"
    return claim.quantity


def estimate(
    claim: Claim, baseline: list[float], candidate: list[float], *, confidence: float
) -> ClaimEstimate:
    """The claim's quantity from the values of the rounds (for a feasibility claim, the
    candidate's values are its margins)."""
    metric = claim.parsed_metric
    if metric.is_feasibility:
        return margin_estimate(candidate, confidence=confidence)
    if metric.is_accuracy:
        b, c = baseline[0], candidate[0]
        if claim.quantity == "drop":
            return exact_estimate(b - c)
        if b <= 0:
            raise ValueError("the baseline's accuracy is 0: claim a drop, not a ratio")
        return exact_estimate(c / b)
    return ratio_estimate(baseline, candidate, confidence=confidence)


def verdict(claim: Claim, found: ClaimEstimate, *, confidence: float) -> ClaimJudgement:
    """Holds, does not hold, or inconclusive."""
    if claim.parsed_metric.is_feasibility:
        return judge_margin(found, claim.relation, claim.bound, confidence=confidence)
    return judge(found, claim.relation, claim.bound, confidence=confidence)


def evidence_estimate(claim: Claim, evidence: ClaimEvidence) -> ClaimEstimate:
    """The original's figure as an estimate, recomputed from its rounds."""
    return estimate(claim, evidence.baseline, evidence.candidate, confidence=evidence.confidence)


def tolerance_for(claim: Claim, tol: Tolerances) -> float:
    """How close this machine's figure must be to the original's to match it: the metric's
    own tolerance (a feasibility's margin is a latency; an accuracy drop, 1 - accuracy_ratio)."""
    kind = claim.parsed_metric.kind
    if kind == "accuracy":
        return 1 - tol.accuracy_ratio
    return tol.throughput_rel if kind == "throughput" else tol.latency_rel


def machine_line(hw: Hardware) -> str:
    """`Intel(R) Xeon(R) Processor, 2 logical CPUs`."""
    cpus = f"{hw.logical_cpus} logical CPUs" if hw.logical_cpus else "CPUs unknown"
    return f"{hw.cpu_model or 'CPU unknown'}, {cpus}"


def claim_result(claim: Claim, measured: Measured, *, tolerances: Tolerances) -> ClaimResult:
    """The report's row of a claim checked here, against the evidence the spec holds."""
    confidence = tolerances.confidence
    evidence = claim.evidence
    original = evidence_estimate(claim, evidence) if evidence is not None else None
    match, why = match_original(
        measured.estimate,
        original,
        tolerance=tolerance_for(claim, tolerances),
        drop=claim.quantity == "drop",
        confidence=confidence,
    )
    return ClaimResult(
        id=claim.id,
        statement=claim.statement,
        source=claim.source,
        metric=claim.metric,
        bound=claim.bound_text(),
        quantity=quantity_of(claim),
        value=measured.estimate.value,
        ci=measured.estimate.ci,
        method=measured.estimate.method,
        verdict=measured.judgement.verdict,
        reason=measured.judgement.reason,
        mde=measured.judgement.mde,
        original_value=evidence.value if evidence is not None else None,
        original_ci=evidence.ci if evidence is not None else None,
        original_verdict=evidence.verdict if evidence is not None else None,
        original_machine=machine_line(evidence.machine) if evidence is not None else None,
        match=match,
        match_reason=why,
        rounds=measured.rounds,
        stopped=measured.stopped,
        elapsed_s=measured.elapsed_s,
        baseline=measured.baseline,
        candidate=measured.candidate,
        target_qps=measured.target_qps,
        round_end_s=measured.round_end_s,
        runs={side: str(path) for side, path in measured.runs.items()},
    )


def busy_guard(
    claim: Claim,
    judgement: ClaimJudgement,
    busier: Literal["baseline", "candidate"] | None,
    shares: str,
) -> ClaimJudgement:
    """A performance claim decided the way the busier variant's slowness pushes it (the
    candidate ran beside more other work and the claim says it is slower than claimed, or the
    baseline did and the claim holds) is *inconclusive*: the load, not the software, may be
    why. `shares` says how much other work ran beside each (`repro.compare.pairing`)."""
    metric = claim.parsed_metric
    if busier is None or metric.is_accuracy or metric.is_feasibility:
        return judgement
    if judgement.verdict == "inconclusive":
        return judgement
    # the candidate looks worse than it is when it is the busier: a lower throughput ratio, a
    # higher latency ratio; the baseline being busier makes it look better
    candidate_worse = (claim.relation == ">=") == (metric.kind == "throughput")
    pushed = "does not hold" if candidate_worse else "holds"
    if (busier == "candidate") != (judgement.verdict == pushed):
        return judgement
    return ClaimJudgement(
        "inconclusive",
        f"machine busy: the {busier} ran beside more other work ({shares}), which pushes the "
        f"ratio the way it was decided ({judgement.verdict}: {judgement.reason}); check it on a "
        "quieter machine",
        judgement.mde,
    )
