"""Use case: measure or check a spec's claims on this machine, in paired interleaved rounds.

Each claim's two variants (`repro.spec.variants`) alternate within every round in an order drawn
from a recorded seed and balanced over pairs of rounds (the one driver of rounds,
`repro.replay.rounds.Rounds`, judged by `ClaimJudge`), one short LoadGen test of each per round,
until the interval of the claim's quantity lies on one side of its bound at one of the looks
`repro.stats.sequential.Stopping` plans (the one rule of every paired comparison), or a cap
fixed before the first round is reached (the claim's `rounds`, or the command line's). Each
variant's tests are one run (`results/<name>/<check>-<claim>-<side>/`, marked as one side of an
interleaved pair). An accuracy claim runs one accuracy test of each: a model on a data set
scores the same every time. A feasibility claim (`Server.max_valid_qps`) runs the baseline's
Offline test first, then Server at `bound` x that throughput.

`check_claims` returns what each claim measured; `evidence_of` turns it into the evidence the
spec keeps (`repro claim measure`, `repro capture`), `claims_check` into the report's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from repro.artifacts.cache import ArtifactCache
from repro.compare.claim_verdicts import Measured, busy_guard, estimate, verdict
from repro.compare.machine_sides import BUSY_FRACTION
from repro.compare.pairing import busy_rounds, pair_rounds, setting_mismatch
from repro.errors import RunError, SpecError, UsageError
from repro.estimates import duration
from repro.replay.replayer import Replayer
from repro.replay.rounds import Arm, Played, Rounds
from repro.replay.session import ReplaySession
from repro.replay.settings import ProgressFactory, Reporter, new_run_id
from repro.runs.plan import ReplayPlan, loadgen_overrides
from repro.runs.record import RunRecord, StoppingRecord, TestRecord
from repro.spec.claims import SIDES, Claim, Side
from repro.spec.io import parse_spec, spec_id, with_id
from repro.spec.models import ExperimentSpec, ModeName, ScenarioName
from repro.spec.variants import apply_overrides, claim_where, refuse_inert, variant_specs
from repro.stats.claim_estimates import ClaimEstimate, ClaimJudgement
from repro.stats.sequential import Stopping


@dataclass(frozen=True)
class CheckOptions:
    """What the command line chose: the claims, their runs' plan, and caps over the claims'."""

    #: where the runs go, their environment (`env`: under `native` a variant's environment
    #: fields are not built, and overriding them is refused), a test's minimum duration
    #: (`loadgen.min_duration_ms`), caps over the claims' (`rounds.max_rounds`,
    #: `rounds.max_time_s`) and the seed of the rounds' order (`rounds.order_seed`)
    plan: ReplayPlan = field(default_factory=ReplayPlan)
    #: the runs are named <check_id>-<claim>-<side> (default: a new time-based id)
    check_id: str | None = None
    only: tuple[str, ...] = ()
    #: run every round up to the cap and judge once at the end (a fixed-size test)
    fixed_rounds: bool = False


#: a Replayer of one side of a claim (a variant of the spec) with its plan
SideFactory = Callable[[ExperimentSpec, ReplayPlan], Replayer]


def sessions(
    spec_path: Path, *, report: Reporter, progress: ProgressFactory, cache: ArtifactCache
) -> SideFactory:
    """Each side's environment realized in a session of its own (a claim's variants may
    differ in their environment), and the Replayer of its run there."""

    def make(variant: ExperimentSpec, plan: ReplayPlan) -> Replayer:
        session = ReplaySession.open(
            variant, spec_path, plan, report=report, progress=progress, cache=cache
        )
        return session.replayer(variant, plan)

    return make


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
    #: each test's length: the claim's own, or the command line's over it
    loadgen: Any

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
    factory: SideFactory,
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
                env_name=opts.plan.env,
                where=f"{spec_path}: {claim_where(spec, c)}.{side}.overrides",
            )
    sides = {c.id: variant_specs(spec, c, source=str(spec_path)) for c in claims}
    check_id = opts.check_id or new_run_id()
    outcomes = []
    for claim in claims:
        report(f"claim {claim.id}: {claim.statement} ({claim.bound_text()})")
        outcome = _check(claim, sides[claim.id], factory, opts, check_id, report)
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
    asked = opts.plan.override("min_duration_ms")
    cap = opts.plan.rounds.max_rounds or rounds.max_rounds
    return _Plan(
        scenarios=scenarios,
        mode="accuracy" if metric.is_accuracy else "performance",
        stopping=Stopping(
            max_rounds=1 if metric.is_accuracy else cap,
            max_time_s=opts.plan.rounds.max_time_s or rounds.max_time_s,
            fixed=opts.fixed_rounds,
        ),
        loadgen=loadgen_overrides(
            min_duration_ms=rounds.min_duration_ms if asked is None else asked,
            min_query_count=rounds.min_query_count,
        ),
    )


def _check(
    claim: Claim,
    variants: dict[Side, ExperimentSpec],
    factory: SideFactory,
    opts: CheckOptions,
    check_id: str,
    report: Reporter,
) -> Outcome:
    """One claim's rounds: its two variants interleaved until the claim's judge stops them."""
    judge = ClaimJudge(claim, dict(variants), _plan(claim, variants, opts), report)

    def side(name: Side) -> Replayer:
        plan = opts.plan.but(
            scenarios=(judge.plan.scenarios[name],),
            modes=(judge.plan.mode,),
            loadgen=judge.plan.loadgen,
            repeat=judge.plan.max_rounds,
            run_id=f"{check_id}-{claim.id}-{name}",
            recorded={"claim": claim.id, "variant": name},
        )
        replayer = factory(judge.variants[name], plan)
        judge.replayers[name] = replayer
        return replayer

    # index 0 ("a") is the candidate, 1 ("b") the baseline; a feasibility claim's candidate
    # starts once the baseline's Offline throughput sets its Server rate
    candidate = Arm(start=lambda: judge.start_server(side))
    if not claim.parsed_metric.is_feasibility:
        candidate = Arm(side("candidate"))
    rounds = Rounds(
        [candidate, Arm(side("baseline"))],
        judge.plan.stopping,
        judge,
        seed=opts.plan.rounds.order_seed,
        report=report,
        record_placement=False,
        claim=claim.id,
    )
    finished = rounds.run()
    measured = judge.measured(rounds.played)
    records: dict[Side, tuple[Path, RunRecord]] = {
        "candidate": finished[0],
        "baseline": finished[1],
    }
    return Outcome(
        claim,
        replace(measured, runs={s: p for s, (p, _) in records.items()}),
        {name: spec_id(judge.variants[name]) for name in SIDES},
        {name: record for name, (_, record) in records.items()},
        rounds.played.seed,
        rounds.played.orders,
    )


class ClaimJudge:
    """A claim's rounds judged: the interval of its quantity on one side of its bound at one of
    the looks, or a cap; an accuracy claim after one test of each variant."""

    def __init__(
        self,
        claim: Claim,
        variants: dict[Side, ExperimentSpec],
        plan: _Plan,
        report: Reporter,
    ) -> None:
        self.claim, self.variants, self.plan, self.report = claim, variants, plan, report
        #: each look's confidence: all of them together hold the spec's
        self.overall = variants["baseline"].tolerances.confidence
        self.confidence = plan.stopping.confidence(self.overall)
        self.replayers: dict[Side, Replayer] = {}
        self.target_qps: float | None = None
        self.found: ClaimEstimate | None = None
        self.values: tuple[list[float], list[float]] = ([], [])

    def order(self, k: int) -> list[int] | None:
        if self.claim.parsed_metric.is_feasibility and k == 1:
            return [1, 0]  # Server's rate comes from the baseline's Offline throughput
        return None

    def running(self) -> Collection[str] | None:
        return None

    def after(self, k: int, played: Played) -> str | None:
        plan, end = self.plan, played.round_end_s[-1]
        self.values = self._values(k)
        if not self.values[0]:  # every round so far ran different settings on the two sides
            if plan.stopping.reason(k, False, end) is not None:
                raise RunError(
                    f"claim {self.claim.id}: no round ran the same LoadGen settings on both "
                    "variants (an Offline query sized for one only)",
                    hint="run it again: the sized query is shared from the next round on",
                )
            return None
        self.found = estimate(self.claim, *self.values, confidence=self.confidence)
        judged = self._judged(self.found)
        if plan.mode == "accuracy":
            return "an accuracy test of each variant (a model scores the same every time)"
        # a look is the claim's paired rounds reaching one of the rule's (a round left out
        # delays it); the caps count every round
        decided = judged.verdict != "inconclusive" and len(self.values[0]) in plan.stopping.looks
        why = plan.stopping.reason(k, False, end)
        if decided and k < plan.max_rounds:
            why = f"decided after round {k}"
        if why is not None:
            return f"{why}; {plan.stopping.describe(self.overall)}"
        self.report(f"  round {k}: {judged.reason}")
        return None

    def measured(self, played: Played) -> Measured:
        """What the rounds found (the claim's estimate at the last look)."""
        assert self.found is not None, "a claim's rounds end with an estimate"
        return Measured(
            estimate=self.found,
            judgement=self._judged(self.found),
            baseline=self.values[0],
            candidate=self.values[1],
            rounds=len(self.values[0]),
            stopped=played.stopped,
            elapsed_s=round(played.round_end_s[-1], 1),
            target_qps=self.target_qps,
            round_end_s=played.round_end_s,
            confidence=self.confidence,
        )

    def stopping_record(self, played: Played) -> StoppingRecord:
        measured = self.measured(played)
        return StoppingRecord(
            max_rounds=self.plan.max_rounds,
            max_time_s=self.plan.stopping.max_time_s,
            fixed=self.plan.stopping.fixed,
            rounds=measured.rounds,
            stopped=measured.stopped,
            elapsed_s=measured.elapsed_s,
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

    def start_server(self, side: Callable[[Side], Replayer]) -> Replayer:
        """The feasibility claim's candidate: Server at `bound` x the baseline's throughput."""
        rate = self._value("baseline", 1)
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
        return side("candidate")

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
