"""Use case: compare replays with the original, metric by metric, with a verdict and its reason.

The report's types live in `repro.reports.model`, the verdict rules in `repro.verdicts`; this
module lines the two sides up, computes the comparisons and assembles the report.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from repro import __version__
from repro.envdiff import diff_views, view_from_fingerprint, view_from_record
from repro.errors import SpecError
from repro.reports.model import (
    CdfPoints,
    DriftEntry,
    MachineAdjustment,
    MetricResult,
    NotCompared,
    Report,
    ScenarioResult,
    SettingDiff,
    SideInfo,
)
from repro.runs import layout
from repro.runs.accuracy import load_predictions
from repro.runs.alignment import finished, gaps, hardware_differences, setting_changes
from repro.runs.record import TestRecord
from repro.runs.store import (
    LoadedRun,
    check_files,
    latest_finished,
    open_replay,
    open_run,
)
from repro.spec.models import Tolerances
from repro.stats.histogram import LatencyHistogram
from repro.stats.machine import compare_adjusted, machine_delta, spread, test_speed
from repro.stats.significance import (
    Comparison,
    compare_accuracy,
    compare_paired,
    compare_percentile,
    compare_runs,
)
from repro.verdicts import VERDICTS, combine, decide_validity, roll_up

Side = LoadedRun

#: (metric key, label, unit, tolerance kind) compared per scenario
METRICS: dict[str, list[tuple[str, str, str, str]]] = {
    "SingleStream": [
        ("latency_p50_ns", "latency p50", "ns", "latency"),
        ("latency_p90_ns", "latency p90 (MLPerf metric)", "ns", "latency"),
        ("latency_p99_ns", "latency p99", "ns", "latency"),
        ("early_stopping_p90_ns", "early-stopping p90 estimate", "ns", "latency"),
        ("samples_per_second", "throughput", "samples/s", "throughput"),
    ],
    "MultiStream": [
        ("latency_p50_ns", "latency p50", "ns", "latency"),
        ("latency_p90_ns", "latency p90", "ns", "latency"),
        ("latency_p99_ns", "latency p99 (MLPerf metric)", "ns", "latency"),
        ("early_stopping_p99_ns", "early-stopping p99 estimate", "ns", "latency"),
    ],
    "Server": [
        ("samples_per_second", "completed samples/s (MLPerf metric)", "samples/s", "throughput"),
        ("latency_p50_ns", "latency p50", "ns", "latency"),
        ("latency_p90_ns", "latency p90", "ns", "latency"),
        ("latency_p99_ns", "latency p99", "ns", "latency"),
    ],
    "Offline": [
        ("samples_per_second", "throughput (MLPerf metric)", "samples/s", "throughput"),
    ],
}
PERCENTILE_OF = {"latency_p50_ns": 50.0, "latency_p90_ns": 90.0, "latency_p99_ns": 99.0}


def resolve_inputs(
    original: Path, replays: list[Path], *, allow_different_specs: bool = False
) -> tuple[Side, list[Side]]:
    """Find the original and the replays; `results/<name>/` means original/ + the latest run
    of the same spec that finished (by its recorded finish time)."""
    orig = open_run(original)
    sides = [open_replay(p) for p in replays]
    if not sides:
        if orig.kind == "mlperf":
            raise SpecError(
                f"{original}: a published result needs a replay to compare with",
                hint="repro report --compare TREE results/<name>/<run-id>",
            )
        if orig.record.run_id != layout.ORIGINAL_RUN_ID and orig.path.name != "original":
            raise SpecError(
                f"{original}: this is a replay ({orig.record.run_id}), not an original; "
                "the report will not guess which side is which",
                hint=f"repro report --compare {orig.path.parent}/ {original}",
            )
        latest = latest_finished(orig.path.parent, spec_id=orig.record.spec_id, exclude=orig.path)
        if latest is None:
            raise SpecError(
                f"{orig.path.parent}: no finished replay of spec {orig.record.spec_id[:12]} "
                "to compare with the original",
                hint=f"run `repro replay` on the spec of {orig.record.spec_name} first",
            )
        sides = [open_replay(latest)]
    for s in sides:
        if s.record.status in ("interrupted", "failed") and not finished(s.record.tests):
            raise SpecError(
                f"{s.path}: the run did not finish (status {s.record.status}) and has no "
                "result to compare; it is never compared as if complete"
            )
        if s.record.status == "interrupted":
            raise SpecError(
                f"{s.path}: the run did not finish (status interrupted); "
                "it is never compared as if complete"
            )
    _check_same_spec(orig, sides, allow=allow_different_specs)
    return orig, sides


def _check_same_spec(orig: Side, reps: list[Side], *, allow: bool) -> None:
    """Runs of different specs are different experiments: refused unless the user asks."""
    ids = {r.record.spec_id for r in reps}
    if orig.kind == "repro":
        ids.add(orig.record.spec_id)
    if len(ids) > 1 and not allow:
        listing = ", ".join(f"{s.path} ({s.record.spec_id[:12]})" for s in [orig, *reps])
        raise SpecError(
            f"the runs are of different specs: {listing}",
            hint="a changed spec is another experiment; pass --allow-different-specs to "
            "compare them anyway (the settings and the drift then say what changed)",
        )


def _values(side: Side, tests: list[TestRecord], key: str) -> list[tuple[TestRecord, float]]:
    """The metric of each test that has it; a value that is not a positive finite number is a
    damaged run."""
    values: list[tuple[TestRecord, float]] = []
    for t in tests:
        v = t.metrics.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
            where = (
                side.test_path(t.dir, layout.SUMMARY)
                if side.kind == "mlperf"
                else layout.record_file(side.path)
            )
            raise SpecError(
                f"{where}: {t.scenario} {t.dir}: {key} is {v!r}, not a positive number",
                hint="the run record is damaged: re-run the replay or delete the run",
            )
        values.append((t, float(v)))
    return values


def _pool(hists: list[LatencyHistogram]) -> LatencyHistogram | None:
    """One histogram of all the queries of several runs."""
    if not hists:
        return None
    bins = np.concatenate([h.bins for h in hists])
    counts = np.concatenate([h.counts for h in hists])
    ub, inv = np.unique(bins, return_inverse=True)
    return LatencyHistogram(ub.astype(np.int32), np.bincount(inv, weights=counts).astype(np.int64))


def _histograms(runs: list[tuple[Side, TestRecord]]) -> LatencyHistogram | None:
    """The pooled per-query latency histogram of runs, where they kept one."""
    hists = []
    for side, t in runs:
        if side.kind == "repro" and t.latencies_file:
            path = side.test_path(t.dir, t.latencies_file)
            if path.is_file() and path.suffix == ".npz":
                hists.append(LatencyHistogram.load(path))
    return _pool(hists)


@dataclass(frozen=True)
class Machines:
    """What the report knows about the two machines: probe spreads and hardware differences."""

    spread_original: float | None
    spread_replay: float | None
    hardware: tuple[str, ...] = ()

    def unstable(self, tol: float) -> bool:
        return any(s is not None and s > tol for s in (self.spread_original, self.spread_replay))


def compare_metric(
    key: str,
    label: str,
    unit: str,
    kind: str,
    orig: tuple[Side, list[TestRecord]],
    reps: list[tuple[Side, TestRecord]],
    hist: tuple[LatencyHistogram | None, LatencyHistogram | None],
    tol: Tolerances,
    machines: Machines | None = None,
    paired: bool = False,
) -> MetricResult | None:
    pa = _values(orig[0], orig[1], key)
    pb = [pair for side, t in reps for pair in _values(side, [t], key)]
    if paired:
        rounds = sorted({t.repeat for t, _ in pa} & {t.repeat for t, _ in pb})
        pa = [next(x for x in pa if x[0].repeat == k) for k in rounds]
        pb = [next(x for x in pb if x[0].repeat == k) for k in rounds]
    if not pa or not pb:
        return None
    tolerance = tol.throughput_rel if kind == "throughput" else tol.latency_rel
    fa, fb = [v for _, v in pa], [v for _, v in pb]
    base = {
        "metric": key,
        "label": label,
        "unit": unit,
        "original": fa,
        "replay": fb,
        "original_value": float(np.mean(fa)),
        "replay_value": float(np.mean(fb)),
        "tolerance": tolerance,
    }
    q = PERCENTILE_OF.get(key)
    ha, hb = hist
    if paired:
        cmp: Comparison = compare_paired(fa, fb, tol=tolerance, confidence=tol.confidence)
    elif q is not None and (len(fa) < 2 or len(fb) < 2) and ha is not None and hb is not None:
        cmp = compare_percentile(
            ha,
            hb,
            q,
            tol=tolerance,
            confidence=tol.confidence,
            point=(float(np.mean(fa)), float(np.mean(fb))),
        )
    else:
        cmp = compare_runs(fa, fb, tol=tolerance, confidence=tol.confidence)
    result = MetricResult(
        **base,
        delta_rel=cmp.delta_rel,
        ci=list(cmp.ci) if cmp.ci else None,
        method=cmp.method,
        verdict=cmp.verdict,
        reason=cmp.reason,
        mde_rel=cmp.mde_rel,
    )
    if machines is None or paired:
        return result
    return _with_machine(result, cmp, (pa, pb), kind, tolerance, tol.confidence, machines)


def _with_machine(
    result: MetricResult,
    raw: Comparison,
    pairs: tuple[list[tuple[TestRecord, float]], list[tuple[TestRecord, float]]],
    kind: str,
    tolerance: float,
    confidence: float,
    machines: Machines,
) -> MetricResult:
    """The raw comparison joined by the machine-adjusted one, and their combined verdict."""
    sa = [test_speed(t.probe_before, t.probe_after) for t, _ in pairs[0]]
    sb = [test_speed(t.probe_before, t.probe_after) for t, _ in pairs[1]]
    adjusted = None
    update: dict[str, Any] = {}
    if all(sa) and all(sb):
        speeds_a = [s for s in sa if s is not None]
        speeds_b = [s for s in sb if s is not None]
        adj = compare_adjusted(
            raw,
            ([v for _, v in pairs[0]], speeds_a),
            ([v for _, v in pairs[1]], speeds_b),
            latency=kind == "latency",
            tol=tolerance,
            confidence=confidence,
        )
        adjusted = MachineAdjustment(
            delta_rel=adj.delta_rel,
            ci=list(adj.ci) if adj.ci else None,
            verdict=adj.verdict,
            method=adj.method,
            machine_delta_rel=machine_delta(speeds_a, speeds_b),
            probe_spread_original=machines.spread_original or 0.0,
            probe_spread_replay=machines.spread_replay or 0.0,
        )
        update["adjusted"] = adjusted
    unstable = machines.unstable(tolerance)
    verdict = combine(raw.verdict, adjusted.verdict if adjusted else None, unstable=unstable)
    if machines.hardware:
        verdict = "not comparable: different hardware"
    if verdict != raw.verdict:
        update["raw_verdict"] = raw.verdict
    if verdict != raw.verdict or adjusted is not None:
        update["reason"] = _machine_reason(verdict, raw, adjusted, machines, tolerance)
    update["verdict"] = verdict
    return result.model_copy(update=update)


def _machine_reason(
    verdict: str,
    raw: Comparison,
    adjusted: MachineAdjustment | None,
    machines: Machines,
    tolerance: float,
) -> str:
    machine = ""
    if adjusted is not None:
        faster = "faster" if adjusted.machine_delta_rel > 0 else "slower"
        machine = (
            f"the replay's machine was {abs(adjusted.machine_delta_rel):.1%} {faster} by the "
            f"probes; adjusted for it the difference is {adjusted.delta_rel:+.1%}"
        )
    if verdict == "not comparable: different hardware":
        return (
            f"different hardware ({'; '.join(machines.hardware)}): the raw difference "
            f"{raw.delta_rel:+.1%} is shown for information" + (f"; {machine}" if machine else "")
        )
    if verdict == "reproduced after machine adjustment":
        return (
            f"raw {raw.delta_rel:+.1%} ({raw.verdict}); {machine}, inside +/-{tolerance:.0%}: "
            "the machine differed, not the software"
        )
    if verdict == "not reproduced":
        return f"{raw.reason}; {machine}: the software or its settings differ"
    spreads = ", ".join(
        f"{name} {value:.0%}"
        for name, value in (
            ("original", machines.spread_original),
            ("replay", machines.spread_replay),
        )
        if value is not None
    )
    if verdict == "inconclusive: machine unstable":
        return (
            f"{raw.reason}; the machine's own speed moved within a side by more than the "
            f"tolerance (probe spread: {spreads}): replay on a quieter machine, or interleave "
            "(`repro replay SPEC --against ...`)"
        )
    return f"{raw.reason}; {machine}" if machine else raw.reason


def _validity(orig: list[TestRecord], rep: list[TestRecord]) -> MetricResult | None:
    a = [str(t.metrics.get("validity")) for t in orig if t.metrics.get("validity")]
    b = [str(t.metrics.get("validity")) for t in rep if t.metrics.get("validity")]
    if not a or not b:
        return None
    verdict, reason = decide_validity(a, b)
    return MetricResult(
        metric="validity",
        label="LoadGen validity",
        unit="",
        original=list(a),
        replay=list(b),
        original_value="VALID" if all(v == "VALID" for v in a) else "INVALID",
        replay_value="VALID" if all(v == "VALID" for v in b) else "INVALID",
        method="exact",
        verdict=verdict,
        reason=reason,
    )


def _accuracy(
    orig: TestRecord | None, rep: list[TestRecord], tol: Tolerances
) -> MetricResult | None:
    if orig is None or not orig.accuracy or not rep:
        return None
    a = orig.accuracy.get("value")
    values = [t.accuracy.get("value") for t in rep if t.accuracy]
    b = [float(v) for v in values if v is not None]
    if a is None or not b:
        return None
    cmp = compare_accuracy(float(a), min(b), ratio=tol.accuracy_ratio)
    metric = str(orig.accuracy.get("metric", "accuracy"))
    return MetricResult(
        metric="accuracy",
        label=f"accuracy ({metric})",
        unit="fraction",
        original=[float(a)],
        replay=[float(v) for v in b],
        original_value=float(a),
        replay_value=min(b),
        delta_rel=cmp.delta_rel,
        tolerance=1 - tol.accuracy_ratio,
        method=cmp.method,
        verdict=cmp.verdict,
        reason=cmp.reason,
    )


def _agreement(
    orig: Side, o: TestRecord | None, reps: list[tuple[Side, TestRecord]]
) -> float | None:
    if orig.kind != "repro" or o is None:
        return None
    pa = orig.test_path(o.dir, layout.PREDICTIONS_FILE)
    if not pa.is_file():
        return None
    ia, ta = load_predictions(pa)
    fractions = []
    for side, t in reps:
        pb = side.test_path(t.dir, layout.PREDICTIONS_FILE)
        if not pb.is_file():
            continue
        ib, tb = load_predictions(pb)
        common, xa, xb = np.intersect1d(ia, ib, return_indices=True)
        if len(common):
            fractions.append(float(np.mean(ta[xa] == tb[xb])))
    return min(fractions) if fractions else None


def _cdf(h: LatencyHistogram | None, points: int = 200) -> CdfPoints | None:
    if h is None:
        return None
    frac = np.cumsum(h.counts) / h.total
    idx = np.unique(np.linspace(0, len(frac) - 1, min(points, len(frac))).astype(int))
    return CdfPoints(
        latency_ns=[float(v) for v in h.values()[idx]], fraction=[float(v) for v in frac[idx]]
    )


def compare_scenario(
    scenario: str,
    orig: Side,
    reps: list[Side],
    tol: Tolerances,
    machines: Machines | None = None,
    paired: bool = False,
) -> ScenarioResult | None:
    o_perf = finished(orig.record.performance(scenario))
    r_perf = [(s, t) for s in reps for t in finished(s.record.performance(scenario))]
    o_acc = orig.record.accuracy_test(scenario)
    o_acc = o_acc if o_acc is not None and o_acc.status in ("valid", "invalid") else None
    r_acc = [
        (s, t)
        for s in reps
        if (t := s.record.accuracy_test(scenario)) is not None and t.status in ("valid", "invalid")
    ]
    if not (o_perf and r_perf) and not (o_acc and r_acc):
        return None
    # Offline is one query: its per-sample "latencies" say nothing about the SUT.
    hist_o = _histograms([(orig, t) for t in o_perf]) if scenario != "Offline" else None
    hist_r = _histograms(r_perf) if scenario != "Offline" else None
    rep_tests = [t for _, t in r_perf]
    metrics = [m for m in (_validity(o_perf, rep_tests),) if m is not None]
    if machines is not None and machines.hardware and metrics:
        metrics[0] = metrics[0].model_copy(
            update={
                "verdict": "not comparable: different hardware",
                "raw_verdict": metrics[0].verdict,
                "reason": f"{metrics[0].reason}; LoadGen's bounds depend on the hardware",
            }
        )
    for key, label, unit, kind in METRICS.get(scenario, []):
        m = compare_metric(
            key, label, unit, kind, (orig, o_perf), r_perf, (hist_o, hist_r), tol, machines, paired
        )
        if m is not None:
            metrics.append(m)
    acc = _accuracy(o_acc, [t for _, t in r_acc], tol)
    if acc is not None:
        metrics.append(acc)
    cdf = {k: c for k, c in (("original", _cdf(hist_o)), ("replay", _cdf(hist_r))) if c is not None}
    return ScenarioResult(
        scenario=scenario,
        verdict=roll_up(m.verdict for m in metrics),
        metrics=metrics,
        prediction_agreement=_agreement(orig, o_acc, r_acc),
        cdf=cdf,
    )


def _side_info(s: Side) -> SideInfo:
    return SideInfo(
        path=str(s.path),
        kind=s.kind,
        run_id=s.record.run_id,
        spec_id=s.record.spec_id,
        status=s.record.status,
        environment={
            k: v
            for k, v in s.record.environment.items()
            if k in ("manager", "reason", "python_lock_sha256")
        },
    )


def _drift(orig: Side, reps: list[Side]) -> list[DriftEntry]:
    def view(s: Side) -> dict[str, dict[str, Any]]:
        return (
            view_from_record(s.record)
            if s.kind == "repro"
            else view_from_fingerprint(s.record.fingerprint)
        )

    changes = diff_views(view(orig), view(reps[0]))
    return [
        DriftEntry(
            group=c.group, key=c.key, original=c.a, replay=c.b, impact=c.impact, level=c.level
        )
        for c in changes
    ]


def build_report(
    orig: Side,
    reps: list[Side],
    *,
    tolerances: Tolerances,
    strict: bool = False,
    tolerances_source: str | None = None,
) -> Report:
    """Compare every scenario both sides ran; the overall verdict is the worst of them."""
    machines = _machines(orig, reps)
    paired = is_paired(orig, reps)
    scenarios = []
    for scenario in _ORDER:
        result = compare_scenario(scenario, orig, reps, tolerances, machines, paired)
        if result is not None:
            scenarios.append(result)
    notes = [f"tolerances: {tolerances_source}"] if tolerances_source else []
    if paired:
        il = reps[0].record.interleave or {}
        notes.append(
            f"paired: the two sides ran interleaved on one machine, {il.get('rounds', '?')} "
            f"round(s) in a random order (seed {il.get('seed')}); each performance metric is "
            "judged on its per-round ratios"
        )
    for side in reps:
        stop = side.record.stopping
        if stop:
            notes.append(
                f"stopping: {stop.get('rounds')} round(s) of at most {stop.get('max_rounds')} "
                f"(and {stop.get('max_time_s')} s), stopped because {stop.get('stopped')}; "
                f"{stop.get('elapsed_s')} s of replay"
            )
    missing = [
        NotCompared(scenario=g.scenario, mode=g.mode, metric=g.metric, reason=g.reason)
        for g in gaps(orig.record, [r.record for r in reps], _metric_keys())
    ]
    scenarios = [s for s in scenarios if s.metrics]
    if not scenarios:
        what = "; ".join(f"{m.scenario} {m.mode}: {m.reason}" for m in missing) or "no results"
        raise SpecError(
            f"nothing to compare: the replay covers none of what the original ran ({what})",
            hint="replay the scenarios and modes the original ran (see `repro replay --help`)",
        )
    if orig.kind == "repro" and any(r.record.spec_id != orig.record.spec_id for r in reps):
        notes.append(
            "the replay ran a different spec id than the original (--allow-different-specs): "
            "the experiment itself was changed (see the settings and the drift)"
        )
    verdict = roll_up(s.verdict for s in scenarios)
    counts = {
        v: sum(m.verdict == v for s in scenarios for m in s.metrics)
        for v in ("reproduced", "not reproduced", "inconclusive")
    }
    others = {
        v: n
        for v in VERDICTS
        if v not in counts and (n := sum(m.verdict == v for s in scenarios for m in s.metrics))
    }
    in_original = [
        sc for sc in _ORDER if orig.record.performance(sc) or orig.record.accuracy_test(sc)
    ]
    summary = (
        f"{verdict.upper()}: {counts['reproduced']} metric(s) reproduced, "
        f"{counts['not reproduced']} not reproduced, {counts['inconclusive']} inconclusive"
        + "".join(f", {n} {v}" for v, n in others.items())
        + f"; {len(scenarios)} of {len(in_original)} scenario(s) compared"
    )
    if machines.hardware:
        summary += (
            "; different hardware: performance is shown for information, accuracy and "
            "predictions are judged"
        )
    if missing:
        summary += f"; {len(missing)} part(s) of the original not compared (listed)"
    integrity = [p for side in (orig, *reps) if side.kind == "repro" for p in check_files(side)]
    if integrity:
        summary = (
            f"WARNING: {len(integrity)} file(s) of the compared runs are missing or altered "
            f"since they ran (listed); {summary}"
        )
    return Report(
        spec_name=orig.record.spec_name,
        generated_utc=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        repro_version=__version__,
        verdict=verdict,
        summary=summary,
        strict=strict,
        confidence=tolerances.confidence,
        tolerances=tolerances.model_dump(),
        original=_side_info(orig),
        replays=[_side_info(r) for r in reps],
        scenarios=scenarios,
        drift=_drift(orig, reps),
        not_compared=missing,
        integrity=integrity,
        different_hardware=list(machines.hardware),
        settings=[
            SettingDiff(scope=c.scope, key=c.key, original=c.original, replay=c.replay)
            for c in setting_changes(orig.record, reps[0].record)
        ],
        notes=notes,
    )


_ORDER = ("SingleStream", "MultiStream", "Server", "Offline")
#: the metric MLPerf reports for each scenario: the ones --until-decided waits for
HEADLINE: dict[str, str] = {
    "SingleStream": "latency_p90_ns",
    "MultiStream": "latency_p99_ns",
    "Server": "samples_per_second",
    "Offline": "samples_per_second",
}


def is_paired(orig: Side, reps: list[Side]) -> bool:
    """The sides ran interleaved with each other (one pairing id, one replay)."""
    a, b = orig.record.interleave, reps[0].record.interleave if len(reps) == 1 else None
    return bool(a and b and a.get("id") and a.get("id") == b.get("id"))


def decided(report: Report) -> bool:
    """Every headline metric and every accuracy is decided (inside or outside its tolerance)."""
    undecided = ("inconclusive", "inconclusive: machine unstable")
    for s in report.scenarios:
        for m in s.metrics:
            if (m.metric == HEADLINE.get(s.scenario) or m.metric == "accuracy") and (
                m.verdict in undecided
            ):
                return False
    return True


def _machines(orig: Side, reps: list[Side]) -> Machines:
    """Probe spreads of each side and how the hardware differs (first replay)."""

    def side_spread(sides: list[Side]) -> float | None:
        speeds = [
            float(p["compute_gflops"])
            for side in sides
            for t in side.record.tests
            for p in (t.probe_before, t.probe_after)
            if p and isinstance(p.get("compute_gflops"), int | float) and p["compute_gflops"] > 0
        ]
        return spread(speeds) if speeds else None

    return Machines(
        spread_original=side_spread([orig]),
        spread_replay=side_spread(reps),
        hardware=tuple(hardware_differences(orig.record.fingerprint, reps[0].record.fingerprint)),
    )


def _metric_keys() -> dict[str, list[str]]:
    return {scenario: [m[0] for m in metrics] for scenario, metrics in METRICS.items()}


def tolerances_for(
    orig: Side, reps: list[Side], *, spec_path: Path | None = None
) -> tuple[Tolerances, str]:
    """The tolerances to judge by, and where they came from.

    An explicit spec (`--spec`) wins; else the tolerances the original recorded when it ran,
    else those a replay recorded; else MLPerf's defaults. Runs record their effective
    tolerances, so the verdict is the same from any folder and after the spec is edited.
    """
    from repro.spec.io import load_spec

    if spec_path is not None:
        return load_spec(spec_path, check_id=False).tolerances, f"from {spec_path} (--spec)"
    for side in (orig, *reps):
        if side.record.tolerances is not None:
            which = "original" if side is orig else "replay"
            return side.record.tolerances, f"as recorded by the {which} run ({side.path})"
    return Tolerances(), "MLPerf's defaults: neither run recorded its tolerances"
