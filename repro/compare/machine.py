"""The machines behind the two sides: probe spreads, hardware differences, adjusted verdicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repro.reports.model import (
    MachineAdjustment,
    MetricResult,
)
from repro.runs.alignment import hardware_differences
from repro.runs.record import TestRecord
from repro.runs.store import (
    LoadedRun,
)
from repro.stats.machine import compare_adjusted, machine_delta, spread, test_speed
from repro.stats.significance import (
    Comparison,
)
from repro.verdicts import combine

Side = LoadedRun


#: a machine is busy when other processes used more than this share of its CPU time during
#: a side's measured tests (the probes' others_cpu_frac): another job shares the cores and
#: caches, and the µs-scale work of a small model slows by more than any tolerance (measured
#: here: an original captured beside other work ran SingleStream 24 % and the MultiStream p99
#: 35 % slower than a quiet replay, with the compute and memory probes within 8 %)
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

    def unstable(self, tol: float) -> bool:
        return any(s is not None and s > tol for s in (self.spread_original, self.spread_replay))

    def busy(self, side: str) -> bool:
        share = self.others_original if side == "original" else self.others_replay
        return share is not None and share > BUSY_FRACTION

    def busy_sides(self) -> list[str]:
        return [side for side in ("original", "replay") if self.busy(side)]

    def busy_text(self) -> str:
        """'other processes used 23% of the CPU time during the original's tests'."""
        parts = [
            f"{share:.0%} during the {side}'s tests"
            for side, share in (
                ("original", self.others_original),
                ("replay", self.others_replay),
            )
            if share is not None and share > BUSY_FRACTION
        ]
        return "other processes used " + " and ".join(parts) + " of the machine's CPU time"


def machines_of(orig: Side, reps: list[Side]) -> Machines:
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

    def side_others(sides: list[Side]) -> float | None:
        shares = [
            float(t.probe_after["others_cpu_frac"])
            for side in sides
            for t in side.record.tests
            if t.mode == "performance"
            and t.probe_after
            and isinstance(t.probe_after.get("others_cpu_frac"), int | float)
        ]
        return sum(shares) / len(shares) if shares else None

    return Machines(
        spread_original=side_spread([orig]),
        spread_replay=side_spread(reps),
        hardware=tuple(hardware_differences(orig.record.fingerprint, reps[0].record.fingerprint)),
        others_original=side_others([orig]),
        others_replay=side_others(reps),
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
    if machines.busy_sides():
        note += (
            f"; more than {BUSY_FRACTION:.0%} is a busy machine: a performance difference in "
            "the direction of the busy side is not taken for a change of the software"
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
    busy = machines.busy_sides()
    unstable = machines.unstable(tolerance) or bool(busy)
    verdict = combine(raw.verdict, adjusted.verdict if adjusted else None, unstable=unstable)
    if verdict == "not reproduced" and _slower(raw.delta_rel, kind) in busy:
        # the side that was slower shared the machine with other work: that explains it as
        # well as a change of the software would
        verdict = "inconclusive: machine unstable"
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
    if verdict == "inconclusive: machine unstable" and machines.busy_sides():
        return (
            f"{raw.reason}; {machines.busy_text()}: a busy machine slows the work by more than "
            "the probes show, so the difference cannot be told from a change of the software: "
            "replay on a quiet machine, or interleave (`repro replay SPEC --against ...`)"
        )
    if verdict == "inconclusive: machine unstable":
        return (
            f"{raw.reason}; the machine's own speed moved within a side by more than the "
            f"tolerance (probe spread: {spreads}): replay on a quieter machine, or interleave "
            "(`repro replay SPEC --against ...`)"
        )
    return f"{raw.reason}; {machine}" if machine else raw.reason


def _slower(delta_rel: float, kind: str) -> str:
    """Which side was slower: a lower throughput or a higher latency."""
    if kind == "latency":
        return "replay" if delta_rel > 0 else "original"
    return "replay" if delta_rel < 0 else "original"
