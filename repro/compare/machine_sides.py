"""The machines behind the two sides: probe spreads, hardware differences, adjusted verdicts."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Literal

from repro.reports.model import (
    MachineAdjustment,
    MetricResult,
)
from repro.runs.alignment import hardware_compared, hardware_differences, known_hardware
from repro.runs.record import TestRecord
from repro.runs.store import (
    LoadedRun,
)
from repro.stats.significance import (
    Comparison,
)
from repro.stats.speed_adjust import (
    PROBE_REL_ERROR,
    SpeedKey,
    compare_adjusted,
    machine_delta,
    positive,
    speed_key,
    spread,
    test_speed,
)
from repro.stats.verdicts import POSITIVE, UNDECIDED, Verdict, combine

Side = LoadedRun
SideName = Literal["original", "replay"]


#: a machine is busy when other processes used more than this share of its CPU time during
#: a side's measured tests (the probes' others_cpu_frac; on a 2-CPU VM, a fifth of a core):
#: another job shares the cores and caches, and the µs-scale work of a small model slows by
#: more than the compute and memory probes show (seen here: identical software 24-35 % apart
#: between two sessions on one machine while the probes moved < 8 %)
BUSY_FRACTION = 0.10


@dataclass(frozen=True)
class Machines:
    """What the report knows about the two machines: probe spreads, the CPU share other
    processes took during each side's tests, and hardware differences."""

    spread_original: float | None
    spread_replay: float | None
    hardware: tuple[str, ...] = ()
    others_original: float | None = None
    others_replay: float | None = None
    #: the probe figure both sides are adjusted by (`repro.stats.speed_adjust.SPEED_KEYS`)
    speed_key: SpeedKey = "compute_gflops"
    #: the time one sample took through the harness on the slower side, where both sides are
    #: probed repro runs on the CPU (`_sample_seconds`); None otherwise
    sample_s: float | None = None
    #: why the two machines cannot be compared at all (`unknown_hardware`); empty when they can
    unknown: tuple[str, ...] = ()

    def unstable(self, tol: float) -> bool:
        return any(s is not None and s > tol for s in (self.spread_original, self.spread_replay))

    def not_comparable(self) -> tuple[Verdict, str] | None:
        """The verdict of every speed and validity row when the hardware differs or is unknown,
        and why in a few words; None when the machines are comparable."""
        if self.hardware:
            return (
                "not comparable: different hardware",
                f"different hardware ({'; '.join(self.hardware)})",
            )
        if self.unknown:
            return (
                "not comparable: hardware unknown",
                f"hardware unknown: {'; '.join(self.unknown)}",
            )
        return None


def machines_of(orig: Side, reps: list[Side]) -> Machines:
    """Probe spreads of each side and how the hardware differs (first replay)."""
    key = speed_key(
        p
        for side in [orig, *reps]
        for t in side.record.tests
        for p in (t.probe_before, t.probe_after)
    )

    def side_spread(sides: list[Side]) -> float | None:
        # the tests' speeds (the faster probe of each pair), as the adjustment uses them
        speeds = [
            s.index
            for side in sides
            for t in side.record.tests
            if (s := test_speed(t.probe_before, t.probe_after, key=key)) is not None
        ]
        return spread(speeds) if speeds else None

    def side_others(sides: list[Side]) -> float | None:
        return others_share([t for side in sides for t in side.record.tests])

    return Machines(
        spread_original=side_spread([orig]),
        spread_replay=side_spread(reps),
        hardware=tuple(hardware_differences(orig.record.fingerprint, reps[0].record.fingerprint)),
        others_original=side_others([orig]),
        others_replay=side_others(reps),
        speed_key=key,
        sample_s=_slower_sample_seconds(orig, reps),
        unknown=unknown_hardware(orig, reps[0]),
    )


def unknown_hardware(orig: Side, rep: Side) -> tuple[str, ...]:
    """Why the two sides' machines can be neither the same nor different hardware: no fact
    `hardware_differences` compares (CPU model, CPU count, accelerators) is known to both. A
    published result read without its system description (a result folder copied out of its
    tree, a compliance test's folder) knows none: its speed is another machine's, or not, and
    nothing says which. Empty when the machines can be compared."""
    a, b = orig.record.fingerprint, rep.record.fingerprint
    if hardware_compared(a, b):
        return ()
    sides = (("original", orig, known_hardware(a)), ("replay", rep, known_hardware(b)))
    blind = [
        f"the {name} is a published result without its system description (systems/<system>.json)"
        if side.kind == "mlperf"
        else f"the {name} recorded no hardware"
        for name, side, facts in sides
        if not facts
    ]
    if blind:
        return tuple(blind)
    return tuple(f"the {name} names only {', '.join(facts)}" for name, _, facts in sides)


def _slower_sample_seconds(orig: Side, reps: list[Side]) -> float | None:
    """The longer of the two sides' times a sample took (`_sample_seconds`), when both sides
    are probed repro runs that say (a published result has no probes)."""
    times = [
        _sample_seconds(
            [t for side in sides for t in side.record.tests if side.record.probes_version]
        )
        for sides in ([orig], reps)
    ]
    return max(t for t in times if t is not None) if all(times) else None


def _sample_seconds(tests: list[TestRecord]) -> float | None:
    """The median time one sample took through the harness in these performance tests, all on
    the CPU: SingleStream's p50 latency (a query of one sample), else MultiStream's p50 per
    sample of its query. None without them (Offline and Server time queues, not samples) or
    when a test ran elsewhere or does not say where."""
    perf = [t for t in tests if t.mode == "performance"]
    if not perf or any(t.backend_facts().on_cpu() is not True for t in perf):
        return None
    for scenario, per_query in (("SingleStream", False), ("MultiStream", True)):
        figures = [t.metrics for t in perf if t.scenario == scenario]
        times = [
            p50 / 1e9 / ((f.samples_per_query or 1) if per_query else 1.0)
            for f in figures
            if (p50 := f.latency_p50_ns) is not None and positive(p50)
        ]
        if times:
            return float(statistics.median(times))
    return None


def others_share(tests: list[TestRecord]) -> float | None:
    """The mean share of the machine's CPU time other processes took during these performance
    tests (each test's probe after it covers the test), where the probes read it."""
    shares = [
        float(t.probe_after["others_cpu_frac"])
        for t in tests
        if t.mode == "performance"
        and t.probe_after
        and isinstance(t.probe_after.get("others_cpu_frac"), int | float)
    ]
    return sum(shares) / len(shares) if shares else None


def busy_share(tests: list[TestRecord]) -> float | None:
    """The share of the CPU time other processes took during these tests, when it is above
    BUSY_FRACTION (they ran beside other work); None when it is not, or unknown."""
    share = others_share(tests)
    return share if share is not None and share > BUSY_FRACTION else None


def with_busy_validity(result: MetricResult, replay_tests: list[TestRecord]) -> MetricResult:
    """LoadGen's validity when the replay ran beside other work: a latency bound broken on a
    busy machine cannot be told from a regression, so replay runs INVALID more often than the
    original's are undecided there, as the scenario's speed is (`_busy_slower_side`). An
    original that ran beside other work excuses nothing: the replay was the worse side on a
    quieter machine."""
    share = busy_share(replay_tests)
    if result.verdict != "not reproduced" or share is None:
        return result
    return result.model_copy(
        update={
            "verdict": "inconclusive: machine unstable",
            "raw_verdict": result.verdict,
            "reason": f"{result.reason}; machine busy: other processes used {share:.0%} of the "
            "machine's CPU time during the replay's tests, and a latency bound breaks on a "
            "busy machine, so its INVALID runs cannot be told from a regression: replay on a "
            "quiet machine",
        }
    )


def machine_notes(machines: Machines) -> list[str]:
    """What the probes saw of other work on each side's machine, where they read it."""
    known = [
        f"{share:.0%} ({side})"
        for side, share in (
            ("original", machines.others_original),
            ("replay", machines.others_replay),
        )
        if share is not None
    ]
    if not known:
        return []
    note = f"machine: other processes used {' and '.join(known)} of the CPU time during the tests"
    if any(
        share is not None and share > BUSY_FRACTION
        for share in (machines.others_original, machines.others_replay)
    ):
        note += (
            f"; above {BUSY_FRACTION:.0%} a side ran beside other work: a performance "
            "difference that makes that side the slower one is not taken for a change of the "
            "software, nor are the INVALID runs of a busy replay"
        )
    return [note]


def with_machine(
    result: MetricResult,
    raw: Comparison,
    pairs: tuple[list[tuple[TestRecord, float]], list[tuple[TestRecord, float]]],
    kind: str,
    tolerance: float,
    confidence: float,
    machines: Machines,
) -> MetricResult:
    """The raw comparison joined by the machine-adjusted one, and their combined verdict."""
    key = machines.speed_key
    sa = [test_speed(t.probe_before, t.probe_after, key=key) for t, _ in pairs[0]]
    sb = [test_speed(t.probe_before, t.probe_after, key=key) for t, _ in pairs[1]]
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
            speed_index=key,
        )
        update["adjusted"] = adjusted
    verdict = combine(
        raw.verdict,
        adjusted.verdict if adjusted else None,
        unstable=machines.unstable(tolerance),
    )
    # a difference the machine explains as well as the software would is undecided: the first
    # explanation that holds gives the reason
    explained = _machine_explains(
        verdict,
        raw,
        adjusted,
        kind,
        tolerance,
        ([v for _, v in pairs[0]], [v for _, v in pairs[1]]),
        (others_share([t for t, _ in pairs[0]]), others_share([t for t, _ in pairs[1]])),
        sample_s=machines.sample_s if adjusted is not None else None,
    )
    if explained is not None:
        verdict = "inconclusive: machine unstable"
    apart = machines.not_comparable()
    if apart is not None:
        verdict = apart[0]
    if verdict != raw.verdict:
        update["raw_verdict"] = raw.verdict
    if explained is not None and apart is None:
        update["reason"] = explained[1]
    elif verdict != raw.verdict or adjusted is not None:
        update["reason"] = _machine_reason(verdict, raw, adjusted, machines, tolerance)
    if adjusted is not None:
        cause = apart[0].removeprefix("not comparable: ") if apart else explained and explained[0]
        note = _adjusted_note(verdict, raw.verdict, adjusted.verdict, cause)
        update["adjusted"] = adjusted.model_copy(update={"note": note})
    update["verdict"] = verdict
    return result.model_copy(update=update)


def _adjusted_note(
    verdict: Verdict, raw: Verdict, adjusted: Verdict, cause: str | None
) -> str | None:
    """Why the adjusted comparison does not decide the metric, where its verdict alone would
    say something else than the metric's (a reader sees both rows); None where they agree."""
    if adjusted == verdict or {adjusted, verdict} <= POSITIVE or {adjusted, verdict} <= UNDECIDED:
        return None
    if cause in ("different hardware", "hardware unknown"):
        return f"does not count: {cause}, speed is shown for information"
    if cause is not None:
        return f"does not count: {cause}, which explains the difference (see the metric's reason)"
    if raw == "reproduced":
        return (
            "does not count: as measured the metric lies inside the tolerance; the adjustment "
            "explains a measured difference, it never fails a metric that reproduced as measured"
        )
    return f"does not count: the metric's verdict is {verdict}"


#: a move of the machine between the sides that the probes can tell from their own noise
#: (twice a probe's repeatability)
MACHINE_MOVE = 2 * PROBE_REL_ERROR

#: work whose samples take less than this through the harness (SingleStream's p50) is
#: µs-scale: bound by the interpreter, LoadGen's threads, wake-ups and the caches more than by
#: the compute the probes measure (the digits model: 8-25 µs; a ResNet-50: 25-35 ms)
MICRO_SCALE_S = 1e-4
#: how far identical µs-scale software moved between two sessions of one VM, as a factor:
#: the ort-digits original captured twice, 3 h apart, same spec id and lock, other processes
#: < 1 % of the CPU time both times: Offline 0.55 vs 0.84 M samples/s (1.5x), SingleStream p90
#: 19.0 vs 8.4 µs (2.3x), MultiStream p90 37.7 vs 19.0 µs (2.0x), the probes 1.2x; between
#: sessions a difference within this factor cannot be told from the machine
MICRO_SESSION_FACTOR = 2.5


def _within_micro_session(delta_rel: float, sample_s: float) -> bool:
    """Whether the work is µs-scale (a sample under MICRO_SCALE_S through the harness on both
    sides) and the difference within what a session of the machine moves such work by
    (MICRO_SESSION_FACTOR either way). No probe tried here follows those moves (the compute
    and memory kernels, a Python loop, a tiny onnxruntime model, µs-latency loops), so
    between sessions a µs-scale metric is judged only beyond them; interleaved, it is judged
    as any other (`with_machine` is not used for paired comparisons)."""
    if sample_s >= MICRO_SCALE_S or delta_rel <= -1:
        return False
    ratio = 1 + delta_rel
    return max(ratio, 1 / ratio) < MICRO_SESSION_FACTOR


def _machine_moved_along(delta_rel: float, machine_delta: float, kind: str) -> float | None:
    """The machine's speed-up between the sides when the replay was faster too: by how much a
    faster machine speeds a workload up depends on what bounds the workload, which one speed
    index cannot know (measured here: a session whose compute probe was 17 % faster ran the
    µs-scale digits model 50 % faster), so a replay faster than its original on a faster
    machine is not taken for a change of the software. A slower replay is still judged on the
    adjusted comparison, on a slower machine too: a regression must not hide behind a
    machine's phase. None when the machine was not faster beyond the probes' noise or the
    replay was not faster."""
    if machine_delta <= MACHINE_MOVE:
        return None
    faster = delta_rel < 0 if kind == "latency" else delta_rel > 0
    return machine_delta if faster else None


def _within_session_drift(
    ci: list[float] | None, values: tuple[list[float], list[float]], tol: float
) -> float | None:
    """How far the metric itself moved within one session, when that could explain a
    difference judged outside the tolerance; None when it cannot.

    The two sides of an unpaired comparison ran in different sessions (hours or machines
    apart), and the interval of the difference only knows the noise within each session
    (Kalibera & Jones: the error term belongs to the level where the variation lives). On
    these VMs a metric's runs move by up to ~10 % within minutes, phases the probes do not
    always see, and between sessions by as much: so a difference is taken for a change of the
    software only when its interval lies outside the tolerance widened by the largest
    relative range of the metric's runs within either side (max / min - 1).
    """
    if ci is None:
        return None
    ranges = [max(v) / min(v) - 1 for v in values if len(v) >= 2 and min(v) > 0]
    if not ranges:
        return None
    drift = max(ranges)
    bound = tol + drift
    if ci[1] < -bound or ci[0] > bound:
        return None
    return drift


def _drift_reason(
    raw: Comparison, adjusted: MachineAdjustment | None, drift: float, tol: float
) -> str:
    shown = (
        f"{adjusted.delta_rel:+.1%} adjusted for the machine ({raw.delta_rel:+.1%} as measured)"
        if adjusted is not None
        else f"{raw.delta_rel:+.1%}"
    )
    return (
        f"{raw.reason}; but the metric's own runs moved by up to {drift:.0%} within one "
        f"session, and the two sides ran in different sessions: a difference of {shown} "
        f"is not beyond +/-{tol + drift:.0%} (the tolerance and that drift), so it cannot be "
        "told from the machine's phases: interleave (`repro replay SPEC --against ...`) to "
        "judge it"
    )


def _machine_explains(
    verdict: str,
    raw: Comparison,
    adjusted: MachineAdjustment | None,
    kind: str,
    tolerance: float,
    values: tuple[list[float], list[float]],
    shares: tuple[float | None, float | None],
    *,
    sample_s: float | None,
) -> tuple[str, str] | None:
    """Why the machine explains the difference as well as a change of the software would, as
    (the cause in a few words, the metric's reason), or None: the slower side ran beside other
    work; the difference lies within the metric's own drift in a session; the replay was
    faster on a faster machine; the work is µs-scale and the difference within what sessions
    move such work by."""
    busy = _busy_slower_side(
        verdict, adjusted.delta_rel if adjusted is not None else raw.delta_rel, kind, shares
    )
    if busy is not None:
        return (
            f"the {busy[0]} ran beside other work ({busy[1]:.0%} of the CPU time)",
            _busy_reason(raw, adjusted, kind, busy),
        )
    if verdict != "not reproduced":
        return None
    drift = _within_session_drift(
        adjusted.ci if adjusted is not None else (list(raw.ci) if raw.ci else None),
        values,
        tolerance,
    )
    if drift is not None:
        return (
            f"the metric's own runs moved by up to {drift:.0%} within one session",
            _drift_reason(raw, adjusted, drift, tolerance),
        )
    moved = (
        _machine_moved_along(raw.delta_rel, adjusted.machine_delta_rel, kind)
        if adjusted is not None
        else None
    )
    if moved is not None:
        return f"the replay ran faster on a machine {moved:.1%} faster by the probes", (
            f"{raw.reason}; the replay's machine was {moved:.1%} faster by the probes and the "
            "replay faster still: the probes' speed index need not scale this workload one to "
            "one (µs-scale work is bound by the interpreter and the caches more than by the "
            "compute kernel), so a speed-up on a faster machine cannot be told from a change "
            "of the software: interleave (`repro replay SPEC --against ...`) to judge it"
        )
    if sample_s is not None and _within_micro_session(raw.delta_rel, sample_s):
        return "µs-scale work moves between sessions by more than the probes show", (
            f"{raw.reason}; but this is µs-scale work (a sample took {sample_s * 1e6:.1f} µs "
            "through the harness), and such work moves between sessions of a machine by more "
            "than the probes show (measured with ort-digits on a 2-vCPU VM: identical software "
            "2.3x faster in one session than in another, the probes 1.2x): against a stored "
            f"original a difference under {MICRO_SESSION_FACTOR}x is not taken for a change "
            "of the software, so a smaller regression is not detected this way: interleave "
            "(`repro replay SPEC --against ...`) to judge it"
        )
    return None


def _busy_slower_side(
    verdict: str, delta_rel: float, kind: str, shares: tuple[float | None, float | None]
) -> tuple[SideName, float] | None:
    """The side that ran beside other work and was the slower one, when that leaves the
    verdict undecided: a difference that a busy machine explains as well as a change of the
    software would is neither a reproduction nor a regression. A side that is slower while
    the other one was busy is slower for a reason of its own: judged as it is."""
    if verdict not in ("not reproduced", "inconclusive", "inconclusive: machine unstable"):
        return None
    slower = _slower_side(delta_rel, kind)
    share = shares[0] if slower == "original" else shares[1]
    if share is None or share <= BUSY_FRACTION:
        return None
    return slower, share


def _slower_side(delta_rel: float, kind: str) -> SideName:
    """The side a difference (replay / original - 1) makes the slower one."""
    if kind == "latency":
        return "replay" if delta_rel > 0 else "original"
    return "replay" if delta_rel < 0 else "original"


def _busy_reason(
    raw: Comparison, adjusted: MachineAdjustment | None, kind: str, busy: tuple[SideName, float]
) -> str:
    """The reason of a difference a busy side explains, from the figures the row shows: where
    only the adjusted difference makes the busy side the slower one, it says so."""
    side, share = busy
    fix = (
        "re-capture the original on a quiet machine"
        if side == "original"
        else "replay on a quiet machine"
    )
    which = f"the {side} was the slower side"
    if adjusted is not None and _slower_side(raw.delta_rel, kind) != side:
        faster = "faster" if adjusted.machine_delta_rel > 0 else "slower"
        which = (
            f"the replay's machine was {abs(adjusted.machine_delta_rel):.1%} {faster} by the "
            f"probes, and adjusted for the machine the difference is {adjusted.delta_rel:+.1%}, "
            f"which makes the {side} the slower side (as measured it is the faster one)"
        )
    return (
        f"{raw.reason}; machine busy: {which}, and other processes used {share:.0%} of the "
        f"machine's CPU time during the {side}'s tests: a busy machine slows the work by more "
        "than the probes show, so the difference cannot be told from a change of the software: "
        f"{fix}, or interleave (`repro replay SPEC --against ...`)"
    )


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
    apart = machines.not_comparable()
    if apart is not None and verdict == apart[0]:
        return f"{apart[1]}: the raw difference {raw.delta_rel:+.1%} is shown for information" + (
            f"; {machine}" if machine else ""
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
