"""The report: every scenario both sides ran, the roll-up, the drift, what was not compared."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

from repro import __version__
from repro.compare.definitions import align
from repro.compare.envdiff import diff_views, view_from_fingerprint, view_from_record
from repro.compare.inputs import different_benchmarks
from repro.compare.machine_sides import (
    BUSY_FRACTION,
    Machines,
    machine_notes,
    machines_of,
    with_busy_validity,
)
from repro.compare.metrics import (
    JUDGED_ENERGY,
    LEGACY_ROWS,
    METRICS,
    accuracy_metric,
    agreement_metric,
    cdf_points,
    compare_metric,
    left_out_row,
    pooled_histogram,
    prediction_agreement,
    validity_metric,
)
from repro.compare.nodes import heterogeneous, node_drift, node_summaries
from repro.compare.pairing import (
    PairedRule,
    busy_rounds,
    pair_rounds,
    paired_rule,
    with_busy_rounds,
)
from repro.compare.profiles import profile_section
from repro.errors import SpecError
from repro.mlperf.tree import HEADLINE as MLPERF_METRIC
from repro.mlperf.tree import headline_metric
from repro.reports.model import (
    DriftEntry,
    MetricResult,
    NotCompared,
    Report,
    ScenarioResult,
    SettingDiff,
    SideInfo,
)
from repro.runs.alignment import finished, gaps, setting_changes
from repro.runs.placement import Placement
from repro.runs.record import Interleave, TestRecord
from repro.runs.store import (
    LoadedRun,
    check_files,
    check_metrics,
)
from repro.spec.models import Tolerances
from repro.stats.verdicts import UNDECIDED, VERDICTS, Verdict, roll_up

Side = LoadedRun


_ORDER = ("SingleStream", "MultiStream", "Server", "Offline")


#: the metric MLPerf reports for each scenario: the ones --until-decided waits for
HEADLINE: dict[str, str] = {scenario: metric for scenario, (metric, _) in MLPERF_METRIC.items()}


def headline_of(scenario: str, tests: list[TestRecord]) -> str:
    """The metric MLPerf reports for a scenario (tokens/s for an LLM's Offline and Server)."""
    return headline_metric(scenario, tests)[0]


def compare_scenario(
    scenario: str,
    orig: Side,
    reps: list[Side],
    tol: Tolerances,
    machines: Machines | None = None,
    paired_by: PairedRule | None = None,
    notes: list[str] | None = None,
    undefined: Mapping[tuple[str, str], str] | None = None,
) -> ScenarioResult | None:
    """One scenario both sides ran; `paired_by`: interleaved rounds judged in pairs by this
    rule, the rounds whose settings differ left out (said in `notes`); `undefined`: the
    metrics the sides define differently, each left out with its reason
    (`repro.compare.definitions`)."""
    o_perf = finished(orig.record.performance(scenario))
    r_perf = [(s, t) for s in reps for t in finished(s.record.performance(scenario))]
    busy = None
    if paired_by is not None:
        pairs = pair_rounds(o_perf, [t for _, t in r_perf])
        busy = busy_rounds(pairs, busy=BUSY_FRACTION)
        kept = {k for k, _, _ in pairs.rounds}
        o_perf = [t for t in o_perf if t.repeat in kept]
        r_perf = [(s, t) for s, t in r_perf if t.repeat in kept]
        if notes is not None and (note := pairs.note(scenario)) is not None:
            notes.append(note)
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
    hist_o = pooled_histogram([(orig, t) for t in o_perf]) if scenario != "Offline" else None
    hist_r = pooled_histogram(r_perf) if scenario != "Offline" else None
    rep_tests = [t for _, t in r_perf]
    metrics = [
        with_busy_validity(m, rep_tests)
        for m in (validity_metric(o_perf, rep_tests),)
        if m is not None
    ]
    apart = machines.not_comparable() if machines is not None else None
    if apart is not None and metrics:
        metrics[0] = metrics[0].model_copy(
            update={
                "verdict": apart[0],
                "raw_verdict": metrics[0].raw_verdict or metrics[0].verdict,
                "reason": f"{metrics[0].reason}; LoadGen's bounds depend on the hardware"
                + ("" if machines and machines.hardware else ", which is unknown"),
            }
        )
    headline = headline_of(scenario, [*o_perf, *rep_tests])
    rows = METRICS.get(scenario, [])
    if headline in LEGACY_ROWS and all(key != headline for key, *_ in rows):
        rows = [LEGACY_ROWS[headline], *rows]
    for key, label, unit, kind in rows:
        if key == headline:
            label += " (MLPerf metric)"
        why = (undefined or {}).get((scenario, key))
        if why is not None:
            if any(t.metrics.get(key) is not None for t in [*o_perf, *rep_tests]):
                metrics.append(left_out_row(key, label, unit, why, judged=key == headline))
            continue
        m = compare_metric(
            key,
            label,
            unit,
            kind,
            (orig, o_perf),
            r_perf,
            (hist_o, hist_r),
            tol,
            machines,
            paired_by,
        )
        if m is not None:
            m = with_busy_rounds(m, kind, busy)
            # MLPerf judges one metric per scenario (and a power result's energy); the others
            # are shown for information
            judged = (key == headline or key in JUDGED_ENERGY) and m.judged
            metrics.append(m.model_copy(update={"judged": judged}))
    metrics = with_cpu_witness(metrics, headline)
    acc = accuracy_metric(o_acc, [t for _, t in r_acc], tol)
    agreement = prediction_agreement(orig, o_acc, r_acc)
    if acc is not None:
        metrics.append(acc)
    elif agreement is not None and o_acc is not None and _no_figure(o_acc):
        # an original without a figure (none to score it by): its predictions are judged
        metrics.append(agreement_metric(agreement, tol))
    cdf = {
        k: c
        for k, c in (("original", cdf_points(hist_o)), ("replay", cdf_points(hist_r)))
        if c is not None
    }
    return ScenarioResult(
        scenario=scenario,
        verdict=roll_up(m.verdict for m in metrics if m.judged),
        metrics=metrics,
        prediction_agreement=agreement,
        cdf=cdf,
    )


def with_cpu_witness(metrics: list[MetricResult], headline: str) -> list[MetricResult]:
    """The headline row says so when wall time left it undecided and CPU time decided: the
    samples per CPU second reproduced (the work per sample is the same; what moved is the CPU
    the tests got, or their parallelism) or not (the work per sample changed)."""
    head = next((m for m in metrics if m.metric == headline and m.judged), None)
    cpu = next((m for m in metrics if m.metric == "samples_per_cpu_second"), None)
    if head is None or cpu is None or head.verdict not in UNDECIDED:
        return metrics
    if cpu.verdict not in ("reproduced", "not reproduced"):
        return metrics
    shown = f"{cpu.delta_rel:+.1%}" if cpu.delta_rel is not None else ""
    if cpu.ci:
        shown += f" [{cpu.ci[0]:+.1%}, {cpu.ci[1]:+.1%}]"
    meaning = (
        "the work per sample is the same; what moved is the CPU the tests got (other work on "
        "the machine) or their parallelism"
        if cpu.verdict == "reproduced"
        else "the work per sample changed"
    )
    said = (
        f"; wall time is undecided and CPU time is decided: samples per CPU second "
        f"{cpu.verdict} ({shown}): {meaning}"
    )
    return [m.model_copy(update={"reason": m.reason + said}) if m is head else m for m in metrics]


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
            if k
            in (
                "manager",
                "reason",
                "python_lock_sha256",
                # what another harness recorded of itself and the server (never pinned)
                "tool",
                "tool_version",
                "server_url",
                "model",
                "server_pinned",
                "format",
                "harness",
            )
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


def _no_figure(test: TestRecord) -> bool:
    """An accuracy test that recorded no figure (captured before reference predictions)."""
    scored = test.scored()
    return scored is None or scored.value is None


def changed_artifacts(orig: Side, rep: Side) -> list[str]:
    """What changed in the experiment's artifacts, named first when two specs differ: `model:
    sha256 527db6433c2f -> 9a1c0e2b7d44 (path a.onnx -> b.onnx)`."""

    def arts(side: Side) -> dict[str, Any]:
        return (side.record.spec or {}).get("artifacts") or {}

    a, b = arts(orig), arts(rep)
    out = []
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name) or {}, b.get(name) or {}
        if x.get("sha256") == y.get("sha256"):
            continue
        if not x or not y:
            out.append(f"{name}: only the {'replay' if y else 'original'} has it")
            continue
        sources = [
            f"{k} {x.get(k)} -> {y.get(k)}"
            for k in ("path", "url", "recipe", "params")
            if x.get(k) != y.get(k)
        ]
        out.append(
            f"{name}: sha256 {str(x.get('sha256'))[:12]} -> {str(y.get('sha256'))[:12]}"
            + (f" ({', '.join(sources)})" if sources else "")
        )
    return out


def _for_information(result: ScenarioResult, benchmarks: list[str]) -> ScenarioResult:
    """A scenario of two different benchmarks (--allow-different-benchmarks): every row is
    shown with its figures, none is judged (the accuracy of two models, the speed of two
    workloads say nothing of each other)."""
    verdict: Verdict = "not comparable: different benchmarks"
    why = (
        f"not comparable: different benchmarks ({' vs '.join(benchmarks)}); shown for "
        "information only"
    )
    metrics = [
        m.model_copy(update={"verdict": verdict, "reason": f"{why}; the figures: {m.reason}"})
        for m in result.metrics
    ]
    return result.model_copy(update={"verdict": verdict, "metrics": metrics})


def build_report(
    orig: Side,
    reps: list[Side],
    *,
    tolerances: Tolerances,
    strict: bool = False,
    tolerances_source: str | None = None,
    same_hardware: bool = False,
) -> Report:
    """Compare every scenario both sides ran; the overall verdict is the worst of them.
    `same_hardware`: the user says the sides ran on the same hardware where the records cannot
    tell (another harness's result records none)."""
    aligned = align(orig, reps)  # served figures on one definition each (or left out)
    orig, reps = aligned.orig, aligned.reps
    nodes = node_summaries(orig, reps[0])
    machines = machines_of(orig, reps)
    node_hardware = sorted({f"{n.node}: {d}" for n in nodes for d in n.hardware_vs_original})
    if node_hardware and not machines.hardware:
        machines = dataclasses.replace(machines, hardware=tuple(node_hardware))
    paired = is_paired(orig, reps)
    if paired:  # interleaved on one machine: the same hardware, whatever the records say
        machines = dataclasses.replace(machines, unknown=())
    taken_same = same_hardware and bool(machines.unknown) and not machines.hardware
    if taken_same:  # the user's word where no record tells
        machines = dataclasses.replace(machines, unknown=())
    paired_by = paired_rule(reps[0].record, tolerances.confidence) if paired else None
    scenarios = []
    left_out: list[str] = []
    for scenario in _ORDER:
        result = compare_scenario(
            scenario,
            orig,
            reps,
            tolerances,
            machines,
            paired_by,
            notes=left_out,
            undefined=aligned.left_out,
        )
        if result is not None:
            scenarios.append(result)
    notes = [f"tolerances: {tolerances_source}"] if tolerances_source else []
    if taken_same:
        notes.append("hardware: taken to be the same (--same-hardware): a side's record names none")
    notes += left_out + aligned.notes
    if not paired:
        notes += machine_notes(machines)
    unfinished = [p for p in reps[0].record.parts if p.status not in ("complete", "invalid")]
    if unfinished:
        notes.append(
            f"the replay is missing {len(unfinished)} of its {len(reps[0].record.parts)} parts ("
            + ", ".join(f"part {p.index}: {p.status}" for p in unfinished)
            + "): the figures come from the parts that finished; `repro replay --resume` runs "
            "the rest"
        )
    if nodes:
        notes.append(
            f"dispatched: the replay ran as {len(reps[0].record.parts)} part(s) on "
            f"{len(nodes)} node(s)"
            + ("; the nodes are different hardware (see the nodes)" if heterogeneous(nodes) else "")
        )
    if paired:
        il = reps[0].record.interleave or Interleave()
        notes.append(
            f"paired: the two sides ran interleaved on one machine, {il.rounds or '?'} "
            f"round(s) in a random order (seed {il.seed}); each performance metric is "
            "judged on its per-round ratios (a signed-rank interval"
            + (
                f" at {paired_by.confidence:.4g}, each look's share of {tolerances.confidence:g}"
                if paired_by is not None and paired_by.confidence != tolerances.confidence
                else ""
            )
            + ")"
            + (
                f"; placement: {placed.describe()}"
                if (placed := Placement.from_record(il.placement)) is not None
                else ""
            )
        )
    for name, side in (("original", orig), *(("replay", r) for r in reps)):
        notes += [f"{name} ({side.path}): {n}" for n in side.record.notes]
    for side in reps:
        stop = side.record.stopping
        if stop:
            after = stop.decided_after
            each = (
                "; decided: "
                + ", ".join(f"{scenario} after round {k}" for scenario, k in after.items())
                if after
                else ""
            )
            notes.append(
                f"stopping: {stop.rounds} round(s) of at most {stop.max_rounds} "
                f"(and {stop.max_time_s} s), stopped because {stop.stopped}; "
                f"{stop.elapsed_s} s of replay{each}"
            )
    # CPU time is repro's own witness: a side that is not a repro run never has it
    only_repro = (
        {"samples_per_cpu_second"} if any(s.kind != "repro" for s in (orig, *reps)) else set()
    )
    missing = [
        NotCompared(scenario=g.scenario, mode=g.mode, metric=g.metric, reason=g.reason)
        for g in gaps(orig.record, [r.record for r in reps], _metric_keys())
        if g.metric not in only_repro
    ]
    scenarios = [s for s in scenarios if s.metrics]
    profile = profile_section(orig, reps[0])
    profiles_only = (
        not scenarios
        and profile is not None
        and profile.diff is not None
        and not orig.record.tests
        and not reps[0].record.tests
    )
    if not scenarios and not profiles_only:
        what = "; ".join(f"{m.scenario} {m.mode}: {m.reason}" for m in missing) or "no results"
        raise SpecError(
            f"nothing to compare: the replay ({', '.join(str(r.path) for r in reps)}) covers "
            f"none of what the original ({orig.path}) ran ({what})",
            hint="replay the scenarios and modes the original ran (see `repro replay --help`)",
        )
    if orig.kind == "repro" and any(
        r.kind == "repro" and r.record.spec_id != orig.record.spec_id for r in reps
    ):
        changed = changed_artifacts(orig, reps[0])
        notes.append(
            "the replay ran a different spec id than the original (--allow-different-specs): "
            "the experiment itself was changed"
            + (f": {'; '.join(changed)}" if changed else "")
            + " (see the settings and the drift)"
        )
    benchmarks = different_benchmarks([orig, *reps])
    if benchmarks:
        scenarios = [_for_information(s, benchmarks) for s in scenarios]
    verdict = roll_up(s.verdict for s in scenarios) if scenarios else "inconclusive"
    judged = [m for s in scenarios for m in s.metrics if m.judged]
    counts = {
        v: sum(m.verdict == v for m in judged)
        for v in ("reproduced", "not reproduced", "inconclusive")
    }
    others = {
        v: n for v in VERDICTS if v not in counts and (n := sum(m.verdict == v for m in judged))
    }
    shown = sum(not m.judged for s in scenarios for m in s.metrics)
    energy = any(m.metric in JUDGED_ENERGY for m in judged)
    judged_kinds = "validity, accuracy and energy" if energy else "validity and accuracy"
    in_original = [
        sc for sc in _ORDER if orig.record.performance(sc) or orig.record.accuracy_test(sc)
    ]
    summary = (
        f"{verdict.upper()}: {counts['reproduced']} metric(s) reproduced, "
        f"{counts['not reproduced']} not reproduced, {counts['inconclusive']} inconclusive"
        + "".join(f", {n} {v}" for v, n in others.items())
        + f" (the MLPerf metric of each scenario, {judged_kinds}; {shown} more shown for "
        "information)" + f"; {len(scenarios)} of {len(in_original)} scenario(s) compared"
    )
    if benchmarks:
        summary = (
            f"FOR INFORMATION ONLY, different benchmarks ({' vs '.join(benchmarks)}): " + summary
        )
    apart = machines.not_comparable()
    if apart is not None and not benchmarks:  # different benchmarks: nothing is judged
        summary += (
            f"; {apart[0].removeprefix('not comparable: ')}: performance is shown for "
            "information, accuracy and predictions are judged"
        )
    if missing:
        summary += f"; {len(missing)} part(s) of the original not compared (listed)"
    if unfinished:
        summary += f"; {len(unfinished)} dispatched part(s) of the replay did not finish (listed)"
    if profiles_only:
        assert profile is not None
        assert profile.diff is not None
        summary = (
            "PROFILES ONLY: neither run has measured tests, so nothing is judged; the layer "
            f"profiles compared: {profile.diff.headline()}"
        )
    integrity = [
        p
        for side in (orig, *reps)
        if side.kind == "repro"
        for p in (*check_files(side), *check_metrics(side))
    ]
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
        tolerances=tolerances.model_dump(exclude_none=True),
        original=_side_info(orig),
        replays=[_side_info(r) for r in reps],
        scenarios=scenarios,
        drift=node_drift(orig, nodes) + _drift(orig, reps),
        not_compared=missing,
        integrity=integrity,
        different_hardware=list(machines.hardware),
        unknown_hardware=[] if machines.hardware else list(machines.unknown),
        settings=[
            SettingDiff(scope=c.scope, key=c.key, original=c.original, replay=c.replay)
            for c in setting_changes(orig.record, reps[0].record)
        ],
        nodes=nodes,
        profile=profile,
        notes=notes,
    )


def is_paired(orig: Side, reps: list[Side]) -> bool:
    """The sides ran interleaved with each other (one pairing id, one replay)."""
    a, b = orig.record.interleave, reps[0].record.interleave if len(reps) == 1 else None
    return bool(a and b and a.id and a.id == b.id)


def decided(report: Report) -> bool:
    """Every headline metric and every accuracy is decided (inside or outside its tolerance)."""
    return not undecided_scenarios(report)


def undecided_scenarios(report: Report) -> set[str]:
    """The scenarios with a headline metric or an accuracy still undecided."""
    undecided = UNDECIDED
    return {
        s.scenario
        for s in report.scenarios
        for m in s.metrics
        if ((m.judged and m.metric != "validity") or m.metric == "accuracy")
        and m.verdict in undecided
    }


def _metric_keys() -> dict[str, list[str]]:
    return {scenario: [m[0] for m in metrics] for scenario, metrics in METRICS.items()}
