"""Use case: a layer profile of an experiment, as a separate pass beside its measured tests.

`repro replay --profile` adds the pass to the run it makes; `repro profile SPEC` makes a run that
holds only a profile, or (`--into RUN`) adds one to a finished run, such as a stored original,
without touching its measured tests. The pass is one worker process
(`repro.harness.profiled_pass`); its folder is built under a hidden name and renamed, like a run.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from repro.atomic import folder_lock, write_text
from repro.backends.registry import backends_with_profilers, get_backend
from repro.errors import SpecError, UsageError
from repro.harness.request import WorkerRequest, WorkerResult
from repro.privacy import redact
from repro.profiles.model import Profile, read_profile
from repro.runs import layout
from repro.runs.commit import commit_run
from repro.runs.record import ProfileRecord, RunRecord
from repro.runs.store import digest_files, load_run
from repro.spec.io import spec_id
from repro.spec.models import ExperimentSpec, LoadGenSettings, ScenarioName

#: samples a profiled pass infers unless told (the CLI's default), and at most: onnxruntime's
#: profiler keeps 1,000,000 events, ~10 per sample of a small model
DEFAULT_SAMPLES = 64
MAX_SAMPLES = 100_000


def profile_settings(spec: ExperimentSpec, scenario: str, samples: int) -> LoadGenSettings:
    """The scenario's LoadGen settings cut to `samples` samples and no minimum duration."""
    sc = next((s for s in spec.workload.scenarios if s.scenario == scenario), None)
    if sc is None:
        raise UsageError(
            f"--scenario {scenario}: the spec {spec.name!r} has no such scenario; it has "
            f"{[s.scenario for s in spec.workload.scenarios]}"
        )
    queries = samples
    if scenario == "MultiStream":
        queries = math.ceil(samples / (sc.settings.multi_stream_samples_per_query or 8))
    cut: dict[str, float] = {
        "min_duration_ms": 0,
        "max_duration_ms": 0,
        "min_query_count": queries,
        "max_query_count": queries,
    }
    if scenario == "Offline":
        # one query; LoadGen sizes it from the expected rate and the duration, at least the count
        cut["offline_expected_qps"] = 1.0
    return sc.settings.changed(cut)


def check_profiler(spec: ExperimentSpec) -> None:
    """A backend without a layer profiler is refused before anything is built."""

    if get_backend(spec.backend.name).profiler is None:
        raise UsageError(
            f"backend {spec.backend.name!r} has no layer profiler in repro",
            hint=f"profile a spec of a backend that has one: {backends_with_profilers()}",
        )


def default_scenario(spec: ExperimentSpec, chosen: tuple[str, ...] = ()) -> ScenarioName:
    """SingleStream when the spec (or the chosen scenarios) has it: one sample per inference
    is what a layer table describes best; else the first."""
    names = [s.scenario for s in spec.workload.scenarios if not chosen or s.scenario in chosen]
    if not names:
        raise UsageError(
            f"--scenario {', '.join(chosen)}: the spec {spec.name!r} has no such scenario; it has "
            f"{[s.scenario for s in spec.workload.scenarios]}"
        )
    return "SingleStream" if "SingleStream" in names else names[0]


class ProfilePass:
    """Runs one profiled pass into a run folder and records what it found."""

    def __init__(
        self,
        spec: ExperimentSpec,
        *,
        request: Callable[[ScenarioName, LoadGenSettings, Path], WorkerRequest],
        run_worker: Callable[[Path, Path, str, float], int],
        scratch: Path,
    ) -> None:
        """`request`: the worker's request of a profiled pass of a scenario with these
        settings into a folder (the replay's engine makes it); `run_worker`: runs it."""
        self.spec = spec
        self.request = request
        self.run_worker = run_worker
        self.scratch = scratch

    def run(self, run: Path, scenario: ScenarioName, samples: int) -> ProfileRecord:
        """The pass into `run/profile/<Scenario>/` (which must not exist)."""
        rel = layout.profile_dir(scenario)
        return self._run_in(run / rel, rel, scenario, samples)

    def _run_in(
        self, out_dir: Path, rel: str, scenario: ScenarioName, samples: int
    ) -> ProfileRecord:
        out_dir.mkdir(parents=True)
        settings = profile_settings(self.spec, scenario, samples)
        req = self.request(scenario, settings, out_dir)
        req_path = self.scratch / f"profile-{scenario}.json"
        write_text(req_path, req.model_dump_json(indent=2))
        write_text(
            out_dir / layout.REQUEST_FILE,
            json.dumps(redact(req.model_dump(mode="json")), indent=2) + "\n",
        )
        # model loads, the pass, the overhead's 2 x 64 inferences, the profiler's trace
        seconds = 10.0 + 3 * samples * _per_sample_s(settings, scenario)
        rc = self.run_worker(req_path, out_dir, f"{scenario} profiled pass", seconds)
        return collect(out_dir, rel, scenario, samples, rc)

    def into(self, run: Path, scenario: ScenarioName, samples: int) -> ProfileRecord:
        """The pass added to a finished run: built beside it, then swapped in with run.json
        updated (the profile and the digests of its files; the rest of the record is left as
        it was). A pass that fails leaves the run as it was; one pass at a time per run."""

        with folder_lock(
            run,
            busy=f"{run}: another `repro profile --into` is adding to this run",
            hint="wait for it to finish, then run again",
        ):
            record = check_into(run, spec_id(self.spec))
            rel = layout.profile_dir(scenario)
            work = run / layout.PROFILE_FOLDER / f".{scenario}.partial"
            _remove(work)  # a pass killed before it finished
            try:
                found = self._run_in(work, rel, scenario, samples)
            except BaseException:
                _remove(work)
                raise
            if found.status != "complete":
                _remove(work)  # the run keeps its profile; the error says what happened
                return found
            final = run / rel
            old = run / layout.PROFILE_FOLDER / f".{scenario}.old"
            _remove(old)  # left by a pass killed while swapping
            updated = record.model_copy(deep=True)
            updated.profiles = [p for p in record.profiles if p.scenario != scenario] + [found]
            prefix = rel + "/"
            kept = {k: v for k, v in record.files_sha256.items() if not k.startswith(prefix)}
            updated.files_sha256 = kept | {f"{rel}/{k}": v for k, v in digest_files(work).items()}
            had_one = final.exists()
            if had_one:
                final.replace(old)
            work.replace(final)
            try:
                commit_run(run, updated)
            except BaseException:
                # the record could not follow: put the run back as it was
                final.replace(work)
                if had_one:
                    old.replace(final)
                _remove(work)
                raise
            _remove(old)
            return found


def _remove(path: Path) -> None:
    """A leftover folder or file, if any."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


def check_into(run: Path, spec_id: str) -> RunRecord:
    """The record of a finished run of the spec `spec_id`, or a SpecError saying why not."""

    if layout.is_partial(run):
        raise UsageError(f"{run}: a run still being built (or abandoned); profile a finished run")
    record = load_run(run)
    if record.status not in ("complete", "invalid"):
        raise UsageError(
            f"{run}: the run is {record.status}; a profile is added to a finished run",
            hint="replay again, or profile into another run of the spec",
        )
    if record.spec_id != spec_id:
        raise SpecError(
            f"{run}: the run was made from another spec (spec id {record.spec_id[:12]}, "
            f"this spec's {spec_id[:12]})",
            hint="profile into a run of this spec, or give the run's own spec",
        )
    return record


def _per_sample_s(settings: LoadGenSettings, scenario: str) -> float:
    if scenario == "SingleStream":
        return (settings.single_stream_expected_latency_ns or 0) / 1e9
    if scenario == "MultiStream":
        spq = settings.multi_stream_samples_per_query or 8
        return (settings.multi_stream_expected_latency_ns or 0) / 1e9 / spq
    return 0.0


def collect(out_dir: Path, rel: str, scenario: str, samples: int, rc: int) -> ProfileRecord:
    """What the worker of a profiled pass left: its profile, or why there is none."""
    base: dict[str, Any] = {"scenario": scenario, "dir": rel, "samples_requested": samples}
    result_path = out_dir / layout.WORKER_RESULT
    if not result_path.is_file():
        log = out_dir / layout.WORKER_LOG
        tail = log.read_text(errors="replace")[-1500:] if log.is_file() else ""
        return ProfileRecord(
            **base, status="failed", error=f"worker exited with {rc} and wrote no result: {tail}"
        )
    try:
        result = WorkerResult.model_validate_json(result_path.read_text(errors="replace"))
    except ValueError as exc:
        return ProfileRecord(**base, status="failed", error=f"{result_path}: damaged: {exc}")
    if result.status == "failed":
        return ProfileRecord(**base, status="failed", error=result.error)
    try:
        profile = read_profile(out_dir / layout.PROFILE_FILE)
    except SpecError as exc:
        return ProfileRecord(**base, status="failed", error=exc.message)
    return record_of(profile, base)


def record_of(profile: Profile, base: dict[str, Any]) -> ProfileRecord:
    return ProfileRecord(
        **base,
        status="complete",
        profiler=profile.profiler,
        layers=len(profile.rows),
        inferences=profile.inferences,
        samples=profile.samples,
        overhead_rel=profile.overhead.rel if profile.overhead else None,
    )
