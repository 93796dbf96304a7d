"""The replay engine: an experiment spec replayed with LoadGen, one worker process per test
(the accuracy tests scored by `repro.replay.scoring`)."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from repro import __version__
from repro.artifacts.cache import ArtifactCache
from repro.artifacts.fetching import fetch_all
from repro.atomic import write_text
from repro.backends.registry import get_backend
from repro.environments.base import RealizedEnvironment
from repro.errors import Interrupted, RunError, SpecError, UsageError
from repro.estimates import (
    Estimate,
    Fixed,
    Measured,
    PlannedTest,
    Snapshot,
    plan_estimate,
)
from repro.forecast import WorkerForecast
from repro.formats.served.endpoints import write_run as write_endpoints
from repro.harness.gate import done_file, gate_name
from repro.harness.request import WorkerRequest
from repro.harness.runner import ProcessRunner, WorkerRunner
from repro.privacy import redact
from repro.probes import PROBES_VERSION, ProbeSet
from repro.probes.gpu import gpu_probe_for
from repro.profiling import ProfilePass, default_scenario
from repro.replay.collect import collect_test
from repro.replay.scoring import Scorer
from repro.replay.server import ServedSide
from repro.replay.settings import (
    ProbeSource,
    ProgressFactory,
    Reporter,
    new_run_id,
    planned_test,
    scenario_settings,
    selected,
    utc_now,
)
from repro.replay.worker_end import (
    KILLED_STATUSES,
    WorkerKilled,
)
from repro.runs import layout
from repro.runs.commit import commit_run
from repro.runs.plan import ReplayPlan
from repro.runs.record import ProfileRecord, RunRecord, SettingChange, TestRecord
from repro.runs.store import digest_files
from repro.signals import interruptible
from repro.spec.io import spec_id
from repro.spec.models import ExperimentSpec, LoadGenSettings, ModeName, ScenarioName
from repro.stats.verdicts import run_status
from repro.validate import check_contents

#: how a later test of a replay says where its sized query came from
EARLIER = "as an earlier test of this run needed: "


def _as_earlier(why: str) -> str:
    return why if why.startswith(EARLIER) else EARLIER + why


class Replayer:
    """Runs the tests of one replay, round by round, and assembles its run record.

    A round runs every selected performance test once (and, in the first round, each accuracy
    test): repeats are spread over the replay's whole duration instead of back to back, so a
    phase of the machine lands on all scenarios alike. A machine probe is measured before the
    first test and after every test.

    `run()` does it all; `begin()`, `run_round(k)` and `finish()` let a caller interleave two
    replays (`--against`) or stop once the verdict is decided (`--until-decided`).
    """

    def __init__(
        self,
        spec: ExperimentSpec,
        spec_path: Path,
        env: RealizedEnvironment,
        *,
        cache: ArtifactCache,
        plan: ReplayPlan,
        report: Reporter,
        progress: ProgressFactory,
        runner: WorkerRunner | None = None,
        probes: ProbeSource | None = None,
    ) -> None:
        self.spec = spec
        self.runner: WorkerRunner = runner or ProcessRunner()
        self.spec_id = spec_id(spec)
        self.spec_path = spec_path
        self.env = env
        self.cache = cache
        self.plan = plan
        self.report = report
        self.progress = progress
        self.probes = probes
        if probes is None and plan.probes:
            plugin = get_backend(spec.backend.name)
            self.probes = ProbeSet(
                plugin.threads(spec.backend.options),
                count_others=env.workers_are_children,
                gpu=gpu_probe_for(plugin.device(spec.backend.options)),
            )
        self.artifacts: dict[str, Path] = {}
        self.pairs = selected(spec, plan)
        self._scoring: Scorer | None = None
        self._work: Path | None = None
        self._final: Path | None = None
        self._record: RunRecord | None = None
        #: a served experiment's server (None: the model runs in the worker)
        self._served: ServedSide | None = None
        self._probe: dict[str, Any] | None = None
        self._t0 = 0.0
        self._killed: str | None = None  # why the run stops: a worker killed from outside
        #: what this machine measured in this replay: the estimates of the waits come from it
        self.measured = Measured()
        self._whole = False  # run() runs every round: the rest of the replay is known
        self._cpus: list[int] | None = None
        self._gates: Path | None = None
        #: settings an earlier test of this replay needed on this machine, by (scenario, mode);
        #: the two sides of paired rounds share one (`share_sizing`)
        self._sized: dict[tuple[str, str], dict[str, SettingChange]] = {}

    def placed(self, *, cpus: Sequence[int] | None, gates: Path | None = None) -> None:
        """Where the next tests run: pinned to `cpus` (None: anywhere), and with `gates` (a duet
        round's folder) each waiting at its gate there to start with the other side's
        (`repro.duet`)."""
        self._cpus = list(cpus) if cpus else None
        self._gates = gates
        if gates is not None:
            gates.mkdir(parents=True, exist_ok=True)

    def share_sizing(self, other: Replayer) -> None:
        """Run with the settings `other`'s tests needed, and it with this one's: a query one
        side sized for this machine is the other's too from the next test on, so that paired
        rounds run the same settings (a round that did not is left out of the comparison:
        `repro.compare.pairing`)."""
        self._sized = other._sized

    def shares_sizing_with(self, other: Replayer) -> bool:
        """Whether the two run the same sized queries (`share_sizing`)."""
        return self._sized is other._sized

    @property
    def work_dir(self) -> Path:
        """Where the run is being built (its partial name until `finish`)."""
        assert self._work is not None, "begin() first"
        return self._work

    @property
    def started(self) -> bool:
        """`begin()` made the run's folder and record (and `finish()` has yet to be called)."""
        return self._record is not None and self._work is not None and self._work.exists()

    @property
    def record(self) -> RunRecord:
        """The run record as far as it got."""
        assert self._record is not None, "begin() first"
        return self._record

    def run(self) -> tuple[Path, RunRecord]:
        """Every round of the replay; an interruption leaves a run marked interrupted."""
        self._whole = True
        with interruptible():
            self.begin()
            try:
                for k in range(1, self.plan.repeat + 1):
                    self.run_round(k)
                if self.plan.profile:
                    scenario = self.plan.profile_scenario or default_scenario(
                        self.spec, self.plan.scenarios
                    )
                    self.run_profile(scenario, self.plan.profile_samples)
            except WorkerKilled as exc:
                final, _ = self.finish(interrupted=True, reraise=False, message=exc.message)
                raise RunError(
                    f"{exc.message}; the run is marked interrupted: {final}",
                    hint="replay again (with more memory, if it ran out); a killed worker's test "
                    "is never counted",
                ) from None
            except (KeyboardInterrupt, Interrupted):
                return self.finish(interrupted=True)
            except BaseException as exc:
                # a full disk may refuse run.json too: the error that stopped the run is the
                # one to report (the folder keeps its .partial name: never taken for a run)
                with contextlib.suppress(OSError):
                    self.finish(
                        interrupted=True, reraise=False, message=f"stopped by an error: {exc}"
                    )
                raise
        return self.finish()

    def fetch(self) -> None:
        """Fetch and verify the artifacts (their paths in `artifacts`)."""
        self.artifacts = {
            name: m.path
            for name, m in fetch_all(
                self.spec, self.spec_path, cache=self.cache, progress=self.report
            ).items()
        }

    def _scorer(self) -> Scorer:
        """The accuracy tests' scorer, made once the artifacts are fetched."""
        if self._scoring is None:
            self._scoring = Scorer(self.spec, self.artifacts)
        return self._scoring

    def prepare(self) -> None:
        """Fetch and verify the artifacts, check that the spec's names are in the data set;
        a scratch folder for the workers' requests."""
        self.fetch()
        self._check_contents()
        self._scratch = Path(tempfile.mkdtemp(prefix="repro-requests-"))

    def _check_contents(self) -> None:
        """The names the workload gives are the model's and the data set's, and the data set
        holds its samples: a spec that names what is not there is refused before any test
        (the same check as capture's, from the model's graph and the .npz headers)."""

        problems = check_contents(self.spec, self.artifacts)
        if problems:
            lines = "\n".join(f"  {p.where}: {p.message}" for p in problems)
            first = problems[0]
            raise SpecError(
                f"{self.spec_path}: {first.where}: {first.message}"
                if len(problems) == 1
                else f"{self.spec_path}: the spec names what its artifacts lack:\n{lines}"
            )

    def begin(self) -> None:
        """Fetch and verify the artifacts, create the run directory, fingerprint, first probe."""
        spec, plan = self.spec, self.plan
        run_id = plan.run_id or new_run_id()
        if plan.run_path is not None:
            final = plan.run_path
            work = layout.partial_of(final)
        else:
            final = layout.run_dir(plan.results_dir, spec.name, run_id)
            work = layout.partial_dir(plan.results_dir, spec.name, run_id)
        for scenario in {sc for sc, _ in self.pairs}:  # the overrides, before a folder exists
            scenario_settings(spec, scenario, plan)
        if final.exists():
            raise UsageError(f"{final} already exists; choose another run id")
        if work.exists():
            raise UsageError(
                f"{work} exists: a replay with run id {run_id!r} is running, or was killed "
                "before it could finish",
                hint=f"choose another --run-id, or delete the leftover (`rm -r {work}`)",
            )
        made = [p for p in work.parents if not p.exists()]  # the folders this replay makes
        try:
            work.parent.mkdir(parents=True, exist_ok=True)
            try:
                work.mkdir()  # taken here, before anything else: two replays of one id race
            except FileNotFoundError:  # another replay's failure just removed the parent
                work.parent.mkdir(parents=True, exist_ok=True)
                work.mkdir()
        except FileExistsError:
            raise UsageError(
                f"{work} exists: another replay with run id {run_id!r} started at the same time",
                hint="give each replay its own --run-id (or none: each gets a new one)",
            ) from None
        try:
            self.prepare()
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)  # nothing ran: no run left behind
            for folder in made:  # nor the folders made for it, where nothing else came since
                with contextlib.suppress(OSError):
                    folder.rmdir()
            raise
        self._work, self._final = work, final
        self._record = RunRecord(
            run_id=run_id,
            spec_name=spec.name,
            spec_id=self.spec_id,
            spec_path=str(self.spec_path),
            status="interrupted",
            started_utc=utc_now(),
            repro_version=__version__,
            spec=spec.model_dump(mode="json", by_alias=True, exclude_none=True),
            tolerances=spec.tolerances,
            environment={
                "manager": self.env.manager,
                "reason": self.env.reason,
                **self.env.details,
            },
            overrides=plan.override_map(),
            probes_version=PROBES_VERSION if self.probes is not None else None,
        )
        self._t0 = time.monotonic()
        try:
            self._record.fingerprint = self.runner.fingerprint(self.env)
            if spec.server is not None:
                packages = self._record.fingerprint.get("packages") or {}
                self._served = ServedSide(spec, self.env, self.artifacts, packages, self.report)
                if isinstance(self.probes, ProbeSet):  # the server's CPU is the experiment's
                    self.probes.also_own = self._served.cpu_seconds
            self._probe = self._measure()
        except BaseException:
            self.finish(interrupted=True, reraise=False)
            raise

    def run_round(self, k: int, only: Collection[str] | None = None) -> list[TestRecord]:
        """Round k: each performance test once more (of the scenarios in `only`, when given),
        and the accuracy tests in round 1."""
        assert self._work is not None, "begin() first"
        if self._served is not None:  # before round k's first test: started, or anew
            self._served.start(self._work, k)
        done = []
        for scenario, mode in self.pairs:
            if (mode == "accuracy" and k > 1) or (only is not None and scenario not in only):
                continue
            t = time.monotonic()
            test, wait_s = self._run_test(self._work, scenario, mode, k, self.plan.repeat)
            if self._served is not None:
                self._served.check()
            test.probe_before, test.probe_after = self._probe, self._measure()
            self.measured.between_s.append(max(time.monotonic() - t - wait_s, 0.0))
            self._probe = test.probe_after
            self.record.tests.append(test)
            done.append(test)
            if self._killed is not None:
                raise WorkerKilled(self._killed)
        return done

    def run_profile(self, scenario: ScenarioName, samples: int) -> ProfileRecord:
        """A profiled pass into this run (after its tests; never measured)."""
        found = self.profile_pass().run(self.work_dir, scenario, samples)
        self.record.profiles.append(found)
        return found

    def profile_into(self, run: Path, scenario: ScenarioName, samples: int) -> ProfileRecord:
        """A profiled pass added to the finished run `run` (of this spec)."""
        self.prepare()
        try:
            return self.profile_pass().into(run, scenario, samples)
        finally:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def profile_pass(self) -> ProfilePass:
        return ProfilePass(
            self.spec,
            request=lambda scenario, settings, out_dir: self._worker_request(
                scenario, "performance", settings, out_dir, profile=True
            ),
            run_worker=self._run_worker,
            scratch=self._scratch,
        )

    def _run_worker(self, req_path: Path, out_dir: Path, label: str, seconds: float) -> int:
        guess = Estimate(seconds, "a guess from the spec's expected latency")
        with self.progress(label, Fixed(Snapshot(guess))):
            return self.runner.run(
                self.env, req_path, out_dir, timeout_s=self.plan.worker_timeout_s
            )

    def finish(
        self, *, interrupted: bool = False, reraise: bool = True, message: str | None = None
    ) -> tuple[Path, RunRecord]:
        """Write run.json and give the run its final name; an interrupted run says so and
        raises KeyboardInterrupt (unless `reraise` is false)."""
        record, work, final = self.record, self._work, self._final
        assert work is not None
        assert final is not None
        if self._served is not None:  # stopped whatever ended the run, its log kept
            self._served.stop()
            record.server = self._served.recorded()
            if not interrupted:  # its results in MLCommons endpoints' layout too
                write_endpoints(work, record, f"repro {__version__}")
        if interrupted:
            record.status = "interrupted"
            record.message = message or "stopped by a signal before all tests finished"
        elif not record.tests and record.profiles:
            # a run that holds only a profile is as complete as its profiled pass
            ok = all(p.status == "complete" for p in record.profiles)
            record.status = "complete" if ok else "failed"
        else:
            record.status = run_status(t.status for t in record.tests)
        record.finished_utc = utc_now()
        record.duration_s = round(time.monotonic() - self._t0, 3)
        record.files_sha256 = digest_files(work)
        commit_run(work, record, final=final)
        shutil.rmtree(self._scratch, ignore_errors=True)
        if interrupted and reraise:
            self.report(f"the run is kept, marked interrupted: {final}")
            raise KeyboardInterrupt
        return final, record

    def _measure(self) -> dict[str, Any] | None:
        return self.probes.measure().as_dict() if self.probes is not None else None

    def _worker_request(
        self,
        scenario: ScenarioName,
        mode: ModeName,
        settings: LoadGenSettings,
        out_dir: Path,
        *,
        profile: bool = False,
    ) -> WorkerRequest:
        """The worker's request of one test (or a profiled pass): the only place a replay's
        worker request is made."""
        return WorkerRequest.from_spec(
            self.spec,
            spec_id=self.spec_id,
            scenario=scenario,
            mode=mode,
            settings=settings,
            artifacts=self.artifacts,
            cache_root=self.cache.root,
            output_dir=out_dir,
            audit_config=None if profile else self.plan.audit_config,
            profile=profile,
        )

    def _request(self, scenario: ScenarioName, mode: ModeName, out_dir: Path) -> WorkerRequest:
        settings = scenario_settings(self.spec, scenario, self.plan)
        req = self._worker_request(scenario, mode, settings, out_dir)
        if self._served is not None:
            req = req.model_copy(update={"served": self._served.target()})
        # a query sized for this machine by an earlier test: later ones start from it, rather
        # than each running the spec's too short one first
        sized = self._sized.get((scenario, mode))
        if self.plan.short_test_ms is not None:  # a short test asked for: bounded by it
            req = req.model_copy(update={"short_test_ms": self.plan.short_test_ms})
        return req if sized is None else req.model_copy(update={"changed_settings": dict(sized)})

    def _run_test(
        self, work: Path, scenario: ScenarioName, mode: ModeName, k: int, repeats: int
    ) -> tuple[TestRecord, float]:
        """The test, and the seconds its worker took."""
        rel = layout.test_dir(scenario, mode, k)
        out_dir = work / rel
        out_dir.mkdir(parents=True)
        req = self._request(scenario, mode, out_dir)
        gate = self._gates / gate_name(k, scenario, mode) if self._gates is not None else None
        if self._cpus is not None or gate is not None:
            req = req.model_copy(
                update={"cpus": self._cpus, "start_gate": str(gate) if gate else None}
            )
        # The worker reads the request from a private scratch file; the run keeps a copy with
        # the home directory redacted (the cache lives there).
        req_path = self._scratch / f"{rel.replace('/', '-')}.json"
        write_text(req_path, req.model_dump_json(indent=2))
        write_text(
            out_dir / layout.REQUEST_FILE,
            json.dumps(redact(req.model_dump(mode="json")), indent=2) + "\n",
        )
        label = f"{scenario} {mode}" + (
            f" {k}/{repeats}" if repeats > 1 and mode == "performance" else ""
        )
        shown = label  # the progress's: where the replay is, while no rate says how long
        if self._whole:
            order = self._order()
            shown += f" (test {order.index((k, scenario, mode)) + 1} of {len(order)})"
        plan = planned_test(req)
        rest = self._rest_after(k, scenario, mode, plan)
        forecast = WorkerForecast(plan, self.measured, out_dir / layout.PROGRESS_FILE, rest)
        try:
            with self.progress(shown, forecast):
                rc = self.runner.run(
                    self.env, req_path, out_dir, timeout_s=self.plan.worker_timeout_s
                )
        finally:
            forecast.ended()
            if gate is not None:  # a partner waiting at its gate need not wait for this one
                done_file(gate).write_text(str(time.time()))
        if rc in KILLED_STATUSES and not (out_dir / layout.WORKER_RESULT).is_file():
            sigkill = " (SIGKILL: the out-of-memory killer, a memory limit, or kill -9)"
            self._killed = f"the worker of {label} was killed (exit {rc}) before it finished" + (
                sigkill if rc in (-9, 137) else ""
            )
        test = self._collect(req, rel, out_dir, rc, k)
        if test.changed_settings != req.changed_settings:
            for name, change in test.changed_settings.items():
                self.report(f"{label}: {name} {change.spec:g} -> {change.used:g}: {change.why}")
        if test.changed_settings and test.status in ("valid", "invalid"):
            sized = self._sized.setdefault((scenario, mode), {})
            for name, change in test.changed_settings.items():
                known = sized.get(name)
                # the larger query: what the faster side needed holds the slower one too
                if known is None or change.used > known.used:
                    sized[name] = change.model_copy(update={"why": _as_earlier(change.why)})
        if test.status in ("valid", "invalid"):
            forecast.learn(test.timings_s, test.metrics)
        return test, forecast.wall_s or 0.0

    def _rest_after(
        self, k: int, scenario: ScenarioName, mode: ModeName, plan: PlannedTest
    ) -> Estimate | None:
        """What the replay still runs after this test (`run()` only: rounds driven from
        outside, `--against` or `--until-decided`, are not the replay's to know)."""
        if not self._whole:
            return None
        order = self._order()
        after = order[order.index((k, scenario, mode)) + 1 :]
        settings = {sc: scenario_settings(self.spec, sc, self.plan) for sc, _ in self.pairs}
        plans = [
            PlannedTest(sc, m, settings[sc], plan.total, plan.batch, short=plan.short)
            for _, sc, m in after
        ]
        return plan_estimate(plans, self.measured)

    def _order(self) -> list[tuple[int, ScenarioName, ModeName]]:
        """The tests `run()` runs, in order: (repeat, scenario, mode)."""
        return [
            (r, sc, m)
            for r in range(1, self.plan.repeat + 1)
            for sc, m in self.pairs
            if m == "performance" or r == 1
        ]

    def _collect(self, req: WorkerRequest, rel: str, out_dir: Path, rc: int, k: int) -> TestRecord:
        return collect_test(
            req,
            out_dir,
            rc,
            rel=rel,
            repeat=k,
            scorer=self._scorer(),
            spec_path=self.spec_path,
            compliance=self.plan.audit_config is not None,
        )
