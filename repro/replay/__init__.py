"""The replay engine: one experiment's tests run with LoadGen, one worker process per test.

- `session`: `ReplaySession`, the only place a replay's engine is built: an environment realized
  once (or taken as realized) and what every replay in it shares (the artifact cache, the
  reporter, the progress bar, the worker runner, the probes); every use case (replay, rounds,
  claims, sweep, a dispatched part, a submission's runs, capture) opens one and asks it for a
  `Replayer` of a spec.
- `replayer`: `Replayer` (fetch, begin, rounds of tests, finish: a run directory); `options`:
  the options a command line chose (`ReplayOptions`), the settings of a scenario's tests;
  `worker_end`: how a worker's end is read (killed from outside, or failed).
- `scoring`: an accuracy test scored by the spec's metric (`Scorer`).
- `request`, `steps` and the `*_steps` beside it: `repro replay`'s modes as named steps over a
  typed request, speaking through a reporter.
- the modes' own work: `rounds` (interleaved rounds, stopped by the paired rule),
  `claim_rounds` (a claim's rounds; `claim_evidence` what they become), `dispatched` and
  `part` (a replay split into parts that an executor runs; `python -m repro.replay.part` on the
  node), `submission_maker` (the runs `repro submission` makes).

The names below load their module when first used (PEP 562), so that a command line that only
builds a request (`repro replay --help`) does not import the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro import lazy

if TYPE_CHECKING:
    from repro.harness.runner import ProcessRunner
    from repro.replay.options import (
        ProbeSource,
        ProgressFactory,
        ReplayOptions,
        Reporter,
        new_run_id,
        planned_test,
        scenario_settings,
        selected,
        utc_now,
    )
    from repro.replay.replayer import Replayer
    from repro.replay.session import ReplaySession
    from repro.replay.worker_end import (
        KILLED_STATUSES,
        WorkerKilled,
        stopped_by_signals,
        worker_failure,
    )

#: each name's module
_HOME = {
    **dict.fromkeys(
        (
            "ProbeSource",
            "ProgressFactory",
            "ReplayOptions",
            "Reporter",
            "new_run_id",
            "planned_test",
            "scenario_settings",
            "selected",
            "utc_now",
        ),
        "repro.replay.options",
    ),
    **dict.fromkeys(
        ("KILLED_STATUSES", "WorkerKilled", "stopped_by_signals", "worker_failure"),
        "repro.replay.worker_end",
    ),
    "Replayer": "repro.replay.replayer",
    "ReplaySession": "repro.replay.session",
    "ProcessRunner": "repro.harness.runner",
}

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

__getattr__ = lazy.names(__name__, _HOME)
