"""How long a LoadGen test should take, from what this machine measured, and said honestly.

LoadGen's duration follows from the settings and the machine's real speed. SingleStream and
MultiStream issue queries until both the minimum duration and the minimum query count are met:
max(min_duration, min_query_count x the query's latency). Offline issues one query of
max(min_query_count, 1.1 x min_duration x offline_expected_qps) samples and ends when they are
done: samples / the real rate (it does not wait for the minimum duration when it is faster;
measured with LoadGen 6.0.17). Server issues its queries at the target rate and takes longer only
where the machine cannot keep up. The spec's expected rates are what LoadGen plans with, not
what this machine does (an imported Offline test planned for a faster machine ran 15-40 min
against an estimate of 2 s), so the rate comes from this machine: the test's own warm-up, then
the tests that finished; an Offline test re-estimates from the samples it has done so far.
Without a measured rate the estimate is unknown, and says so with the floor the settings
guarantee. Every function here is pure: the replay feeds it what it measured.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from repro.spec.models import LoadGenSettings

#: the basis of an estimate from tests that finished on this machine
MEASURED = "measured on this machine"
#: the basis of an Offline test's estimate from its own rate so far
LIVE_RATE = "this test's rate so far"
#: the least an Offline run must have done before its own rate is trusted over the warm-up's
LIVE_MIN_S = 0.4


@dataclass(frozen=True)
class Estimate:
    """Seconds something should take, what the figure rests on, and the least it can take."""

    seconds: float | None
    basis: str
    floor_s: float = 0.0

    @classmethod
    def unknown(cls, why: str, floor_s: float = 0.0) -> Estimate:
        return cls(None, why, floor_s)

    @property
    def known(self) -> bool:
        return self.seconds is not None

    @property
    def measured(self) -> bool:
        """Known from a rate measured on this machine: a finished test's, or this Offline
        test's so far (a warm-up's call times swung one test's estimate from 8 s to 5.6 min)."""
        return self.seconds is not None and self.basis in (MEASURED, LIVE_RATE)

    def text(self) -> str:
        """`about 12 s (measured on this machine)` or `time unknown (...; at least 5 s)`."""
        if self.seconds is None:
            floor = f"; at least {duration(self.floor_s)}" if self.floor_s >= 1 else ""
            return f"time unknown ({self.basis}{floor})"
        return f"about {duration(self.seconds)} ({self.basis})"


def duration(seconds: float) -> str:
    """12 s, 3.5 min, 1.2 h."""
    if seconds < 90:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def total(parts: Iterable[Estimate], basis: str) -> Estimate:
    """The sum: unknown when any part is (its floor the sum of what is known); it rests on
    `basis` unless a part rests on something else (a warm-up, say): then on that."""
    items = list(parts)
    floor = sum(p.seconds if p.seconds is not None else p.floor_s for p in items)
    missing = [p for p in items if p.seconds is None]
    if missing:
        return Estimate.unknown(missing[0].basis, floor)
    weakest = next((p.basis for p in items if p.basis != basis), basis)
    return Estimate(floor, weakest, floor)


#: a short test's Offline query: this many times the warm-up's rate (`short_query`)
SHORT_MARGIN = 1.5


def short_query(spec_qps: Any, rate: float | None) -> float | None:
    """The expected QPS of an Offline query that lasts about the time a short test asks for
    at `rate` samples/s (SHORT_MARGIN x the rate: 1.1 x 1.5 of the time, within twice it), when the
    spec's would make the test last more than twice as long (a high offline_expected_qps, the
    docs' own advice for a fast machine, made 0.5 s tests run 20-74 s); None otherwise."""
    if not isinstance(spec_qps, int | float) or not math.isfinite(spec_qps) or spec_qps <= 0:
        return None
    if rate is None or not math.isfinite(rate) or rate <= 0 or 1.1 * spec_qps <= 2.0 * rate:
        return None
    return float(f"{SHORT_MARGIN * rate:.3g}")


@dataclass(frozen=True)
class PlannedTest:
    """One LoadGen test as the estimate sees it: scenario, mode and the effective settings."""

    scenario: str
    mode: str
    settings: LoadGenSettings
    total: int  # the spec's total_sample_count
    batch: int
    #: a short test asked for: an Offline query the worker sizes from its warm-up's rate
    #: (`repro.estimates.short_query`), where the spec's would run far longer
    short: bool = False

    @property
    def per_query(self) -> int:
        """Samples in one query (MultiStream's samples_per_query; one elsewhere)."""
        if self.scenario != "MultiStream":
            return 1
        return self.settings.multi_stream_samples_per_query or 8

    def min_duration_s(self) -> float:
        return self.settings.min_duration_ms / 1000

    def offline_samples(self) -> float:
        """The samples of the Offline query LoadGen builds (as its GenerateQueries does)."""
        rate = self.settings.offline_expected_qps or 1
        count = self.settings.min_query_count
        return max(count, 1.1 * self.min_duration_s() * rate)

    def floor_s(self) -> float:
        """What the settings guarantee whatever the machine does."""
        if self.mode == "accuracy" or self.scenario == "Offline":
            return 0.0
        if self.scenario == "Server":
            qps = self.settings.server_target_qps or 0.0
            count = self.settings.min_query_count
            return max(self.min_duration_s(), count / qps if qps else 0.0)
        return self.min_duration_s()


@dataclass(frozen=True)
class Live:
    """What the running test's worker said so far (its progress file)."""

    warm_up_call_s: dict[int, float] = field(default_factory=dict)
    #: seconds from the test's start (the worker's spawn) to LoadGen's start
    loadgen_after_s: float | None = None
    #: Offline: samples done, and seconds since LoadGen's start when they were counted
    samples_done: int = 0
    samples_after_s: float = 0.0


@dataclass
class Measured:
    """What this machine measured in this replay: per-unit times of finished tests, the
    warm-ups' inference calls, the time before LoadGen starts and after it ends, and what each
    test costs besides (its logs read, the machine probe after it)."""

    #: (scenario, mode) -> seconds per query (SingleStream, MultiStream) or per sample
    #: (Offline, Server), from finished tests
    unit_s: dict[tuple[str, str], float] = field(default_factory=dict)
    #: batch size -> seconds of one inference call, from the warm-ups
    call_s: dict[int, float] = field(default_factory=dict)
    pre_s: list[float] = field(default_factory=list)
    post_s: list[float] = field(default_factory=list)
    #: seconds a test costs the replay besides its worker (reading its logs, the probe after it)
    between_s: list[float] = field(default_factory=list)

    def learn_test(
        self,
        plan: PlannedTest,
        timings: dict[str, float],
        metrics: Mapping[str, Any],
        *,
        wall_s: float,
        spawn_unix: float,
    ) -> None:
        """A finished test: its LoadGen time per unit, and the time before and after it."""
        loadgen_s = timings.get("loadgen_s")
        if loadgen_s is None:
            return
        units = _units_done(plan, metrics)
        if units:
            self.unit_s[(plan.scenario, plan.mode)] = loadgen_s / units
        pre = timings.get("loadgen_start_unix", 0.0) - spawn_unix
        if 0 <= pre <= wall_s:
            self.pre_s.append(pre)
            self.post_s.append(max(wall_s - pre - loadgen_s, 0.0))

    def learn_warm_up(self, call_s: dict[int, float]) -> None:
        self.call_s.update({b: t for b, t in call_s.items() if t > 0})


def _units_done(plan: PlannedTest, metrics: Mapping[str, Any]) -> float:
    """Queries (SingleStream, MultiStream) or samples (Offline, Server) the test did."""
    if plan.mode == "accuracy":
        return plan.total / plan.per_query if plan.scenario == "MultiStream" else plan.total
    if plan.scenario == "Offline":
        return float(metrics.get("samples_per_query") or 0)
    return float(metrics.get("sut_queries_completed") or 0)


def unit_seconds(
    plan: PlannedTest, measured: Measured, live: Live | None = None
) -> tuple[float, str] | None:
    """Seconds per unit of the test (a query, or a sample for Offline and Server), and what
    the figure rests on: this Offline test so far, a finished test of the same kind, the
    test's own warm-up, an earlier test's warm-up; None when nothing was measured."""
    offline = live is not None and plan.scenario == "Offline" and live.samples_done > 0
    if offline and live is not None and live.samples_after_s >= LIVE_MIN_S:
        return live.samples_after_s / live.samples_done, LIVE_RATE
    for mode in (plan.mode, "performance", "accuracy"):
        if (plan.scenario, mode) in measured.unit_s:
            return measured.unit_s[(plan.scenario, mode)], MEASURED
    if live is not None and live.warm_up_call_s:
        found = _from_calls(plan, live.warm_up_call_s)
        if found is not None:
            return found, "this test's warm-up"
    found = _from_calls(plan, measured.call_s)
    if found is not None:
        return found, "an earlier warm-up"
    found = _from_calls(plan, _scaled(measured.call_s, _shape(plan)))
    return (found, "an earlier warm-up at another batch size") if found is not None else None


def _shape(plan: PlannedTest) -> int:
    """The batch size of the calls the scenario makes."""
    if plan.scenario == "SingleStream":
        return 1
    if plan.scenario == "MultiStream":
        return min(plan.batch, plan.per_query)
    return plan.batch


def _scaled(call_s: dict[int, float], batch: int) -> dict[int, float]:
    """A call at `batch` from the nearest batch size timed, in proportion to the samples (an
    over-estimate for a µs-scale model, whose calls cost the same at any small batch)."""
    if not call_s:
        return {}
    near = min(call_s, key=lambda b: abs(math.log(b / batch)))
    return {batch: call_s[near] * batch / near}


def _from_calls(plan: PlannedTest, call_s: dict[int, float]) -> float | None:
    """Per unit from inference calls timed at the batch shape the scenario uses."""
    t = call_s.get(_shape(plan))
    if t is None:
        return None
    if plan.scenario == "SingleStream":
        return t
    if plan.scenario == "MultiStream":
        return math.ceil(plan.per_query / _shape(plan)) * t
    return t / plan.batch


def loadgen_seconds(plan: PlannedTest, unit_s: float) -> float:
    """LoadGen's part of the test at `unit_s` seconds a unit (see the module's docstring)."""
    s = plan.settings
    if plan.mode == "accuracy":
        units = plan.total / plan.per_query if plan.scenario == "MultiStream" else plan.total
        busy = math.ceil(units) * unit_s
        qps = s.server_target_qps or 0.0
        return max(busy, plan.total / qps) if plan.scenario == "Server" and qps else busy
    if plan.scenario == "Offline":
        seconds = plan.offline_samples() * unit_s
        short = short_query(s.offline_expected_qps, 1 / unit_s) if plan.short else None
        if short is not None:  # the worker sizes the query from the rate: about the time asked
            count = max(s.min_query_count, 1.1 * plan.min_duration_s() * short)
            seconds = count * unit_s
    elif plan.scenario == "Server":
        qps = s.server_target_qps or 1.0
        count = max(s.min_query_count, qps * plan.min_duration_s())
        seconds = max(plan.floor_s(), count * unit_s)
    else:
        seconds = max(plan.min_duration_s(), s.min_query_count * unit_s)
    cap = s.max_duration_ms / 1000
    return min(seconds, cap) if cap else seconds


def estimate_test(plan: PlannedTest, measured: Measured, live: Live | None = None) -> Estimate:
    """The whole test (worker start, model load, warm-up, LoadGen, logs), from measured rates;
    unknown until a rate was measured for it, and until the time before LoadGen starts was
    measured (here, or live)."""
    unit = unit_seconds(plan, measured, live)
    if unit is None:
        return Estimate.unknown("no inference timed yet", plan.floor_s())
    per_unit, basis = unit
    pre = live.loadgen_after_s if live is not None else None
    if pre is None and measured.pre_s:
        pre = statistics.median(measured.pre_s)
    if pre is None:
        return Estimate.unknown("the model's load time is not known yet", plan.floor_s())
    post = statistics.median(measured.post_s) if measured.post_s else 0.0
    return Estimate(pre + loadgen_seconds(plan, per_unit) + post, basis, plan.floor_s())


def plan_estimate(plans: Iterable[PlannedTest], measured: Measured) -> Estimate:
    """Tests still to run, each with what a test costs besides its worker (as measured)."""
    between = statistics.median(measured.between_s) if measured.between_s else 0.0
    parts = [estimate_test(p, measured) for p in plans]
    parts += [Estimate(between, MEASURED, between)] * len(parts)
    return total(parts, MEASURED)


@dataclass(frozen=True)
class Snapshot:
    """What a progress display shows of a wait: the wait itself, and what follows it (the
    rest of the replay), when the caller knows."""

    test: Estimate
    rest: Estimate | None = None


class Forecast(Protocol):
    """A wait's estimate, asked again as the wait goes on (it may learn as the test runs)."""

    def now(self) -> Snapshot:
        """The estimate as it stands."""


@dataclass(frozen=True)
class Fixed:
    """A forecast that does not change."""

    snapshot: Snapshot

    def now(self) -> Snapshot:
        return self.snapshot
