"""What a plan makes of a spec: the LoadGen settings of each scenario with the plan's overrides,
the tests it selects, and the run's id; what the engine is given to measure and show with."""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import ValidationError

from repro.errors import UsageError
from repro.estimates import (
    Forecast,
    PlannedTest,
)
from repro.harness.request import WorkerRequest
from repro.harness.sizing import MAX_PLANNED_SAMPLES
from repro.probes import Probe
from repro.runs.plan import ReplayPlan
from repro.spec.models import ExperimentSpec, LoadGenSettings, ModeName, ScenarioName
from repro.validate import planned_samples

Reporter = Callable[[str], None]


class ProbeSource(Protocol):
    """Measures the machine between tests (`repro.probes.ProbeSet`, or a fake in tests)."""

    def measure(self) -> Probe:
        """One probe."""


#: wraps the wait for one worker: (label, its forecast) -> context manager
ProgressFactory = Callable[[str, Forecast], contextlib.AbstractContextManager[Any]]


def planned_test(req: WorkerRequest) -> PlannedTest:
    """The test of a worker request, as the estimates see it: the settings it runs with (an
    earlier test's changes applied), and whether it is a short one (`short_query`)."""
    settings = req.settings.changed({name: c.used for name, c in req.changed_settings.items()})
    return PlannedTest(
        req.scenario,
        req.mode,
        settings,
        req.total_sample_count,
        req.batch_size,
        short=req.short_test_ms is not None and "offline_expected_qps" not in req.changed_settings,
    )


def new_run_id() -> str:
    """Sortable by time, unique: 20261129T171502Z-3fa2c1."""
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{now}-{secrets.token_hex(3)}"


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def scenario_settings(spec: ExperimentSpec, scenario: str, plan: ReplayPlan) -> LoadGenSettings:
    """The LoadGen settings of one scenario, with the plan's overrides."""
    sc = next(s for s in spec.workload.scenarios if s.scenario == scenario)
    settings = sc.settings.as_set()
    settings.update(plan.loadgen.model_dump(exclude_none=True))
    if settings["max_duration_ms"] and settings["max_duration_ms"] < settings["min_duration_ms"]:
        if (asked := plan.override("max_duration_ms")) is not None:
            raise UsageError(
                f"--max-duration-ms {asked} is below the {scenario} test's "
                f"minimum duration ({settings['min_duration_ms']} ms): LoadGen would stop it "
                "before it could be valid",
                hint="raise --max-duration-ms, or lower the minimum with --min-duration-ms",
            )
        settings["max_duration_ms"] = 0  # the spec's cap, below a longer minimum asked for
    return _check_planned(scenario, settings)


def _check_planned(scenario: str, settings: dict[str, Any]) -> LoadGenSettings:
    """The overrides must not make LoadGen generate more samples than a machine holds (it
    builds the whole schedule before the first query: 2**64 queries is a crash, not a run)."""
    try:
        effective = LoadGenSettings.model_validate(settings)
    except ValidationError as exc:  # overrides that contradict the spec's own settings
        first = exc.errors()[0].get("msg", "invalid") if exc.errors() else "invalid"
        raise UsageError(
            f"{scenario}: the overrides contradict the spec's settings: {first[:200]}",
            hint="check --min-query-count / --min-duration-ms against the spec's max_* settings",
        ) from None
    planned = planned_samples(scenario, effective)  # type: ignore[arg-type]
    if planned > MAX_PLANNED_SAMPLES:
        raise UsageError(
            f"{scenario}: with these settings LoadGen would generate about {planned:.3g} "
            f"samples before the run and hold them in memory; at most "
            f"{MAX_PLANNED_SAMPLES:,} are accepted",
            hint="lower --min-query-count or --min-duration-ms",
        )
    return effective


def selected(spec: ExperimentSpec, plan: ReplayPlan) -> list[tuple[ScenarioName, ModeName]]:
    """The (scenario, mode) pairs to run, in the spec's order; unknown choices are errors."""
    in_spec = [s.scenario for s in spec.workload.scenarios]
    for sc in plan.scenarios:
        if sc not in in_spec:
            raise UsageError(
                f"--scenario {sc}: the spec {spec.name!r} has no such scenario; it has {in_spec}"
            )
    for mode in plan.modes:
        if mode not in spec.workload.modes:
            raise UsageError(
                f"--mode {mode}: the spec {spec.name!r} runs {spec.workload.modes} only"
            )
    scenarios = [s for s in in_spec if not plan.scenarios or s in plan.scenarios]
    modes = [m for m in spec.workload.modes if not plan.modes or m in plan.modes]
    return [(s, m) for s in scenarios for m in modes]
