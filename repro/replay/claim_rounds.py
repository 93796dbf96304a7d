"""Use case: measure or check a spec's claims on this machine, in paired interleaved rounds.

Each claim's two variants (`repro.spec.variants`) alternate within every round in an order drawn
from a recorded seed and balanced over pairs of rounds (`repro.replay.rounds.balanced_order`), one
short LoadGen test of each per round, until the interval of the claim's quantity lies on one
side of its bound at one of the looks `repro.stats.sequential.Stopping` plans (the one rule of
every paired comparison), or a cap fixed before the first round is reached (the claim's
`rounds`, or the command line's). Each variant's tests are one run
(`results/<name>/<check>-<claim>-<side>/`, marked as one side of an interleaved pair). An
accuracy claim runs one accuracy test of each: a model on a data set scores the same every time.
A feasibility claim (`Server.max_valid_qps`) runs the baseline's Offline test first, then Server
at `bound` x that throughput.

`check_claims` returns what each claim measured; `evidence_of` turns it into the evidence the
spec keeps (`repro claim measure`, `repro capture`), `claims_check` into the report's rows.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from repro.compare.claim_verdicts import (
    Measured,
    busy_guard,
    estimate,
    verdict,
)
from repro.compare.machine_sides import BUSY_FRACTION
from repro.compare.pairing import busy_rounds, pair_rounds, setting_mismatch
from repro.errors import Interrupted, RunError, SpecError, UsageError
from repro.estimates import duration
from repro.replay import Replayer, ReplayOptions, Reporter, new_run_id
from repro.replay.rounds import balanced_order
from repro.replay.session import ReplayerFactory
from repro.runs.record import Interleave, RunRecord, StoppingRecord, TestRecord
from repro.signals import interruptible
from repro.spec.claims import SIDES, Claim, Side
from repro.spec.io import parse_spec, spec_id, with_id
from repro.spec.models import ExperimentSpec, ModeName, ScenarioName
from repro.spec.variants import apply_overrides, claim_where, refuse_inert, variant_specs
from repro.stats.claim_estimates import ClaimEstimate, ClaimJudgement
from repro.stats.sequential import Stopping


@dataclass(frozen=True)
class CheckOptions:
    """What the command line chose: where the runs go, which claims, caps over the claims'."""

    results_dir: Path = Path("results")
    #: the runs are named <check_id>-<claim>-<side> (default: a new time-based id)
    check_id: str | None = None
    only: tuple[str, ...] = ()
    max_rounds: int | None = None
    max_time_s: float | None = None
    min_duration_ms: int | None = None
    seed: int | None = None
    #: run every round up to the cap and judge once at the end (a fixed-size test)
    fixed_rounds: bool = False
    #: the environment each variant realizes (`--env`): under `native` a variant's
    #: environment fields are not built, and overriding them is refused
    env_name: str | None = None


@dataclass(frozen=True)
class Outcome:
    """One claim measured here: what the rounds found, and the runs of its variants."""

    claim: Claim
    measured: Measured
    variants: dict[str, str]
    records: dict[Side, RunRecord]
    seed: int
    orders: list[list[str]] = field(default_factory=list)


@dataclass(frozen=True)
class _Plan:
    """One claim's rounds, fixed before the first."""

    scenarios: dict[Side, ScenarioName]
    mode: ModeName
    stopping: Stopping
    min_duration_ms: int
    min_query_count: int | None

    @property
    def max_rounds(self) -> int:
        return self.stopping.max_rounds


def selected(spec: ExperimentSpec, only: tuple[str, ...], *, source: str) -> list[Claim]:
    """The claims to run (`only`: by id, each one the spec states)."""
    claims = spec.claims or []
    if not claims:
        raise SpecError(
            f"{source}: $.claims: the spec states no claim",
            hint="add one: `repro claim add SPEC --id ... --metric ... --candidate ...`",
        )
    ids = [c.id for c in claims]
    for name in only:
        if name not in ids:
            raise UsageError(f"--claim {name}: the spec states no such claim; it has {ids}")
    return [c for c in claims if not only or c.id in only]


def check_claims(
    spec: ExperimentSpec,
    spec_path: Path,
    *,
    factory: ReplayerFactory,
    opts: CheckOptions,
    report: Reporter,
) -> list[Outcome]:
    """Run every selected claim's rounds (one claim after another); every variant of every
    claim is derived and validated before the first test."""
    claims = selected(spec, opts.only, source=str(spec_path))
    for c in claims:
        for side in SIDES:
            refuse_inert(
                getattr(c, side).overrides,
                env_name=opts.env_name,
                where=f"{spec_path}: {claim_where(spec, c)}.{side}.overrides",
            )
    sides = {c.id: variant_specs(spec, c, source=str(spec_path)) for c in claims}
    check_id = opts.check_id or new_run_id()
    outcomes = []
    for claim in claims:
        report(f"claim {claim.id}: {claim.statement} ({claim.bound_text()})")
        outcome = _ClaimRounds(claim, sides[claim.id], factory, opts, check_id, report).run()
        report(
            f"claim {claim.id}: {outcome.measured.judgement.verdict} after "
            f"{outcome.measured.rounds} round(s), {duration(outcome.measured.elapsed_s)}: "
            f"{outcome.measured.judgement.reason}"
        )
        outcomes.append(outcome)
    return outcomes


def _plan(claim: Claim, variants: dict[Side, ExperimentSpec], opts: CheckOptions) -> _Plan:
    metric = claim.parsed_metric
    rounds = claim.rounds
    wanted = metric.scenarios()
    scenarios: dict[Side, ScenarioName] = {}
    for side in SIDES:
        runs = [s.scenario for s in variants[side].workload.scenarios]
        chosen = wanted[side] or ("Offline" if "Offline" in runs else runs[0])
        scenarios[side] = chosen
    return _Plan(
        scenarios=scenarios,
        mode="accuracy" if metric.is_accuracy else "performance",
        stopping=Stopping(
            max_rounds=1 if metric.is_accuracy else opts.max_rounds or rounds.max_rounds,
            max_time_s=opts.max_time_s or rounds.max_time_s,
            fixed=opts.fixed_rounds,
        ),
        min_duration_ms=(
            rounds.min_duration_ms if opts.min_duration_ms is None else opts.min_duration_ms
        ),
        min_query_count=rounds.min_query_count,
    )


class _ClaimRounds:
    """The rounds of one claim: two replayers, a balanced random order, stopping when decided."""

    def __init__(
        self,
        claim: Claim,
        variants: dict[Side, ExperimentSpec],
        factory: ReplayerFactory,
        opts: CheckOptions,
        check_id: str,
        report: Reporter,
    ) -> None:
        self.claim, self.variants, self.factory, self.report = claim, variants, factory, report
        self.plan = _plan(claim, variants, opts)
        self.results_dir, self.check_id = opts.results_dir, check_id
        self.seed = secrets.randbits(32) if opts.seed is None else opts.seed
        self.rng = np.random.Generator(np.random.PCG64(self.seed))
        #: each look's confidence: all of them together hold the spec's
        self.overall = variants["baseline"].tolerances.confidence
        self.confidence = self.plan.stopping.confidence(self.overall)
        self.replayers: dict[Side, Replayer] = {}
        self.orders: list[list[str]] = []
        self.target_qps: float | None = None

    def run(self) -> Outcome:
        with interruptible(), self._finished_on_error():
            self._start("baseline")
            if not self.claim.parsed_metric.is_feasibility:
                self._start("candidate")
            measured = self._rounds()
            records = self._finish(measured)
        return Outcome(
            self.claim,
            replace(measured, runs={s: p for s, (p, _) in records.items()}),
            {side: spec_id(self.variants[side]) for side in SIDES},
            {side: record for side, (_, record) in records.items()},
            self.seed,
            self.orders,
        )

    def _start(self, side: Side) -> None:
        plan = self.plan
        opts = ReplayOptions(
            scenarios=(plan.scenarios[side],),
            modes=(plan.mode,),
            min_duration_ms=plan.min_duration_ms,
            min_query_count=plan.min_query_count,
            repeat=plan.max_rounds,
            results_dir=self.results_dir,
            run_id=f"{self.check_id}-{self.claim.id}-{side}",
            overrides={"claim": self.claim.id, "variant": side},
        )
        replayer = self.factory(self.variants[side], opts)
        for other in self.replayers.values():
            replayer.share_sizing(other)  # both variants run the same sized queries
        replayer.begin()
        self.replayers[side] = replayer

    def _rounds(self) -> Measured:
        plan, t0 = self.plan, time.monotonic()
        stopped = f"the round cap ({plan.max_rounds}) was reached"
        found = None
        values: tuple[list[float], list[float]] = ([], [])
        ends: list[float] = []
        for k in range(1, plan.max_rounds + 1):
            self._round(k)
            ends.append(round(time.monotonic() - t0, 2))
            values = self._values(k)
            if not values[0]:  # every round so far ran different settings on the two sides
                why = plan.stopping.reason(k, False, ends[-1])
                if why is not None:
                    raise RunError(
                        f"claim {self.claim.id}: no round ran the same LoadGen settings on both "
                        "variants (an Offline query sized for one only)",
                        hint="run it again: the sized query is shared from the next round on",
                    )
                continue
            found = estimate(self.claim, *values, confidence=self.confidence)
            judged = self._judged(found)
            if self.plan.mode == "accuracy":
                stopped = "an accuracy test of each variant (a model scores the same every time)"
                break
            # a look is the claim's paired rounds reaching one of the rule's (a round left out
            # delays it); the caps count every round
            decided = judged.verdict != "inconclusive" and len(values[0]) in plan.stopping.looks
            why = plan.stopping.reason(k, False, ends[-1])
            if decided and k < plan.max_rounds:
                why = f"decided after round {k}"
            if why is not None:
                stopped = f"{why}; {plan.stopping.describe(self.overall)}"
                break
            self.report(f"  round {k}: {judged.reason}")
        assert found is not None
        return Measured(
            estimate=found,
            judgement=self._judged(found),
            baseline=values[0],
            candidate=values[1],
            rounds=len(values[0]),
            stopped=stopped,
            elapsed_s=round(time.monotonic() - t0, 1),
            target_qps=self.target_qps,
            round_end_s=ends,
            confidence=self.confidence,
        )

    def _judged(self, found: ClaimEstimate) -> ClaimJudgement:
        """The claim's verdict on the rounds so far, undecided when the variant whose load
        pushes the ratio the way it was decided ran beside more other work (`busy_guard`)."""
        judged = verdict(self.claim, found, confidence=self.confidence)
        if len(self.replayers) < 2:
            return judged
        tests = {
            side: [t for t in r.record.tests if t.mode == "performance"]
            for side, r in self.replayers.items()
        }
        busy = busy_rounds(pair_rounds(tests["baseline"], tests["candidate"]), busy=BUSY_FRACTION)
        if busy is None or busy.busier is None:
            return judged
        busier: Side = "candidate" if busy.busier == "replay" else "baseline"
        shares = busy.describe().replace("the replay", "the candidate")
        return busy_guard(self.claim, judged, busier, shares)

    def _round(self, k: int) -> None:
        # as in `repro.replay.rounds`: index 0 ("a") is the candidate, 1 ("b") the baseline
        if self.claim.parsed_metric.is_feasibility and k == 1:
            order = [1, 0]  # Server's rate comes from the baseline's Offline throughput
        else:
            order = balanced_order(k, 2, self.rng, self.orders)
        self.orders.append(["a" if i == 0 else "b" for i in order])
        for i in order:
            side: Side = "candidate" if i == 0 else "baseline"
            if side not in self.replayers:
                self._start_server(k)
            self.replayers[side].run_round(k)

    def _start_server(self, k: int) -> None:
        """The feasibility claim's candidate: Server at `bound` x the baseline's throughput."""
        rate = self._value("baseline", k)
        self.target_qps = round(self.claim.bound * rate, 3)
        path = "workload.scenarios.Server.settings.server_target_qps"
        data = self.variants["candidate"].model_dump(mode="json", by_alias=True, exclude_none=True)
        data.pop("id", None)
        apply_overrides(data, {path: self.target_qps}, where=f"claim {self.claim.id}")
        self.variants["candidate"] = with_id(parse_spec(data, source=f"claim {self.claim.id}"))
        self.report(
            f"  Server at {self.target_qps:.4g} QPS ({self.claim.bound:g} x the Offline "
            f"{rate:.4g} samples/s)"
        )
        self._start("candidate")

    def _values(self, k: int) -> tuple[list[float], list[float]]:
        """Each side's value of every round so far (a feasibility's candidate: its margins),
        but for rounds whose two tests ran different settings (`repro.compare.pairing`)."""
        rounds = [
            r
            for r in range(1, k + 1)
            if setting_mismatch(self._test("baseline", r), self._test("candidate", r)) is None
        ]
        return (
            [self._value("baseline", r) for r in rounds],
            [self._value("candidate", r) for r in rounds],
        )

    def _value(self, side: Side, k: int) -> float:
        metric = self.claim.parsed_metric
        test = self._test(side, k)
        if metric.is_accuracy:
            scored = test.scored()
            found = scored.value if scored is not None else None
            if found is None:
                why = scored.note if scored is not None else None
                raise RunError(
                    f"claim {self.claim.id}: the {side}'s accuracy test has no score: "
                    f"{why or 'its log could not be scored'}",
                    hint="an agreement metric needs the original's reference predictions: "
                    "capture the spec first (`repro capture`)",
                )
            return float(found)
        margin = metric.is_feasibility and side == "candidate"
        if metric.is_feasibility:  # Offline's throughput; Server's latency at the bound
            key = self._key() if margin else "samples_per_second"
        else:
            key = metric.record_key
        value = test.metrics.get(key)
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
            raise RunError(
                f"claim {self.claim.id}: the {side}'s {test.scenario} test measured no {key}",
                hint=f"its run is kept: {self.replayers[side].work_dir}",
            )
        return float(value) / self._bound_ns() if margin else float(value)

    def _server_settings(self) -> Any:
        scenarios = self.variants["candidate"].workload.scenarios
        return next(s.settings for s in scenarios if s.scenario == "Server")

    def _key(self) -> str:
        percentile = self._server_settings().server_target_latency_percentile or 0.99
        return {0.5: "latency_p50_ns", 0.9: "latency_p90_ns"}.get(percentile, "latency_p99_ns")

    def _bound_ns(self) -> float:
        return float(self._server_settings().server_target_latency_ns)

    def _test(self, side: Side, k: int) -> TestRecord:
        record = self.replayers[side].record
        test = next(
            (t for t in record.tests if t.repeat == k and t.mode == self.plan.mode),
            None,
        )
        if test is None or test.status not in ("valid", "invalid"):
            said = test.error if test is not None else "it did not run"
            raise RunError(
                f"claim {self.claim.id}: the {side} variant's {self.plan.scenarios[side]} "
                f"{self.plan.mode} test of round {k} failed: {said}",
                hint=f"its run is kept: {self.replayers[side].work_dir}",
            )
        return test

    def _finish(self, measured: Measured) -> dict[Side, tuple[Path, RunRecord]]:
        pairing = secrets.token_hex(8)
        out = {}
        for side in SIDES:
            replayer = self.replayers[side]
            replayer.record.interleave = Interleave(
                id=pairing,
                side="a" if side == "candidate" else "b",
                seed=self.seed,
                rounds=len(self.orders),
                orders=self.orders,
                claim=self.claim.id,
            )
            replayer.record.stopping = StoppingRecord(
                max_rounds=self.plan.max_rounds,
                max_time_s=self.plan.stopping.max_time_s,
                fixed=self.plan.stopping.fixed,
                rounds=measured.rounds,
                stopped=measured.stopped,
                elapsed_s=measured.elapsed_s,
            )
            out[side] = replayer.finish()
        return out

    @contextlib.contextmanager
    def _finished_on_error(self) -> Iterator[None]:
        """An interruption or a failure leaves each started run marked interrupted."""
        try:
            yield
        except (KeyboardInterrupt, Interrupted):
            self._abandon("stopped by a signal before the claim was decided")
            raise KeyboardInterrupt from None
        except BaseException as exc:
            self._abandon(f"stopped by an error: {exc}")
            raise

    def _abandon(self, message: str) -> None:
        for replayer in self.replayers.values():
            if replayer.started:
                with contextlib.suppress(OSError):
                    replayer.finish(interrupted=True, reraise=False, message=message)
