"""The steps of a replay that checks the spec's claims (`--claims`): each claim's variants
interleaved until decided, then the claims' check and the replay against the original."""

from __future__ import annotations

from dataclasses import replace

from repro.compare.build import build_report
from repro.errors import SpecError, UsageError
from repro.mlperf.sides import open_run
from repro.replay.claim_evidence import claims_check, results_of
from repro.replay.claim_rounds import CheckOptions, sessions
from repro.replay.claim_rounds import check_claims as check
from repro.replay.state import ReplayState, need
from repro.reports.model import Report, claims_summary
from repro.runs.store import LoadedRun
from repro.spec.paths import resolve_path
from repro.stats.verdicts import claims_verdict

# -- claims


def require_claims(state: ReplayState) -> ReplayState:
    """The spec states claims (checked, with their variants, by `load_spec`)."""
    spec, path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    if not spec.claims:
        raise UsageError(
            f"{path}: $.claims: --claims checks the spec's claims, and it states none",
            hint="add one with `repro claim add`",
        )
    return state


def check_claims(state: ReplayState) -> ReplayState:
    """Each claim's variants interleaved on this machine until decided, each variant in a
    session of its own."""
    spec, path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    # each claim's own length: the replay's --min-duration-ms is not the claims'
    opts = CheckOptions(
        plan=state.plan.but(loadgen={}, run_id=None),
        check_id=f"{need(state.run, 'a run')[1].run_id}-claims",
    )
    factory = sessions(path, report=state.note, progress=state.reporter.progress, cache=state.cache)
    outcomes = check(spec, path, factory=factory, opts=opts, report=state.note)
    return replace(state, claims=outcomes)


def judge_claims(state: ReplayState) -> ReplayState:
    """The claims' check, and the replay against the spec's original with the claims in it
    (when the spec has an original and they have something to compare)."""
    spec, outcomes = need(state.spec, "the spec"), need(state.claims, "the claims")
    check = claims_check(spec, outcomes)
    absolute = _absolute_report(state)
    if absolute is None:
        return replace(state, claims_check=check)
    results = results_of(spec, outcomes)
    report = absolute.model_copy(
        update={"claims": results, "claims_verdict": claims_verdict(c.verdict for c in results)}
    )
    state.note(f"claims: {claims_summary(results)}")
    return replace(state, claims_check=check, claims_report=report)


def _absolute_report(state: ReplayState) -> Report | None:
    """The replay against the spec's original, or None (no original, nothing comparable)."""
    spec, path = need(state.spec, "the spec"), need(state.spec_path, "SPEC")
    if spec.original is None:
        state.note("the spec has no original: the report is the claims alone")
        return None
    run_dir, record = need(state.run, "a run")
    try:
        original = open_run(resolve_path(spec.original.path, path.parent))
        return build_report(
            original,
            [LoadedRun(run_dir, "repro", record)],
            tolerances=original.record.tolerances or spec.tolerances,
        )
    except SpecError as exc:
        state.note(f"the replay is not compared with the original: {exc.message}")
        return None
