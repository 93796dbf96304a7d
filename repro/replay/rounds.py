"""`Rounds`: the one driver of rounds of tests, for every kind of them.

A plain replay's repeats (one arm), `--against` and the A/A (two arms), each claim (two arms) and
each point of a sweep (one arm) run here: the arms' tests alternate within every round in an
order drawn from a recorded seed and balanced over pairs of rounds (so that a phase of the
machine lands on both, and the position effect cancels in the pairs), the two sides run the
same sized queries (`Replayer.share_sizing`), the tests run where the placement says (pinned,
or both sides at once in duet: `repro.duet`), and after each round the kind's `Judge` says
whether the rounds stop (decided at one of the looks `repro.stats.sequential.Stopping` plans, a
cap, nothing left to decide). However they end (done, Ctrl-C, a killed worker, an error), every
begun arm's run is finished: whole, or marked interrupted; never half-written.

What a kind of rounds judges lives beside it: `repro.replay.round_judge` (a replay against its
baseline or the spec's original), `repro.replay.claim_rounds` (a claim), `repro.sweep` (a
point narrow enough).
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from repro.duet import SEQUENTIAL, DuetRound, gate_folder, quiet_progress
from repro.errors import Interrupted, RunError, UsageError
from repro.estimates import duration
from repro.replay.replayer import Replayer
from repro.replay.settings import Reporter
from repro.replay.worker_end import WorkerKilled
from repro.runs.placement import Placement
from repro.runs.record import Interleave, RunRecord, StoppingRecord
from repro.signals import interruptible
from repro.spec.models import ExperimentSpec
from repro.stats.sequential import Stopping


@dataclass
class Arm:
    """One side of the rounds: its replayer, or how to make it when it first runs (a
    feasibility claim's Server side waits for the baseline's first throughput)."""

    replayer: Replayer | None = None
    start: Callable[[], Replayer] | None = None

    def ready(self) -> Replayer:
        if self.replayer is None:
            assert self.start is not None, "an arm has a replayer or a way to make one"
            self.replayer = self.start()
        return self.replayer


@dataclass
class Played:
    """What the rounds did: each round's order ("a" first, or "b"), their times, why they
    stopped."""

    seed: int
    orders: list[list[str]] = field(default_factory=list)
    #: each round's seconds, and the seconds from the start to each round's end
    round_s: list[float] = field(default_factory=list)
    round_end_s: list[float] = field(default_factory=list)
    stopped: str = "all rounds ran"
    #: the time cap stopped them (the message's wording is for a person; this is the fact)
    time_capped: bool = False
    elapsed_s: float = 0.0

    @property
    def rounds(self) -> int:
        return len(self.orders)


class Judge(Protocol):
    """What one kind of rounds decides between rounds."""

    def order(self, k: int) -> list[int] | None:
        """Which arm runs first in round k when the kind fixes it; None: drawn and balanced."""

    def running(self) -> Collection[str] | None:
        """The scenarios the next round runs (None: all)."""

    def after(self, k: int, played: Played) -> str | None:
        """Why the rounds stop after round k (None: run another); it may set
        `played.time_capped`."""

    def stopping_record(self, played: Played) -> StoppingRecord | None:
        """What the runs record of how the number of rounds was decided (None: nothing)."""


class FixedRounds:
    """Every round up to the cap (a plain replay's repeats)."""

    def order(self, k: int) -> list[int] | None:
        return None

    def running(self) -> Collection[str] | None:
        return None

    def after(self, k: int, played: Played) -> str | None:
        return None

    def stopping_record(self, played: Played) -> StoppingRecord | None:
        return None


@dataclass
class Rounds:
    """Rounds of `arms` (the first is side "a": the replay, a claim's candidate), until the
    judge or a cap of `stopping` stops them."""

    arms: list[Arm]
    stopping: Stopping
    judge: Judge = field(default_factory=FixedRounds)
    placement: Placement = SEQUENTIAL
    seed: int | None = None
    report: Reporter = lambda _: None
    #: record where the tests ran in each run's interleave (claims' records do not say)
    record_placement: bool = True
    #: the claim the two arms are the sides of, recorded in their interleave
    claim: str | None = None
    #: run after the last round, before the runs are finished (a plain replay's profiled pass)
    then: Callable[[], None] | None = None
    #: what the rounds did so far (the judges read it)
    played: Played = field(init=False)

    def __post_init__(self) -> None:
        self.played = Played(seed=secrets.randbits(32) if self.seed is None else self.seed)

    @property
    def paired(self) -> bool:
        return len(self.arms) == 2

    def run(self) -> list[tuple[Path, RunRecord]]:
        """Every round the judge and the caps allow, then each arm's run finished (in arm
        order), with its interleave and stopping records."""
        duet = self._duet()
        begun: list[Replayer] = []
        t0 = time.monotonic()
        with interruptible():
            try:
                self._begin(begun)
                if duet is not None:
                    duet.share_probes()
                self._rounds(duet, begun, t0)
                if self.then is not None:
                    self.then()
            except WorkerKilled as exc:  # from outside (docker kill, the OOM killer): no Ctrl-C
                kept = self._abandon(begun, exc.message)
                where = f": {kept[0]}" if len(kept) == 1 else ""
                raise RunError(
                    f"{exc.message}; the run{'s are' if len(kept) > 1 else ' is'} marked "
                    f"interrupted{where}",
                    hint="run it again (with more memory, if it ran out); a killed worker's "
                    "test is never counted",
                ) from None
            except (KeyboardInterrupt, Interrupted):
                for folder in self._abandon(begun, None):
                    self.report(f"the run is kept, marked interrupted: {folder}")
                raise KeyboardInterrupt from None
            except BaseException as exc:
                # a side that failed (an artifact the baseline lacks, a full disk) leaves no
                # half-written run and no scratch folder: each begun side is marked interrupted
                with contextlib.suppress(Exception):
                    self._abandon(begun, f"stopped by an error: {exc}")
                raise
            finally:
                if duet is not None:
                    shutil.rmtree(duet.folder, ignore_errors=True)
        self.played.elapsed_s = round(time.monotonic() - t0, 1)
        self._record()
        return [arm.ready().finish() for arm in self.arms]

    def _begin(self, begun: list[Replayer]) -> None:
        """The arms there are from the start, begun; the two sides share their sizing."""
        present = [a.replayer for a in self.arms if a.replayer is not None]
        if len(present) == 2 and same_workload(present[0].spec, present[1].spec):
            present[1].share_sizing(present[0])  # both sides run the same sized queries
        if self.placement.mode == "sequential" and self.placement.cpus:
            for side in present:
                side.placed(cpus=self.placement.cpus[0])
        for side in present:
            side.begin()
            begun.append(side)

    def _rounds(self, duet: DuetRound | None, begun: list[Replayer], t0: float) -> None:
        rng = np.random.Generator(np.random.PCG64(self.played.seed))
        played, stopping = self.played, self.stopping
        for k in range(1, stopping.max_rounds + 1):
            order = self.judge.order(k) or balanced_order(k, len(self.arms), rng, played.orders)
            played.orders.append(["a" if i == 0 else "b" for i in order])
            started = time.monotonic()
            running = self.judge.running()
            if duet is not None:
                duet.run(k, order, set(running or _scenarios(self.arms)), self.placement)
            else:
                for i in order:
                    self._side(i, begun).run_round(k, running)
            played.round_s.append(time.monotonic() - started)
            played.round_end_s.append(round(time.monotonic() - t0, 2))
            why = self.judge.after(k, played)
            if why is not None:
                played.stopped = why
                return
        if not stopping.fixed:
            played.stopped = f"the round cap ({stopping.max_rounds}) was reached"

    def _side(self, i: int, begun: list[Replayer]) -> Replayer:
        """Arm i's replayer, begun when it first runs (sharing the other side's sizing)."""
        arm = self.arms[i]
        if arm.replayer is not None:
            return arm.replayer
        side = arm.ready()
        for other in begun:
            side.share_sizing(other)
        side.begin()
        begun.append(side)
        return side

    def _abandon(self, begun: list[Replayer], message: str | None) -> list[Path]:
        """Every begun arm's run finished as interrupted: where each is kept."""
        kept = []
        for side in begun:
            with contextlib.suppress(Exception):
                final, _ = side.finish(interrupted=True, reraise=False, message=message)
                kept.append(final)
        return kept

    def _record(self) -> None:
        """Each run's interleave (paired rounds) and stopping record."""
        played = self.played
        stopping = self.judge.stopping_record(played)
        pairing = secrets.token_hex(8)
        for i, arm in enumerate(self.arms):
            record = arm.ready().record
            if self.paired:
                record.interleave = Interleave(
                    id=pairing,
                    side="a" if i == 0 else "b",
                    seed=played.seed,
                    rounds=played.rounds,
                    orders=played.orders,
                    placement=self.placement.as_record() if self.record_placement else None,
                    claim=self.claim,
                )
            if stopping is not None:
                record.stopping = stopping

    def _duet(self) -> DuetRound | None:
        """The duet of the two sides, when the placement asks for one; both must run the same
        tests (a test only one side runs would have no partner to start with)."""
        if self.placement.mode != "duet":
            return None
        sides = [a.replayer for a in self.arms]
        if len(sides) != 2 or sides[0] is None or sides[1] is None:
            raise UsageError(
                "--duet runs the two sides of paired rounds at once: it needs --against"
            )
        if set(sides[0].pairs) != set(sides[1].pairs):
            raise UsageError(
                "--duet needs both sides to run the same scenarios and modes; the replay runs "
                f"{sorted(sides[0].pairs)}, the baseline {sorted(sides[1].pairs)}",
                hint="choose the common ones with --scenario and --mode, or run without --duet",
            )
        sides[1].progress = quiet_progress  # one side's progress on the console, not two
        return DuetRound([sides[0], sides[1]], gate_folder())


def _scenarios(arms: list[Arm]) -> set[str]:
    return {s for a in arms if a.replayer is not None for s, _ in a.replayer.pairs}


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


def same_workload(a: ExperimentSpec, b: ExperimentSpec) -> bool:
    """Whether two sides run one workload (the same model and data, by their digests, and the
    same scenarios' settings): then a query sized for one is the other's too. An A/B of
    threads, a backend option or the environment is one workload; `--against` another model is
    not: each side sizes its own (the digits model's rate made a ResNet's 200 ms test about
    11.5 minutes)."""

    def digests(spec: ExperimentSpec) -> dict[str, str | None]:
        return {name: art.sha256 for name, art in spec.artifacts.items()}

    return digests(a) == digests(b) and a.workload.scenarios == b.workload.scenarios
