"""The replay engine making the runs `repro submission` needs (`repro.mlperf.submission_runs`):
the spec's environment realized once, each run a session's replay into a temporary folder."""

from __future__ import annotations

import tempfile
from pathlib import Path

from repro.artifacts.cache import ArtifactCache
from repro.errors import UsageError
from repro.mlperf.compliance_tests import AUDIT
from repro.mlperf.submission_runs import Made, Plan, Reporter
from repro.replay.session import ReplaySession
from repro.replay.settings import ProgressFactory
from repro.runs.plan import ReplayPlan, loadgen_overrides
from repro.runs.record import RunRecord
from repro.spec.io import load_spec, parse_spec
from repro.spec.models import ExperimentSpec


class SessionRunMaker:
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
        self._session: ReplaySession | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="repro-submission-runs-")
        self._work = Path(self._tmp.name)

    def __enter__(self) -> SessionRunMaker:
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

    def _open(self, spec: ExperimentSpec, path: Path, plan: ReplayPlan) -> ReplaySession:
        """The spec's environment, realized once for every run the submission makes."""
        if self._session is None:
            self._session = ReplaySession.open(
                spec,
                path,
                plan,
                report=self._report,
                progress=self._progress,
                cache=self._cache,
            )
        return self._session

    def make(self, run_dir: Path, record: RunRecord, scenario: str, name: str, plan: Plan) -> Made:
        """One performance run (`name`: performance, TEST01 or TEST04) of `scenario`."""
        _, path = self.spec_of(run_dir, record)
        folder = Path(tempfile.mkdtemp(prefix=f"{scenario}-{name}-", dir=self._work))
        self._report(
            f"{scenario} {name}: a run with round seeds"
            + (" and LoadGen's audit.config" if name in AUDIT else "")
        )
        made = ReplayPlan(
            env=self._env_name,
            results_dir=self._work,
            scenarios=(scenario,),
            modes=("performance",),
            loadgen=loadgen_overrides(**plan.settings),
            repeat=1,
            probes=False,
            run_path=folder / "run",
            run_id=name,
            audit_config=AUDIT.get(name),
        )
        session = self._open(plan.spec, path, made)
        _, rec = session.replayer(plan.spec, made).run()
        tests = rec.performance(scenario)
        if not tests or tests[0].status == "failed":
            return Made(name, None, None, tests[0].error if tests else rec.message)
        return Made(name, tests[0], folder / "run" / tests[0].dir)
