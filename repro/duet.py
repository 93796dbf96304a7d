"""Where the tests of paired rounds run: pinned CPUs, and duet rounds.

Sequential rounds run one test at a time; `--cpus LIST` pins every test of both sides (the
worker, so LoadGen's threads and the backend's) to the same CPUs. Duet rounds (Bulej et al.,
"Duet Benchmarking: Improving Measurement Accuracy in the Cloud", ICPE 2020) run the two sides'
tests of a round at the same time, each pinned to its own CPUs and started together at a gate
(`repro.harness.gate`), so that a neighbour's load falls on both alike. Which side gets which
CPU set follows the round's drawn order (the side that would have run first gets the first
set), so over a pair of rounds each side ran on each set once and a faster CPU favours
neither. The probe after a duet round is measured once, after both tests, for both sides.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from repro.errors import UsageError
from repro.harness.gate import GATE_TIMEOUT_S, gate_name, open_gates
from repro.runs.placement import Placement

if TYPE_CHECKING:
    from repro.probes import Probe
    from repro.replay.replayer import Replayer
    from repro.replay.settings import ProbeSource

SEQUENTIAL = Placement()


@contextlib.contextmanager
def quiet_progress(label: str, forecast: object) -> Iterator[None]:
    """No progress shown: the other side of a duet round shows it."""
    yield


def placement(*, duet: bool, cpus: tuple[int, ...] | None, threads: int) -> Placement:
    """The placement the command line asks for: duet splits `cpus` (default: every CPU this
    process may use) into two sets of `threads` CPUs each (0 threads: half each)."""
    if not duet:
        return Placement("sequential", (cpus,) if cpus else ())
    pool = list(cpus or sorted(os.sched_getaffinity(0)))
    each = threads or len(pool) // 2
    if each < 1 or len(pool) < 2 * each:
        raise UsageError(
            f"--duet runs both sides at once on {2 * max(each, 1)} CPUs ({max(each, 1)} a side, "
            f"the spec's threads), and there are {len(pool)} ({','.join(map(str, pool))})",
            hint="run sequential rounds (without --duet), or give the spec fewer threads",
        )
    return Placement("duet", (tuple(pool[:each]), tuple(pool[each : 2 * each])))


def duet_fits(cpus: int, threads: int) -> bool:
    """Whether a machine with `cpus` CPUs has room for both sides of a duet round."""
    return threads >= 1 and cpus >= 2 * threads


class SharedProbe:
    """One probe for both sides of a duet round: measured once both tests are done (a probe
    beside the other side's test would measure that test), returned to each."""

    def __init__(self, source: ProbeSource) -> None:
        self.source = source
        self.last: Probe | None = None
        self._barrier = threading.Barrier(2, action=self._measure, timeout=GATE_TIMEOUT_S)

    def _measure(self) -> None:
        self.last = self.source.measure()

    def side(self) -> _SideProbe:
        return _SideProbe(self)


class _SideProbe:
    def __init__(self, shared: SharedProbe) -> None:
        self.shared = shared

    def measure(self) -> Probe:
        self.shared._barrier.wait()
        assert self.shared.last is not None
        return self.shared.last


class DuetRound:
    """Duet rounds: both sides' tests, two threads, their gates opened together."""

    def __init__(self, sides: Sequence[Replayer], folder: Path) -> None:
        self.sides = list(sides)
        self.folder = folder

    def share_probes(self) -> None:
        """After both sides began (each measured its first probe alone): one probe after each
        pair of tests, for both."""
        source = self.sides[0].probes
        if source is None or self.sides[1].probes is None:
            return
        shared = SharedProbe(source)
        for side in self.sides:
            side.probes = shared.side()

    def run(self, k: int, order: Sequence[int], only: set[str], placed: Placement) -> None:
        """Round k of both sides at once: the side first in `order` on the first CPU set."""
        common = [p for p in self.sides[0].pairs if p in set(self.sides[1].pairs)]
        plan = [(s, m) for s, m in common if s in only and (m == "performance" or k == 1)]
        shared = self.sides[0].shares_sizing_with(self.sides[1])
        for rank, i in enumerate(order):
            self.sides[i].placed(cpus=placed.cpus[rank], gates=self.folder / f"side{i}")
        errors: list[BaseException] = []

        def run_side(i: int) -> None:
            try:
                self.sides[i].run_round(k, only)
            except BaseException as exc:  # raised again in the caller's thread
                errors.append(exc)
                self._abort()

        threads = [threading.Thread(target=run_side, args=(i,), daemon=True) for i in (0, 1)]
        for t in threads:
            t.start()
        try:
            for scenario, mode in plan:
                gates = [self.folder / f"side{i}" / gate_name(k, scenario, mode) for i in (0, 1)]
                open_gates(gates, share_rate=shared)
            for t in threads:
                t.join()
        except BaseException:  # Ctrl-C lands here: stop both sides' workers, then say so
            self._abort()
            for side in self.sides:
                stop = getattr(side.runner, "stop", None)
                if stop is not None:
                    stop()
            for t in threads:
                t.join(timeout=30)
            raise
        if errors:
            raise errors[0]

    def _abort(self) -> None:
        """A side stopped: the other must not wait for it at the shared probe."""
        for side in self.sides:
            if isinstance(side.probes, _SideProbe):
                side.probes.shared._barrier.abort()


def gate_folder() -> Path:
    """A private folder for one rounds' gates (removed by the caller)."""
    return Path(tempfile.mkdtemp(prefix="repro-duet-"))
