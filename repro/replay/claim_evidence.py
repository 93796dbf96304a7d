"""What a claim's measurement becomes: the evidence the spec keeps (`repro claim measure`), and
the claims' check with each claim's verdict (`repro claim check`, `repro replay --claims`)."""

from __future__ import annotations

import datetime as dt

from repro import __version__
from repro.compare.claim_verdicts import claim_result, machine_line
from repro.machine.fingerprint import hardware_from
from repro.replay.claim_rounds import Outcome
from repro.replay.settings import utc_now
from repro.reports.model import ClaimResult, ClaimsCheck, claims_summary
from repro.runs.record import TestRecord
from repro.spec.claims import ClaimEvidence
from repro.spec.io import spec_id
from repro.spec.models import ExperimentSpec
from repro.spec.types import Hardware
from repro.stats.verdicts import claims_verdict


def evidence_of(outcome: Outcome, *, confidence: float) -> ClaimEvidence:
    """The evidence the spec keeps of a claim measured on this machine."""
    m = outcome.measured
    records = list(outcome.records.values())
    return ClaimEvidence(
        value=m.estimate.value,
        ci=m.estimate.ci,
        # the interval's own: each look's, where the rounds looked more than once
        confidence=m.confidence if m.confidence is not None else confidence,
        verdict=m.judgement.verdict,
        reason=m.judgement.reason,
        mde=m.judgement.mde,
        rounds=m.rounds,
        stopped=m.stopped,
        baseline=m.baseline,
        candidate=m.candidate,
        target_qps=m.target_qps,
        elapsed_s=m.elapsed_s,
        measured_utc=utc_now(),
        repro_version=__version__,
        variants=dict(outcome.variants),
        runs={side: r.run_id for side, r in outcome.records.items()},
        machine=Hardware.model_validate(hardware_from(records[0].fingerprint)),
        probes=probe_summary([t for r in records for t in r.tests]),
    )


def probe_summary(tests: list[TestRecord]) -> dict[str, float | None]:
    """The speed index's range over the probes around the tests, and the largest share of the
    machine's CPU time other processes took."""
    probes = [p for t in tests for p in (t.probe_before, t.probe_after) if p]
    speed = [float(p["compute_large_gflops"]) for p in probes if p.get("compute_large_gflops")]
    others = [float(p["others_cpu_frac"]) for p in probes if p.get("others_cpu_frac") is not None]
    return {
        "speed_gflops_min": round(min(speed), 2) if speed else None,
        "speed_gflops_max": round(max(speed), 2) if speed else None,
        "others_cpu_frac_max": round(max(others), 4) if others else None,
    }


def with_evidence(spec: ExperimentSpec, outcomes: list[Outcome]) -> ExperimentSpec:
    """The spec with each measured claim's evidence replaced (its id unchanged: claims are not
    part of it)."""
    confidence = spec.tolerances.confidence
    found = {o.claim.id: evidence_of(o, confidence=confidence) for o in outcomes}
    claims = [
        c.model_copy(update={"evidence": found[c.id]}) if c.id in found else c
        for c in spec.claims or []
    ]
    return spec.model_copy(update={"claims": claims})


def results_of(spec: ExperimentSpec, outcomes: list[Outcome]) -> list[ClaimResult]:
    """The report's rows: each claim checked here, against the evidence the spec holds."""
    by_id = {c.id: c for c in spec.claims or []}
    return [
        claim_result(by_id[o.claim.id], o.measured, tolerances=spec.tolerances) for o in outcomes
    ]


def claims_check(
    spec: ExperimentSpec, outcomes: list[Outcome], *, strict: bool = False
) -> ClaimsCheck:
    """`repro claim check`'s report."""
    results = results_of(spec, outcomes)
    records = [r for o in outcomes for r in o.records.values()]
    machine = Hardware.model_validate(hardware_from(records[0].fingerprint)) if records else None
    return ClaimsCheck(
        spec_name=spec.name,
        spec_id=spec_id(spec),
        generated_utc=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        repro_version=__version__,
        machine=machine_line(machine) if machine is not None else "unknown",
        strict=strict,
        verdict=claims_verdict(c.verdict for c in results),
        summary=claims_summary(results),
        claims=results,
    )
