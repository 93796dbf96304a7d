"""Use case: replays run in rounds until the verdict is decided, alone or interleaved.

`run_rounds` drives one replay (judged against a stored original) or two interleaved replays
(`--against`: the candidate A and the baseline B alternate within every round, in an order drawn
from a recorded seed and balanced over pairs of rounds, so that a phase of the machine lands on
both; the report pairs them round by round). Unless the rounds are fixed, the interval of every
headline metric is looked at after the rounds `repro.stats.sequential.Stopping` plans (8, 16,
32, ... and the cap: the one rule of every paired comparison), and the rounds stop when each
lies inside or outside its tolerance, or at a cap fixed before the first round; at the cap the
verdict stays inconclusive and the report says what difference the data could detect. A
scenario whose metrics are decided stops there: later rounds run only the undecided scenarios,
so the noisy ones get the rounds sooner. The rule the rounds ran under is recorded in each
run (`stopping`), so that a report read later judges them as the rounds did.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from repro.compare import build_report, decided, undecided_scenarios
from repro.compare.machine_sides import busy_share
from repro.compare.pairing import time_capped_of
from repro.duet import SEQUENTIAL, DuetRound, gate_folder, quiet_progress
from repro.errors import Interrupted, RunError, SpecError, UsageError
from repro.estimates import duration
from repro.replay import Replayer, WorkerKilled
from repro.reports.model import MetricResult, Report
from repro.runs.placement import Placement
from repro.runs.record import Interleave, RunRecord, StoppingRecord
from repro.runs.store import LoadedRun
from repro.signals import interruptible
from repro.spec.models import Tolerances
from repro.stats.sequential import MIN_ROUNDS, Stopping
from repro.stats.verdicts import UNDECIDED


@dataclass(frozen=True)
class Outcome:
    """What the rounds produced: the replay's run (and the baseline's), and the last report."""

    run: tuple[Path, RunRecord]
    baseline: tuple[Path, RunRecord] | None
    report: Report | None


Judge = Callable[[LoadedRun, LoadedRun], Report]


def run_rounds(
    replay: Replayer,
    *,
    stopping: Stopping,
    against: Replayer | None = None,
    original: LoadedRun | None = None,
    seed: int | None = None,
    report: Callable[[str], None] = lambda _: None,
    placement: Placement = SEQUENTIAL,
) -> Outcome:
    """Run rounds of `replay` (interleaved with `against` when given) and judge them.

    The judge compares the replay with the baseline's run (interleaved) or with `original`.
    `placement` says where the tests run: one at a time (pinned to CPUs, or not), or both
    sides' tests of a round at once, each on its own CPUs (`repro.duet`).
    """
    duet = _duet(replay, against, placement)
    seed = secrets.randbits(32) if seed is None else seed
    rng = np.random.Generator(np.random.PCG64(seed))
    sides = [replay] if against is None else [replay, against]
    orders: list[list[str]] = []
    last: Report | None = None
    stopped = "all rounds ran"
    #: the scenarios still running (with until_decided, each stops once decided) and when
    #: each was decided
    running: set[str] = {scenario for side in sides for scenario, _ in side.pairs}
    decided_after: dict[str, int] = {}
    t0 = time.monotonic()
    rounds_s: list[float] = []  # each round's time, as measured: what the time left is from
    if against is not None:
        against.share_sizing(replay)  # both sides run the same sized queries
    if placement.mode == "sequential" and placement.cpus:
        for side in sides:
            side.placed(cpus=placement.cpus[0])
    time_capped = False
    begun: list[Replayer] = []  # each side begun is finished, whatever stops the rounds
    with interruptible():
        try:
            for side in sides:
                side.begin()
                begun.append(side)
            if duet is not None:
                duet.share_probes()
            for k in range(1, stopping.max_rounds + 1):
                order = balanced_order(k, len(sides), rng, orders)
                orders.append(["a" if i == 0 else "b" for i in order])
                started = time.monotonic()
                if duet is not None:
                    duet.run(k, order, running, placement)
                else:
                    for i in order:
                        sides[i].run_round(k, running)
                rounds_s.append(time.monotonic() - started)
                elapsed = time.monotonic() - t0
                if stopping.fixed:
                    continue
                # after a whole pair of rounds (a side runs first in one round of each pair: a
                # pair cancels the position) each scenario is looked at when its paired rounds
                # reach one of the rule's looks (a round left out, its two tests run with
                # different settings, delays the look), or the rounds reach a cap
                look = against is None or k % 2 == 0
                first = k == (1 if against is None else 2)
                if look or first:
                    last = _judge(replay, against, original, orders, seed, stopping)
                if last is not None and (look or first):
                    running = _still_open(last, running, k, decided_after, stopping, first=first)
                if not running and k < stopping.max_rounds:
                    stopped = _why_no_more(last, k)
                    break
                why = stopping.reason(k, False, elapsed)
                if why is not None and k < stopping.max_rounds:
                    stopped = why
                    time_capped = stopping.time_up(k, elapsed)
                    break
                if k < stopping.max_rounds:  # the last round's word is the report's
                    report(
                        f"round {k}: "
                        + (
                            f"not decided yet ({last.summary if last else 'no report'}); "
                            if k in stopping.looks
                            else f"next look after round {_next_look(stopping, k)}; "
                        )
                        + f"next: {', '.join(sorted(running))}; "
                        + rounds_left(
                            rounds_s, stopping.max_rounds - k, stopping.max_time_s - elapsed
                        )
                    )
            else:
                if not stopping.fixed:
                    stopped = f"the round cap ({stopping.max_rounds}) was reached"
        except WorkerKilled as exc:  # from outside (docker kill, the OOM killer): no Ctrl-C
            for side in begun:
                side.finish(interrupted=True, reraise=False, message=exc.message)
            raise RunError(
                f"{exc.message}; the runs are marked interrupted",
                hint="run the rounds again (with more memory, if it ran out); a killed worker's "
                "test is never counted",
            ) from None
        except (KeyboardInterrupt, Interrupted):
            for side in begun:
                kept, _ = side.finish(interrupted=True, reraise=False)
                report(f"the run is kept, marked interrupted: {kept}")
            raise KeyboardInterrupt from None
        except BaseException as exc:
            # a side that failed (a killed worker, an artifact the baseline lacks) leaves no
            # half-written run and no scratch folder: each begun side is marked interrupted
            for side in begun:
                with contextlib.suppress(Exception):
                    side.finish(interrupted=True, reraise=False, message=f"stopped: {exc}")
            raise
        finally:
            if duet is not None:
                shutil.rmtree(duet.folder, ignore_errors=True)
    elapsed = round(time.monotonic() - t0, 1)
    pairing = secrets.token_hex(8)
    overall = _overall(replay, against, original)
    for i, side in enumerate(sides):
        if against is not None:
            side.record.interleave = Interleave(
                id=pairing,
                side="a" if i == 0 else "b",
                seed=seed,
                rounds=len(orders),
                orders=orders,
                placement=placement.as_record(),
            )
        side.record.stopping = stopping_record(stopping, overall).model_copy(
            update={
                "rounds": len(orders),
                "stopped": stopped,
                # what stopped them, as a fact (the message's wording is for a person)
                "time_capped": time_capped,
                "elapsed_s": elapsed,
                "decided_after": dict(decided_after),
            }
        )
    run = replay.finish()
    base = against.finish() if against is not None else None
    final = _judge_final(run, base, original)
    return Outcome(run, base, final)


def _duet(replay: Replayer, against: Replayer | None, placement: Placement) -> DuetRound | None:
    """The duet of the two sides, when the placement asks for one; both must run the same
    tests (a test only one side runs would have no partner to start with)."""
    if placement.mode != "duet":
        return None
    if against is None:
        raise UsageError("--duet runs the two sides of paired rounds at once: it needs --against")
    if set(replay.pairs) != set(against.pairs):
        raise UsageError(
            "--duet needs both sides to run the same scenarios and modes; the replay runs "
            f"{sorted(replay.pairs)}, the baseline {sorted(against.pairs)}",
            hint="choose the common ones with --scenario and --mode, or run without --duet",
        )
    against.progress = quiet_progress  # one side's progress on the console, not two at once
    return DuetRound([replay, against], gate_folder())


def _why_no_more(last: Report | None, k: int) -> str:
    """Why the rounds stopped before their caps, after round k: decided, not comparable, or
    nothing left that more rounds could decide."""
    if last is not None and last.verdict.startswith("not comparable"):
        return f"{last.verdict} after round {k}: more rounds cannot change the machines"
    if last is not None and decided(last):
        return f"every headline metric was decided after round {k}"
    return f"no scenario left that more rounds could decide after round {k}"


def rounds_left(rounds_s: list[float], rounds: int, time_left_s: float) -> str:
    """`at most 3 more round(s), about 45 s (...)`: from the rounds measured so far (a later
    round may be shorter: decided scenarios stop), within the time cap."""
    each = sum(rounds_s[-2:]) / len(rounds_s[-2:])  # the latest rounds run what is left
    seconds = min(rounds * each, max(time_left_s, 0.0))
    capped = " (the time cap)" if rounds * each > time_left_s else ""
    return (
        f"at most {rounds} more round(s), about {duration(seconds)}{capped} "
        f"({duration(each)} a round as measured)"
    )


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


def balanced_order(
    k: int, n_sides: int, rng: np.random.Generator, previous: list[list[str]]
) -> list[int]:
    """Which side runs first in round k. Rounds come in balanced pairs: the order of an odd
    round is drawn, the next round runs the reverse, so that each side runs first equally
    often (running second after the other side's tests is measurably different here: a 5 %
    position effect on SingleStream was seen) and the position effect cancels in the pairs."""
    if n_sides == 1:
        return [0]
    if k % 2 == 0 and previous:
        return [1, 0] if previous[-1][0] == "a" else [0, 1]
    return [0, 1] if rng.random() < 0.5 else [1, 0]


def _next_look(stopping: Stopping, k: int) -> int:
    return next((n for n in stopping.looks if n > k), stopping.max_rounds)


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
    orders: list[list[str]],
    seed: int,
    stopping: Stopping,
) -> Report | None:
    """The report on the rounds so far (the runs are still under their partial names)."""
    rule = stopping_record(stopping, _overall(replay, against, original))
    rep = LoadedRun(replay.work_dir, "repro", _snapshot(replay.record, "a", orders, seed, rule))
    if against is not None:
        snap = _snapshot(against.record, "b", orders, seed, rule)
        base = LoadedRun(against.work_dir, "repro", snap)
    elif original is not None:
        base = original
    else:
        return None
    return _build(base, rep)


def _snapshot(
    record: RunRecord, side: str, orders: list[list[str]], seed: int, rule: StoppingRecord
) -> RunRecord:
    interleave = Interleave(id="in-progress", side=side, seed=seed, rounds=len(orders))
    return record.model_copy(update={"interleave": interleave, "stopping": rule}, deep=False)


def _judge_final(
    run: tuple[Path, RunRecord], base: tuple[Path, RunRecord] | None, original: LoadedRun | None
) -> Report | None:
    rep = LoadedRun(run[0], "repro", run[1])
    if base is not None:
        return _build(LoadedRun(base[0], "repro", base[1]), rep)
    return _build(original, rep) if original is not None else None


def _build(base: LoadedRun, rep: LoadedRun) -> Report | None:
    tolerances = base.record.tolerances or rep.record.tolerances or Tolerances()
    try:
        return build_report(base, [rep], tolerances=tolerances)
    except SpecError:  # nothing comparable yet
        return None


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
