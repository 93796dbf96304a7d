"""Use case: a replay dispatched as parts (`repro replay --on local|slurm`), and its resumption
(`repro replay --resume RUN`)."""

from __future__ import annotations

import datetime as dt
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from repro import __version__
from repro.artifacts.cache import ArtifactCache
from repro.atomic import atomic_write_text
from repro.dispatch.executors import ACTIVE, WAITING, Executor, PartState
from repro.dispatch.gather import gather
from repro.dispatch.plan import PLAN_FILE, DispatchPlan, read_plan
from repro.errors import UsageError
from repro.fetching import fetch_all
from repro.privacy import redact_text
from repro.replay import Interrupted, ReplayOptions, interruptible, new_run_id
from repro.runs import layout
from repro.runs.record import RunRecord
from repro.runs.store import digest_files, load_run
from repro.spec.io import spec_id
from repro.spec.models import ExperimentSpec

Reporter = Callable[[str], None]
#: seconds between two looks at the parts
POLL_S = 1.0
#: how long a cancellation may take before the run is gathered anyway
CANCEL_WAIT_S = 60.0


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _plan(
    spec: ExperimentSpec,
    spec_path: Path,
    opts: ReplayOptions,
    *,
    run_id: str,
    work: Path,
    env_name: str,
    cache: ArtifactCache,
    executor: str,
    slurm: Any,
) -> DispatchPlan:
    options = {
        k: ({m: str(p) for m, p in v.items()} if k == "mounts" else v)
        for k, v in opts.env_options.items()
    }
    return DispatchPlan(
        run_id=run_id,
        run_dir=str(work.absolute()),
        spec_path=str(spec_path.absolute()),
        spec=spec.model_dump(mode="json", by_alias=True, exclude_none=True),
        env=env_name,
        env_options=options,
        cache_dir=str(cache.root.absolute()),
        scenarios=list(opts.scenarios),
        modes=list(opts.modes),
        min_duration_ms=opts.min_duration_ms,
        min_query_count=opts.min_query_count,
        max_duration_ms=opts.max_duration_ms,
        probes=opts.probes,
        parts=opts.repeat,
        executor=executor,
        slurm=slurm,
        python=[sys.executable],
    )


def dispatch(
    spec: ExperimentSpec,
    spec_path: Path,
    opts: ReplayOptions,
    *,
    env_name: str,
    cache: ArtifactCache,
    executor: Executor,
    warm_up: Callable[[], Any],
    report: Reporter,
    slurm: Any = None,
) -> tuple[Path, RunRecord]:
    """Every part of a new run, gathered; `warm_up` realizes the environment once here so that
    parts on other nodes find it built in the shared cache."""
    run_id = opts.run_id or new_run_id()
    final = layout.run_dir(opts.results_dir, spec.name, run_id)
    work = layout.partial_dir(opts.results_dir, spec.name, run_id)
    for path in (final, work):
        if path.exists():
            raise UsageError(f"{path} already exists; choose another --run-id")
    fetch_all(spec, spec_path, cache=cache, progress=report)
    warm_up()
    work.mkdir(parents=True)
    plan = _plan(
        spec, spec_path, opts, run_id=run_id, work=work, env_name=env_name, cache=cache,
        executor=executor.name, slurm=slurm,
    )  # fmt: skip
    record = RunRecord(
        run_id=run_id,
        spec_name=spec.name,
        spec_id=spec_id(spec),
        spec_path=str(spec_path),
        status="interrupted",
        started_utc=_utc_now(),
        repro_version=__version__,
        spec=plan.spec,
        tolerances=spec.tolerances,
        overrides={
            k: v
            for k, v in {
                "scenarios": list(opts.scenarios),
                "modes": list(opts.modes),
                "min_duration_ms": opts.min_duration_ms,
                "min_query_count": opts.min_query_count,
                "max_duration_ms": opts.max_duration_ms,
                "repeat": opts.repeat,
                "on": executor.name,
                **opts.overrides,
            }.items()
            if v not in (None, [], {})
        },
    )
    return _run_parts(plan, record, list(range(plan.parts)), executor, work, final, report)


def resume(
    run: Path, executor_for: Callable[[DispatchPlan], Executor], report: Reporter
) -> tuple[Path, RunRecord]:
    """The parts of a dispatched run that did not finish, run again and gathered with the rest."""
    record = load_run(run)
    if record.dispatch is None or not record.parts:
        raise UsageError(
            f"{run}: not a dispatched run (it was not replayed with --on)",
            hint="--resume continues a `repro replay --on local|slurm` run that did not finish",
        )
    todo = [p.index for p in record.parts if p.status not in ("complete", "invalid")]
    if not todo:
        raise UsageError(f"{run}: every part finished; nothing to resume")
    work = run.parent / f".{run.name}.partial"
    if work.exists():
        raise UsageError(
            f"{work} exists: this run is being resumed, or a resume was killed",
            hint=f"wait for it, or delete the leftover (`rm -r {work}`) and resume again",
        )
    saved = read_plan(run / "dispatch" / PLAN_FILE)
    run.replace(work)
    plan = saved.model_copy(update={"run_dir": str(work.absolute())})
    for index in todo:
        for leftover in (plan.part_dir(index), plan.part_dir(index).parent / f".{index}.partial"):
            shutil.rmtree(leftover, ignore_errors=True)
    report(f"resuming {len(todo)} part(s) of {plan.parts}: {todo}")
    return _run_parts(plan, record, todo, executor_for(plan), work, run, report)


def _run_parts(
    plan: DispatchPlan,
    record: RunRecord,
    indices: list[int],
    executor: Executor,
    work: Path,
    final: Path,
    report: Reporter,
) -> tuple[Path, RunRecord]:
    plan_path = plan.write()
    t0 = time.monotonic()
    interrupted = False
    states: dict[int, PartState] = {}
    jobs = list((record.dispatch or {}).get("jobs", []))
    with interruptible():
        try:
            jobs.append(executor.submit(plan, plan_path, indices))
            report(f"submitted {len(indices)} part(s) to {executor.name} (job {jobs[-1]})")
            states = _wait(executor, indices, report)
        except (KeyboardInterrupt, Interrupted):
            interrupted = True
            report("interrupted: cancelling the parts that have not finished")
            states = _cancel(executor, indices)
    previous = {p.index: p for p in record.parts}
    # parts done in an earlier attempt keep their record; gather reads them from their folders
    all_states = {
        i: (
            states[i]
            if i in states
            else PartState(previous[i].state or "COMPLETED", previous[i].node, previous[i].job_id)
        )
        for i in range(plan.parts)
        if i in states or i in previous
    }
    gathered = gather(plan, all_states, record, interrupted=interrupted)
    gathered.dispatch = {
        "executor": executor.name,
        "jobs": jobs,
        "plan": plan.redacted() | {"run_dir": str(final)},
    }
    gathered.finished_utc = _utc_now()
    gathered.duration_s = round((record.duration_s or 0) + time.monotonic() - t0, 3)
    atomic_write_text(plan_path, _json(gathered.dispatch["plan"]))
    _redact_folder(plan.dispatch_dir())
    gathered.files_sha256 = digest_files(work)
    atomic_write_text(layout.record_file(work), gathered.dump())
    work.replace(final)
    if interrupted:
        raise KeyboardInterrupt
    return final, gathered


def _wait(executor: Executor, indices: list[int], report: Reporter) -> dict[int, PartState]:
    """Until no part is pending or running; a line each time the counts change."""
    shown = ""
    while True:
        states = executor.poll()
        counts = Counter(_phase(states.get(i)) for i in indices)
        line = ", ".join(f"{n} {phase}" for phase, n in sorted(counts.items()))
        if line != shown:
            report(f"parts: {line}")
            shown = line
        if counts.get("pending", 0) + counts.get("running", 0) == 0:
            return states
        time.sleep(POLL_S)


def _cancel(executor: Executor, indices: list[int]) -> dict[int, PartState]:
    """Cancel, then wait (bounded) for the parts to leave the queue."""
    executor.cancel()
    deadline = time.monotonic() + CANCEL_WAIT_S
    states = executor.poll()
    while time.monotonic() < deadline:
        if all(_phase(states.get(i)) == "ended" for i in indices):
            break
        time.sleep(POLL_S)
        states = executor.poll()
    return states


def _phase(state: PartState | None) -> str:
    if state is None or state.state in WAITING:
        return "pending"
    if state.state in ACTIVE:
        return "running"
    return "ended"


def _redact_folder(folder: Path) -> None:
    """The batch script and the parts' output, with the home directory redacted."""
    for path in folder.iterdir():
        if path.is_file() and path.name != PLAN_FILE:
            text = path.read_text(errors="replace")
            redacted = redact_text(text)
            if redacted != text:
                atomic_write_text(path, redacted)


def _json(doc: dict[str, Any]) -> str:
    import json

    return json.dumps(doc, indent=2) + "\n"
