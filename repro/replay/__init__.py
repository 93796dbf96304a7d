"""The replay engine: one experiment's tests run with LoadGen, one worker process per test.

- `session`: `ReplaySession`, the only place a replay's engine is built: an environment realized
  once (or taken as realized) and what every replay in it shares (the artifact cache, the
  reporter, the progress bar, the worker runner, the probes); every use case (replay, rounds,
  claims, sweep, a dispatched part, a submission's runs, capture) opens one and asks it for a
  `Replayer` of a spec.
- `engine`: `Replayer` (fetch, begin, rounds of tests, finish: a run directory), the options a
  command line chose (`ReplayOptions`), the settings of a scenario's tests.
"""

from __future__ import annotations

from repro.harness.runner import ProcessRunner
from repro.replay.engine import (
    KILLED_STATUSES,
    ProbeSource,
    ProgressFactory,
    Replayer,
    ReplayOptions,
    Reporter,
    WorkerKilled,
    new_run_id,
    planned_test,
    scenario_settings,
    selected,
    stopped_by_signals,
    utc_now,
    worker_failure,
)
from repro.replay.session import ReplaySession

__all__ = [
    "KILLED_STATUSES",
    "ProbeSource",
    "ProcessRunner",
    "ProgressFactory",
    "ReplayOptions",
    "ReplaySession",
    "Replayer",
    "Reporter",
    "WorkerKilled",
    "new_run_id",
    "planned_test",
    "scenario_settings",
    "selected",
    "stopped_by_signals",
    "utc_now",
    "worker_failure",
]
