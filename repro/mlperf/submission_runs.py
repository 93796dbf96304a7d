"""Use case: the runs `repro submission` makes itself, in the runs' spec's environment.

A round fixes what a run cannot change afterwards: LoadGen's seeds (each round has its own)
and, for a full-length run, the durations and query counts mlperf.conf sets. So the submission
makes, per scenario, a performance run with the round's seeds when the given run used other
seeds (or is shorter than `--full-length` asks), and the compliance tests (TEST01, TEST04, with
LoadGen's audit.config) with the same settings. The accuracy run is always the given one's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.artifacts.cache import ArtifactCache
from repro.environments.base import RealizedEnvironment
from repro.environments.registry import realize
from repro.errors import UsageError
from repro.mlperf.compliance_tests import AUDIT
from repro.mlperf.round_rules import MIN_DURATION_MS, BenchmarkRules, RoundRules
from repro.replay import ProgressFactory, ReplayOptions, ReplaySession
from repro.runs.record import RunRecord, TestRecord
from repro.spec.io import load_spec, parse_spec
from repro.spec.models import ExperimentSpec

Reporter = Callable[[str], None]
#: the overrides of a run that a made run keeps (the replay's --min-duration-ms and kin)
_KEPT = ("min_duration_ms", "min_query_count", "max_duration_ms")


@dataclass(frozen=True)
class Plan:
    """How the submission's runs of one scenario are made: the spec with the round's seeds
    (and sample count), the replay's length settings, and why."""

    spec: ExperimentSpec
    settings: dict[str, int | None]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Made:
    """A run the submission made: its test (None: it failed, `error` says why) and folder."""

    name: str
    test: TestRecord | None
    folder: Path | None
    error: str | None = None


def round_spec(
    spec: ExperimentSpec, rules: RoundRules, bench: BenchmarkRules | None, *, full_length: bool
) -> tuple[ExperimentSpec, tuple[str, ...]]:
    """The spec with the round's seeds; with `full_length`, the benchmark's performance
    sample count too (as many as the data set has, said, when it has fewer)."""
    wl = spec.workload
    seeds = wl.seeds.model_copy(update=dict(rules.seeds))
    update: dict[str, Any] = {"seeds": seeds}
    notes: list[str] = []
    if full_length and bench is not None:
        count = min(bench.performance_sample_count, wl.total_sample_count)
        update["performance_sample_count"] = count
        if count < bench.performance_sample_count:
            notes.append(
                f"the data set has {wl.total_sample_count} samples: the performance sample "
                f"count is {count}, not {bench.name}'s {bench.performance_sample_count} (a spec "
                f"naming the benchmark's data set, {bench.dataset_size} samples, meets it)"
            )
    # the copy is another experiment: its id is its own digest, computed where it is recorded
    changed = {"workload": wl.model_copy(update=update), "id": None}
    return spec.model_copy(update=changed), tuple(notes)


def length_settings(
    record: RunRecord, scenario: str, bench: BenchmarkRules | None, *, full_length: bool
) -> dict[str, int | None]:
    """The length settings of the made runs: the given run's, or with `full_length` MLPerf's
    (600 s; mlperf.conf's query counts for the benchmark)."""
    if not full_length:
        return {k: record.overrides.get(k) for k in _KEPT}
    queries = bench.full_length_queries.get(scenario) if bench is not None else None
    return {"min_duration_ms": MIN_DURATION_MS, "min_query_count": queries, "max_duration_ms": None}


class RunMaker:
    """Makes a submission's runs in the spec's environment (realized once), into a temporary
    folder that lasts as long as the maker (a context manager)."""

    def __init__(
        self,
        *,
        env_name: str,
        cache: ArtifactCache,
        report: Reporter,
        progress: ProgressFactory,
        spec_override: Path | None = None,
    ) -> None:
        self._env_name, self._cache, self._report = env_name, cache, report
        self._progress, self._spec_override = progress, spec_override
        self._env: RealizedEnvironment | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="repro-submission-runs-")
        self._work = Path(self._tmp.name)

    def __enter__(self) -> RunMaker:
        return self

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()

    def spec_of(self, run_dir: Path, record: RunRecord) -> tuple[ExperimentSpec, Path]:
        """The spec the run replayed (its record keeps it), and the path it came from."""
        path = self._spec_override or Path(record.spec_path)
        if record.spec:
            return parse_spec(record.spec, source=str(run_dir)), path
        if not path.is_file():
            raise UsageError(
                f"{run_dir}: its spec {path} is not here, and the submission's runs need it",
                hint="give it with --spec, or run from the folder the run was made in",
            )
        return load_spec(path), path

    def _environment(self, spec: ExperimentSpec, path: Path) -> RealizedEnvironment:
        if self._env is None:
            self._env = realize(
                self._env_name, spec, path, self._cache.root / "envs", report=self._report
            )
        return self._env

    def make(self, run_dir: Path, record: RunRecord, scenario: str, name: str, plan: Plan) -> Made:
        """One performance run (`name`: performance, TEST01 or TEST04) of `scenario`."""
        _, path = self.spec_of(run_dir, record)
        env = self._environment(plan.spec, path)
        folder = Path(tempfile.mkdtemp(prefix=f"{scenario}-{name}-", dir=self._work))
        self._report(
            f"{scenario} {name}: a run with round seeds"
            + (" and LoadGen's audit.config" if name in AUDIT else "")
        )
        opts = ReplayOptions(
            scenarios=(scenario,),  # type: ignore[arg-type]
            modes=("performance",),
            min_duration_ms=plan.settings.get("min_duration_ms"),
            min_query_count=plan.settings.get("min_query_count"),
            max_duration_ms=plan.settings.get("max_duration_ms"),
            repeat=1,
            probes=False,
            run_path=folder / "run",
            run_id=name,
            audit_config=AUDIT.get(name),
        )
        session = ReplaySession.of(
            env, path, self._cache, report=self._report, progress=self._progress
        )
        _, rec = session.replayer(plan.spec, opts).run()
        tests = rec.performance(scenario)
        if not tests or tests[0].status == "failed":
            return Made(name, None, None, tests[0].error if tests else rec.message)
        return Made(name, tests[0], folder / "run" / tests[0].dir)
