"""The forecast of one LoadGen test while its worker runs: the estimate from what the replay
measured, re-read from the worker's progress file (its warm-up, LoadGen's start, an Offline
test's samples done) each time the display asks."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro.estimates import Estimate, Live, Measured, PlannedTest, Snapshot, estimate_test
from repro.harness.progress import read_live


class WorkerForecast:
    """A test's estimate as its worker reports how far it is."""

    def __init__(
        self, plan: PlannedTest, measured: Measured, progress_file: Path, rest: Estimate | None
    ) -> None:
        self.plan = plan
        self.measured = measured
        self.progress_file = progress_file
        self.rest = rest
        #: when the worker was started (the worker's own times are wall-clock times too)
        self.spawn_unix = time.time()
        self.spawn = time.monotonic()
        self.wall_s: float | None = None

    def live(self) -> Live | None:
        return read_live(self.progress_file, self.spawn_unix)

    def now(self) -> Snapshot:
        return Snapshot(estimate_test(self.plan, self.measured, self.live()), self.rest)

    def ended(self) -> None:
        """The worker ended: what its warm-up timed goes to the replay's measurements, its
        progress file goes (it is no part of the run)."""
        live = self.live()
        if live is not None:
            self.measured.learn_warm_up(live.warm_up_call_s)
        with contextlib.suppress(FileNotFoundError):
            self.progress_file.unlink()
        self.wall_s = time.monotonic() - self.spawn

    def learn(self, timings: dict[str, float], metrics: Mapping[str, Any]) -> None:
        """The test finished: its rates and its time before and after LoadGen."""
        wall = self.wall_s if self.wall_s is not None else time.monotonic() - self.spawn
        self.measured.learn_test(
            self.plan, timings, metrics, wall_s=wall, spawn_unix=self.spawn_unix
        )
