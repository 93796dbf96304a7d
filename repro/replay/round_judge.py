"""How rounds of a replay are judged (`--against`, `--until-decided`): against the baseline's
run of the same rounds (interleaved) or the spec's original, each scenario until its headline
metrics are decided at one of the looks of the one sequential rule (`repro.stats.sequential`)
or a cap is reached; what the runs record of it, and what would decide rounds that ended
undecided.

A scenario whose metrics are decided stops there: later rounds run only the undecided
scenarios, so the noisy ones get the rounds sooner. The rule the rounds ran under is recorded
in each run (`stopping`), so that a report read later judges them as the rounds did.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from repro.compare.build import build_report, decided, undecided_scenarios
from repro.compare.machine_sides import busy_share
from repro.compare.pairing import time_capped_of
from repro.duet import SEQUENTIAL
from repro.errors import SpecError
from repro.replay.replayer import Replayer
from repro.replay.rounds import Arm, Played, Rounds, rounds_left
from repro.replay.settings import Reporter
from repro.reports.model import MetricResult, Report
from repro.runs.placement import Placement
from repro.runs.record import Interleave, RunRecord, StoppingRecord
from repro.runs.store import LoadedRun
from repro.spec.models import Tolerances
from repro.stats.sequential import MIN_ROUNDS, Stopping
from repro.stats.verdicts import UNDECIDED


@dataclass(frozen=True)
class Outcome:
    """What the rounds produced: the replay's run (and the baseline's), and the last report."""

    run: tuple[Path, RunRecord]
    baseline: tuple[Path, RunRecord] | None
    report: Report | None


@dataclass
class ReportJudge:
    """Rounds of `replay` judged against `against`'s run (interleaved) or `original`."""

    replay: Replayer
    against: Replayer | None
    original: LoadedRun | None
    stopping: Stopping
    report: Reporter = lambda _: None
    #: the report on the rounds so far, at the latest look
    last: Report | None = None
    #: the round after which each scenario was decided (and stopped)
    decided_after: dict[str, int] = field(default_factory=dict)
    _running: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        sides = [self.replay] if self.against is None else [self.replay, self.against]
        self._running = {scenario for side in sides for scenario, _ in side.pairs}

    def order(self, k: int) -> list[int] | None:
        return None

    def running(self) -> Collection[str] | None:
        return self._running

    def after(self, k: int, played: Played) -> str | None:
        """After a whole pair of rounds (a side runs first in one round of each pair: a pair
        cancels the position) each scenario is looked at when its paired rounds reach one of
        the rule's looks (a round left out, its two tests run with different settings, delays
        the look), or the rounds reach a cap."""
        stopping, elapsed = self.stopping, played.round_end_s[-1]
        if stopping.fixed:
            return None
        look = self.against is None or k % 2 == 0
        first = k == (1 if self.against is None else 2)
        if look or first:
            self.last = _judge(self.replay, self.against, self.original, played, stopping)
            if self.last is not None:
                self._running = _still_open(
                    self.last, self._running, k, self.decided_after, stopping, first=first
                )
        if not self._running and k < stopping.max_rounds:
            return _why_no_more(self.last, k)
        why = stopping.reason(k, False, elapsed)
        if why is not None and k < stopping.max_rounds:
            played.time_capped = stopping.time_up(k, elapsed)
            return why
        if k < stopping.max_rounds:  # the last round's word is the report's
            state = (
                f"not decided yet ({self.last.summary if self.last else 'no report'}); "
                if k in stopping.looks
                else f"next look after round {_next_look(stopping, k)}; "
            )
            left = rounds_left(
                played.round_s, stopping.max_rounds - k, stopping.max_time_s - elapsed
            )
            self.report(f"round {k}: {state}next: {', '.join(sorted(self._running))}; {left}")
        return None

    def stopping_record(self, played: Played) -> StoppingRecord:
        overall = _overall(self.replay, self.against, self.original)
        return stopping_record(self.stopping, overall).model_copy(
            update={
                "rounds": played.rounds,
                "stopped": played.stopped,
                "time_capped": played.time_capped,
                "elapsed_s": played.elapsed_s,
                "decided_after": dict(self.decided_after),
            }
        )

    def final(
        self, run: tuple[Path, RunRecord], base: tuple[Path, RunRecord] | None
    ) -> Report | None:
        """The report on the finished runs."""
        rep = LoadedRun(run[0], "repro", run[1])
        if base is not None:
            return _build(LoadedRun(base[0], "repro", base[1]), rep)
        return _build(self.original, rep) if self.original is not None else None


def judged_rounds(
    replay: Replayer,
    *,
    stopping: Stopping,
    against: Replayer | None = None,
    original: LoadedRun | None = None,
    seed: int | None = None,
    report: Reporter = lambda _: None,
    placement: Placement = SEQUENTIAL,
) -> Outcome:
    """Rounds of `replay` (interleaved with `against` when given) run by the one driver and
    judged by a `ReportJudge`: the runs and the report on them."""
    judge = ReportJudge(replay, against, original, stopping, report)
    runs = Rounds(
        [Arm(replay), *([Arm(against)] if against is not None else [])],
        stopping,
        judge,
        placement=placement,
        seed=seed,
        report=report,
    ).run()
    run, base = runs[0], runs[1] if against is not None else None
    return Outcome(run, base, judge.final(run, base))


def stopping_record(stopping: Stopping, overall: float) -> StoppingRecord:
    """The rule the rounds ran under, as the run records it: a report read later judges the
    rounds at the confidence each look took (`repro.compare.pairing.paired_rule`)."""
    return StoppingRecord(
        rule=RULE,
        fixed=stopping.fixed,
        min_rounds=stopping.min_rounds,
        max_rounds=stopping.max_rounds,
        max_time_s=stopping.max_time_s,
        looks=list(stopping.looks),
        look_confidence=stopping.confidence(overall),
    )


#: the sequential rule's name in a run record (`repro.stats.sequential`)
RULE = "signed-rank/looks-doubling"


def _overall(replay: Replayer, against: Replayer | None, original: LoadedRun | None) -> float:
    """The confidence all the looks together hold: the tolerances' the report will use."""
    base = against.spec if against is not None else None
    tol = (original.record.tolerances if original is not None else None) or (
        base.tolerances if base is not None else replay.spec.tolerances
    )
    return tol.confidence


def _judge(
    replay: Replayer,
    against: Replayer | None,
    original: LoadedRun | None,
    played: Played,
    stopping: Stopping,
) -> Report | None:
    """The report on the rounds so far (the runs are still under their partial names)."""
    rule = stopping_record(stopping, _overall(replay, against, original))
    snap = _snapshot(replay.record, "a", played, rule)
    rep = LoadedRun(replay.work_dir, "repro", snap)
    if against is not None:
        base = LoadedRun(against.work_dir, "repro", _snapshot(against.record, "b", played, rule))
    elif original is not None:
        base = original
    else:
        return None
    return _build(base, rep)


def _snapshot(record: RunRecord, side: str, played: Played, rule: StoppingRecord) -> RunRecord:
    interleave = Interleave(id="in-progress", side=side, seed=played.seed, rounds=played.rounds)
    return record.model_copy(update={"interleave": interleave, "stopping": rule}, deep=False)


def _build(base: LoadedRun, rep: LoadedRun) -> Report | None:
    tolerances = base.record.tolerances or rep.record.tolerances or Tolerances()
    try:
        return build_report(base, [rep], tolerances=tolerances)
    except SpecError:  # nothing comparable yet
        return None


def _why_no_more(last: Report | None, k: int) -> str:
    """Why the rounds stopped before their caps, after round k: decided, not comparable, or
    nothing left that more rounds could decide."""
    if last is not None and last.verdict.startswith("not comparable"):
        return f"{last.verdict} after round {k}: more rounds cannot change the machines"
    if last is not None and decided(last):
        return f"every headline metric was decided after round {k}"
    return f"no scenario left that more rounds could decide after round {k}"


def _still_open(
    report: Report,
    running: set[str],
    k: int,
    decided_after: dict[str, int],
    stopping: Stopping,
    *,
    first: bool,
) -> set[str]:
    """The scenarios the next round runs: those whose headline metric is still undecided, or
    decided between two of the rule's looks.

    Each scenario stops when its own metrics are decided at a look (a sequential design per
    scenario): the undecided ones then get the rounds, so a noisy scenario is not starved by
    the time a decided one would take. A look is the scenario's own number of paired rounds
    reaching one of the rule's (8, 16, ...), or the round cap. A stopped scenario never comes
    back; one that is not compared after the first pair of rounds (the other side lacks it, or
    its tests fail), or not comparable (the hardware differs from the original's), cannot be
    decided by more rounds and stops too.
    """
    judged = {s.scenario: s for s in report.scenarios}
    open_now = undecided_scenarios(report)
    keep = set()
    for scenario in sorted(running):
        result = judged.get(scenario)
        if result is None:
            if not first:
                keep.add(scenario)  # judged at a later look (its tests may yet finish)
            continue
        if scenario not in open_now and result.verdict.startswith("not comparable"):
            continue  # the hardware differs (or is unknown): more rounds cannot change that
        n = max(
            (len(m.replay) for m in result.metrics if m.judged and m.metric != "validity"),
            default=0,
        )
        at_look = n in stopping.looks or k >= stopping.max_rounds
        if scenario in open_now or not at_look:
            keep.add(scenario)
        else:
            decided_after.setdefault(scenario, k)
    return keep


def _next_look(stopping: Stopping, k: int) -> int:
    return next((n for n in stopping.looks if n > k), stopping.max_rounds)


def what_would_decide(report: Report, record: RunRecord, *, duet_fits: bool) -> str | None:
    """For rounds that ended undecided: what stopped them and what would decide them (more
    time or rounds, about how many at their noise; a quieter machine; duet rounds); None when
    every judged metric was decided."""
    open_rows = [
        (s.scenario, m)
        for s in report.scenarios
        for m in s.metrics
        if m.judged and m.metric != "validity" and m.verdict in UNDECIDED
    ]
    if not open_rows:
        return None
    stop = record.stopping or StoppingRecord()
    stopped = stop.stopped or ""
    rounds = stop.rounds or 0
    names = [f"{scenario} {m.label.removesuffix(' (MLPerf metric)')}" for scenario, m in open_rows]
    lines = [
        "undecided: "
        + ", ".join(names)
        + (f" (the rounds stopped because {stopped})" if stopped else "")
    ]
    share = busy_share(record.tests)
    if any(m.verdict == "inconclusive: machine busy" for _, m in open_rows):
        lines.append("other work shared the machine and slowed one side: run it on a quieter one")
    elif share is not None:
        lines.append(
            f"other work took {share:.0%} of the CPU beside these rounds and widened them: a "
            "quieter machine decides in fewer"
        )
    needed = [n for _, m in open_rows if (n := _rounds_to_decide(m, rounds)) is not None]
    timed = time_capped_of(stop)
    if rounds < (stop.min_rounds or MIN_ROUNDS):
        flag = "--max-time" if timed else "--max-rounds"
        lines.append(
            f"{rounds} round(s) ran, and a paired verdict needs at least "
            f"{stop.min_rounds or MIN_ROUNDS}: give them more with {flag}"
        )
    elif needed and (more := max(needed)) > SENSIBLE_ROUNDS:
        # "--max-time 254110 (and --max-rounds 26556 or more)": 70 hours is no advice
        lines.append(
            f"at these rounds' noise no sensible budget decides it on this machine now (about "
            f"{more if more <= 1000 else 'more than 1000'} rounds would): what can is less "
            "noise: a quieter machine or phase, tests pinned to CPUs of their own (--cpus), "
            "longer tests (--min-duration-ms)" + (", or --duet (below)" if duet_fits else "")
        )
    elif needed:
        more = max(needed)
        shown = f"about {more}" if more <= 1000 else "more than 1000"
        if timed:
            each = (stop.elapsed_s or 0.0) / rounds
            lines.append(
                f"at these rounds' noise {shown} rounds would decide: --max-time "
                f"{max(60, round(each * more, -1)):g} (and --max-rounds {more} or more)"
            )
        else:
            lines.append(f"at these rounds' noise {shown} rounds would decide: --max-rounds {more}")
    placed = Placement.from_record(record.interleave.placement if record.interleave else None)
    if duet_fits and (placed is None or placed.mode == "sequential"):
        lines.append(
            "--duet runs both sides of a round at once, each on its own CPU: on a quiet "
            "machine its rounds varied about 2x less here (not under load: docs/verdicts.md)"
        )
    return "; ".join(lines)


#: beyond this many rounds, "give it more rounds" is no advice (the demo's A/A was told 26,556)
SENSIBLE_ROUNDS = 200


def _rounds_to_decide(m: MetricResult, rounds: int) -> int | None:
    """About how many rounds would put the interval inside (or outside) the tolerance, from
    its width after `rounds` (the width shrinks as 1/sqrt(rounds))."""
    if not m.ci or m.delta_rel is None or m.tolerance is None or rounds < 2:
        return None
    half = (m.ci[1] - m.ci[0]) / 2
    margin = abs(m.tolerance - abs(m.delta_rel))
    if margin <= 0 or half <= 0:
        return None
    return max(math.ceil(rounds * (half / margin) ** 2), rounds + 2)
