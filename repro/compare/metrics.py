"""One metric of one scenario on both sides: the values, the comparison, the verdict."""

from __future__ import annotations

import numpy as np

from repro.compare.machine_sides import Machines, with_machine
from repro.compare.pairing import PairedRule
from repro.errors import SpecError
from repro.mlperf.tree import LEGACY_HEADLINE
from repro.reports.model import (
    CdfPoints,
    MetricResult,
)
from repro.runs import layout
from repro.runs.accuracy import load_predictions
from repro.runs.record import TestRecord
from repro.runs.store import (
    LoadedRun,
)
from repro.spec.models import Tolerances
from repro.stats.histogram import LatencyHistogram
from repro.stats.significance import (
    Comparison,
    compare_accuracy,
    compare_paired,
    compare_percentile,
    compare_runs,
)
from repro.stats.speed_adjust import positive
from repro.stats.verdicts import decide_validity

Side = LoadedRun


#: (metric key, label, unit, tolerance kind) compared per scenario; the scenario's MLPerf
#: metric (build.headline_of) is judged and labelled so, and so is the energy of a power result
#: (`repro.mlperf.power`: per sample or token for Offline and Server, per query for
#: SingleStream and MultiStream, as the checker gives it); the others are shown for information
_ENERGY_PER_QUERY = [
    ("energy_per_query_j", "energy per query", "J/query", "energy"),
    ("power_w", "average power", "W", "energy"),
]
_ENERGY_PER_SAMPLE = [
    ("energy_per_sample_j", "energy per sample", "J/sample", "energy"),
    ("energy_per_token_j", "energy per token", "J/token", "energy"),
    ("power_w", "average power", "W", "energy"),
]
#: the energy rows judged like the scenario's MLPerf metric (power is shown for information)
JUDGED_ENERGY = ("energy_per_query_j", "energy_per_sample_j", "energy_per_token_j")
_TOKENS = [
    ("tokens_per_second", "tokens/s", "tokens/s", "throughput"),
    ("ttft_p50_ns", "time to first token p50", "ns", "latency"),
    ("ttft_p99_ns", "time to first token p99", "ns", "latency"),
    ("tpot_p50_ns", "time per output token p50", "ns", "latency"),
    ("tpot_p99_ns", "time per output token p99", "ns", "latency"),
]
#: CPU time as a second witness (`repro.harness.cputime`): the samples each CPU second of the
#: worker completed; judged with its own interval, shown for information beside the wall-time
#: metric (threads 2 -> 1 halves the wall rate and keeps the CPU cost: it cannot stand for it)
_CPU = ("samples_per_cpu_second", "samples per CPU second (CPU time)", "samples/CPU s", "cpu")
METRICS: dict[str, list[tuple[str, str, str, str]]] = {
    "SingleStream": [
        ("latency_p50_ns", "latency p50", "ns", "latency"),
        ("latency_p90_ns", "latency p90", "ns", "latency"),
        ("latency_p99_ns", "latency p99", "ns", "latency"),
        ("early_stopping_p90_ns", "early-stopping p90 estimate", "ns", "latency"),
        ("samples_per_second", "throughput", "samples/s", "throughput"),
        _CPU,
        *_TOKENS,
        *_ENERGY_PER_QUERY,
    ],
    "MultiStream": [
        ("latency_p50_ns", "latency p50", "ns", "latency"),
        ("latency_p90_ns", "latency p90", "ns", "latency"),
        ("latency_p99_ns", "latency p99", "ns", "latency"),
        ("early_stopping_p99_ns", "early-stopping p99 estimate", "ns", "latency"),
        _CPU,
        *_ENERGY_PER_QUERY,
    ],
    "Server": [
        ("samples_per_second", "completed samples/s", "samples/s", "throughput"),
        ("latency_p50_ns", "latency p50", "ns", "latency"),
        ("latency_p90_ns", "latency p90", "ns", "latency"),
        ("latency_p99_ns", "latency p99", "ns", "latency"),
        _CPU,
        *_TOKENS,
        *_ENERGY_PER_SAMPLE,
    ],
    "Offline": [
        ("samples_per_second", "throughput", "samples/s", "throughput"),
        _CPU,
        *_TOKENS,  # an Offline test of a served model: its requests' TTFT and TPOT
        *_ENERGY_PER_SAMPLE,
    ],
}


#: the rows of a legacy MLPerf metric (`repro.mlperf.tree.LEGACY_HEADLINE`, with its unit),
#: compared where an original states it as its headline: a v4.0 Server result, a v1.x
#: MultiStream one
LEGACY_ROWS: dict[str, tuple[str, str, str, str]] = {
    key: (key, key.replace("_", " ").replace(" per second", "/s"), unit, "throughput")
    for key, unit in LEGACY_HEADLINE.values()
}

PERCENTILE_OF = {"latency_p50_ns": 50.0, "latency_p90_ns": 90.0, "latency_p99_ns": 99.0}


def _values(side: Side, tests: list[TestRecord], key: str) -> list[tuple[TestRecord, float]]:
    """The metric of each test that has it; a value that is not a positive finite number is a
    damaged run."""
    values: list[tuple[TestRecord, float]] = []
    for t in tests:
        v = t.metrics.get(key)
        if v is None or (v == 0 and key.startswith("early_stopping_")):
            continue  # LoadGen has no early-stopping estimate for a run with too few queries
        if not positive(v):
            where = (
                side.test_path(t.dir, layout.SUMMARY)
                if side.kind == "mlperf"
                else layout.record_file(side.path)
            )
            raise SpecError(
                f"{where}: {t.scenario} {t.dir}: {key} is {v!r}, not a positive number",
                hint="the published logs are damaged: restore them from the published tree"
                if side.kind == "mlperf"
                else "the run record is damaged: re-run the replay or delete the run",
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


def pooled_histogram(runs: list[tuple[Side, TestRecord]]) -> LatencyHistogram | None:
    """The pooled per-query latency histogram of runs, where they kept one."""
    hists = []
    for side, t in runs:
        if side.kind == "repro" and t.latencies_file:
            path = side.test_path(t.dir, t.latencies_file)
            if path.is_file() and path.suffix == ".npz":
                hists.append(LatencyHistogram.load(path))
    return _pool(hists)


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
    paired_by: PairedRule | None = None,
) -> MetricResult | None:
    """One metric's row; `paired_by`: the sides ran interleaved, their rounds judged in pairs
    by this rule (`repro.compare.pairing.paired_rule`)."""
    paired = paired_by is not None
    pa = _values(orig[0], orig[1], key)
    pb = [pair for side, t in reps for pair in _values(side, [t], key)]
    if paired:
        rounds = sorted({t.repeat for t, _ in pa} & {t.repeat for t, _ in pb})
        pa = [next(x for x in pa if x[0].repeat == k) for k in rounds]
        pb = [next(x for x in pb if x[0].repeat == k) for k in rounds]
    if key in JUDGED_ENERGY and bool(pa) != bool(pb):
        return _not_measured(key, label, unit, [v for _, v in pa], [v for _, v in pb], tol)
    if not pa or not pb:
        return None
    # energy has a tolerance of its own (`Tolerances.energy`); power is shown for information
    tolerance = {
        "throughput": tol.throughput_rel,
        "cpu": tol.throughput_rel,
        "energy": tol.energy,
    }.get(kind, tol.latency_rel)
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
    if paired_by is not None:
        cmp: Comparison = compare_paired(
            fa,
            fb,
            tol=tolerance,
            confidence=paired_by.confidence,
            min_rounds=paired_by.min_rounds,
            more=paired_by.more,
        )
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
    if machines is None or paired or kind in ("energy", "cpu"):
        return result  # the machine probes measure speed, not power nor CPU cost
    return with_machine(result, cmp, (pa, pb), kind, tolerance, tol.confidence, machines)


NOT_MEASURED = "not measured"
LEFT_OUT = "left out"


def left_out_row(key: str, label: str, unit: str, reason: str, *, judged: bool) -> MetricResult:
    """A metric the sides measure by different definitions and neither could be measured
    again by the other's (`repro.compare.definitions`): shown, with why, never judged alike.
    The scenario's MLPerf metric left out leaves the scenario undecided (`judged`)."""
    return MetricResult(
        metric=key,
        label=label,
        unit=unit,
        original=[],
        replay=[],
        original_value=LEFT_OUT,
        replay_value=LEFT_OUT,
        tolerance=0.0,
        method="none",
        verdict="inconclusive",
        reason=reason,
        judged=judged,
    )


def _not_measured(
    key: str, label: str, unit: str, fa: list[float], fb: list[float], tol: Tolerances
) -> MetricResult:
    """An energy row only one side measured: shown, said so, and not judged (no NVML on the
    other side's machine, or it ran on the CPU; repro never takes a missing figure for 0)."""
    side = "replay" if fa else "original"
    return MetricResult(
        metric=key,
        label=label,
        unit=unit,
        original=list(fa),
        replay=list(fb),
        original_value=float(np.mean(fa)) if fa else NOT_MEASURED,
        replay_value=float(np.mean(fb)) if fb else NOT_MEASURED,
        tolerance=tol.energy,
        method="none",
        verdict="inconclusive",
        reason=f"not measured on the {side}: its tests have no energy figure (no NVML, "
        "nvidia-ml-py not installed, or not a GPU run); install nvidia-ml-py on a GPU machine "
        "to measure it",
        judged=False,
    )


def validity_metric(orig: list[TestRecord], rep: list[TestRecord]) -> MetricResult | None:
    a = [v for t in orig if (v := t.metrics.validity)]
    b = [v for t in rep if (v := t.metrics.validity)]
    if not a or not b:
        return None
    verdict, reason = decide_validity(a, b, orig[0].scenario if orig else None)
    return MetricResult(
        metric="validity",
        label="LoadGen validity",
        unit="",
        original=list(a),
        replay=list(b),
        original_value=_validities(a),
        replay_value=_validities(b),
        method="exact",
        verdict=verdict,
        reason=reason,
    )


def _validities(values: list[str]) -> str:
    """VALID, INVALID, or how many of the runs were VALID when they differ."""
    valid = sum(v == "VALID" for v in values)
    if valid in (0, len(values)):
        return "VALID" if valid else "INVALID"
    return f"{valid} of {len(values)} VALID"


def accuracy_metric(
    orig: TestRecord | None, rep: list[TestRecord], tol: Tolerances
) -> MetricResult | None:
    scored = orig.scored() if orig is not None else None
    if scored is None or not rep:
        return None
    a, name = scored.value, scored.metric
    # a different figure (top1 of a published model vs agreement of a stand-in) is no comparison
    sides = [s for t in rep if (s := t.scored()) is not None and (s.metric or name) == name]
    b = [s.value for s in sides if s.value is not None]
    if a is None or not b:
        return None
    higher = scored.higher_is_better
    worst = min(b) if higher else max(b)
    unit = scored.unit
    cmp = compare_accuracy(
        a,
        worst,
        ratio=tol.accuracy_ratio,
        higher_is_better=higher,
        percent=unit == "fraction",
    )
    metric = scored.metric or "accuracy"
    return MetricResult(
        metric="accuracy",
        label=f"accuracy ({metric}{'' if higher else ', lower is better'})",
        unit=unit,
        original=[float(a)],
        replay=[float(v) for v in b],
        original_value=float(a),
        replay_value=worst,
        delta_rel=cmp.delta_rel,
        tolerance=1 - tol.accuracy_ratio,
        method=cmp.method,
        verdict=cmp.verdict,
        reason=cmp.reason,
    )


def agreement_metric(agreement: float, tol: Tolerances) -> MetricResult:
    """The replay's predictions against the original's, judged as an accuracy is (at least
    the accuracy ratio of them the same): what an original recorded without an accuracy
    figure (no reference predictions when it was captured, a TVM original's) is judged by."""
    same = agreement >= tol.accuracy_ratio
    reason = (
        f"{agreement:.2%} of the samples predict the same class as the original's "
        f"(at least {tol.accuracy_ratio:.0%} must); the original recorded no accuracy figure"
    )
    return MetricResult(
        metric="accuracy",
        label="prediction agreement with the original",
        unit="fraction",
        original=[1.0],
        replay=[agreement],
        original_value=1.0,
        replay_value=agreement,
        delta_rel=agreement - 1.0,
        tolerance=1 - tol.accuracy_ratio,
        method="exact",
        verdict="reproduced" if same else "not reproduced",
        reason=reason,
    )


def prediction_agreement(
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


def cdf_points(h: LatencyHistogram | None, points: int = 200) -> CdfPoints | None:
    if h is None:
        return None
    frac = np.cumsum(h.counts) / h.total
    idx = np.unique(np.linspace(0, len(frac) - 1, min(points, len(frac))).astype(int))
    return CdfPoints(
        latency_ns=[float(v) for v in h.values()[idx]], fraction=[float(v) for v in frac[idx]]
    )
