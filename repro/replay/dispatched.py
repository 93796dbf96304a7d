"""Use case: a replay dispatched as parts (`repro replay --on EXECUTOR`), and its resumption
(`repro replay --resume RUN`).

The run is built under its hidden partial name, as every run is. A provisional run.json (status
interrupted, the job ids) is written there as soon as the parts are submitted, so that a
replay killed outright (SIGKILL, a lost login session) can still be found and resumed; every
other way out (done, Ctrl-C, SIGTERM, an error) cancels what is still running, gathers the
parts and gives the run its final name.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from repro import __version__
from repro.artifacts.cache import ArtifactCache
from repro.artifacts.fetching import fetch_all
from repro.atomic import atomic_write_text, folder_lock
from repro.dispatch.executors.base import FINISHED_UNWATCHED, Executor, PartState
from repro.dispatch.executors.registry import get_executor
from repro.dispatch.gather import gather, part_record
from repro.dispatch.plan import DispatchPlan, read_plan
from repro.errors import Interrupted, RunError, SpecError, UsageError
from repro.privacy import redact, redact_text
from repro.replay.settings import new_run_id, utc_now
from repro.runs import layout
from repro.runs.commit import commit_run
from repro.runs.plan import ReplayPlan
from repro.runs.record import DispatchRecord, RunRecord
from repro.runs.store import digest_files, load_run
from repro.signals import interruptible
from repro.spec.io import spec_id
from repro.spec.models import ExperimentSpec

Reporter = Callable[[str], None]
#: seconds between two looks at the parts
POLL_S = 1.0
#: how long a cancellation may take before the run is gathered anyway
CANCEL_WAIT_S = 60.0
#: how long a part the executor says completed may take to show its run.json (a network file
#: system's attribute cache)
VISIBLE_WAIT_S = 10.0


class DispatchInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM: the parts were cancelled and the run gathered, marked interrupted."""

    def __init__(self, final: Path, record: RunRecord) -> None:
        super().__init__()
        self.final = final
        self.record = record


def _plan(
    spec: ExperimentSpec,
    spec_path: Path,
    replay: ReplayPlan,
    *,
    run_id: str,
    work: Path,
    cache: ArtifactCache,
    executor: Executor,
    given: Mapping[str, Any],
) -> DispatchPlan:
    return DispatchPlan(
        run_id=run_id,
        run_dir=str(work.absolute()),
        spec_path=str(spec_path.absolute()),
        spec=spec.model_dump(mode="json", by_alias=True, exclude_none=True),
        replay=replay.but(
            results_dir=replay.results_dir.absolute(), cache_dir=cache.root.absolute()
        ),
        given=dict(given),
        parts=replay.repeat,
        executor=executor.name,
        executor_options=executor.options.model_dump(mode="json"),
        python=[sys.executable],
    )


def dispatch(
    spec: ExperimentSpec,
    spec_path: Path,
    replay: ReplayPlan,
    *,
    cache: ArtifactCache,
    executor: Executor,
    warm_up: Callable[[], Any],
    report: Reporter,
    given: Mapping[str, Any] | None = None,
) -> tuple[Path, RunRecord]:
    """Every part of a new run, gathered; `warm_up` realizes the environment once here so that
    parts on other nodes find it built in the shared cache. The executor carries its own
    options into the plan; `given`: what a package gives the environment."""
    run_id = replay.run_id or new_run_id()
    final = layout.run_dir(replay.results_dir, spec.name, run_id)
    work = layout.partial_of(final)
    for path in (final, work):
        if path.exists():
            raise UsageError(f"{path} already exists; choose another --run-id")
    fetch_all(spec, spec_path, cache=cache, progress=report)
    warm_up()
    work.mkdir(parents=True)
    plan = _plan(
        spec,
        spec_path,
        replay,
        run_id=run_id,
        work=work,
        cache=cache,
        executor=executor,
        given=given or {},
    )
    record = RunRecord(
        run_id=run_id,
        spec_name=spec.name,
        spec_id=spec_id(spec),
        spec_path=str(spec_path),
        status="interrupted",
        started_utc=utc_now(),
        repro_version=__version__,
        spec=plan.spec,
        tolerances=spec.tolerances,
        overrides=replay.override_map(on=executor.name),
        dispatch=DispatchRecord(executor=executor.name),
    )
    with folder_lock(work, busy=f"{work}: being dispatched", hint="choose another --run-id"):
        return _run_parts(
            plan,
            record,
            list(range(plan.parts)),
            executor,
            work=work,
            final=final,
            report=report,
            fresh=True,
        )


def resume(
    run: Path, executor_for: Callable[[DispatchPlan], Executor], report: Reporter
) -> tuple[Path, RunRecord]:
    """The parts of a dispatched run that did not finish, run again and gathered with the rest.

    RUN is the run's final folder; when its replay was killed before it could gather, the run
    is still under its partial name, and is taken from there."""
    if layout.is_partial(run):
        raise UsageError(
            f"{run}: name the run, not the folder it is built in",
            hint=f"repro replay --resume {layout.final_of(run)}",
        )
    work = layout.partial_of(run)
    if run.exists():
        if work.exists():
            raise UsageError(
                f"{work} exists beside {run}: a resume of this run is running, or was killed",
                hint=f"wait for it; if none is running, `rm -r {work}` (the run itself is {run})",
            )
        source = run
    elif layout.record_file(work).is_file():
        source = work  # the replay was killed before it gathered: its provisional record
        report(f"{run} was never gathered (its replay was stopped); resuming from {work}")
    else:
        raise SpecError(f"{run}: no such run", hint="name a run folder under results/<name>/")
    record = load_run(source)
    if record.dispatch is None or not record.parts:
        raise UsageError(
            f"{run}: not a dispatched run (it was not replayed with --on)",
            hint="--resume continues a `repro replay --on EXECUTOR` run that did not finish",
        )
    plan = read_plan(source / layout.DISPATCH_PLAN)
    if plan.parts != len(record.parts) or plan.run_id != record.run_id:
        raise SpecError(
            f"{source / layout.DISPATCH_PLAN}: $.parts/$.run_id: the plan ({plan.parts} parts, "
            f"run {plan.run_id}) does not match the run ({len(record.parts)} parts, run "
            f"{record.run_id})",
            hint="the plan was edited or comes from another run: replay again",
        )
    finished = {p.index for p in record.parts if _done(p.status)}
    if source is work:  # a provisional record: written before any part ended
        finished |= _ended_since(plan.model_copy(update={"run_dir": str(source)}), record)
    todo = [p.index for p in record.parts if p.index not in finished]
    if not todo:
        raise UsageError(f"{run}: every part finished; nothing to resume")
    executor = executor_for(plan)
    with folder_lock(
        source,
        busy=f"{run}: being resumed by another `repro replay --resume`",
        hint="wait for it to finish",
    ):
        alive = executor.alive(record.dispatch.jobs)
        if alive:
            raise UsageError(
                f"{run}: job(s) {', '.join(alive)} of this run are still queued or running",
                hint=f"wait for them to end (or {get_executor(executor.name).stop_hint(alive)}), "
                "then resume",
            )
        if source is run:
            run.replace(work)
        plan = plan.model_copy(
            update={
                "run_dir": str(work.absolute()),
                "executor": executor.name,
                "executor_options": executor.options.model_dump(mode="json"),
            }
        )
        for index in todo:
            part = plan.part_dir(index)
            for leftover in (part, layout.partial_of(part)):
                shutil.rmtree(leftover, ignore_errors=True)
        for index in sorted(finished - {p.index for p in record.parts if _done(p.status)}):
            report(f"part {index} finished before: its results are kept ({layout.part_dir(index)})")
        report(f"resuming {len(todo)} part(s) of {plan.parts}: {todo}")
        return _run_parts(plan, record, todo, executor, work=work, final=run, report=report)


def _done(status: str) -> bool:
    return status in ("complete", "invalid")


def _ended_since(plan: DispatchPlan, record: RunRecord) -> set[int]:
    """The parts of a replay stopped before it gathered (kill -9) that finished all the same:
    its provisional record knows no part's end, each part's own run.json does."""
    return {
        p.index
        for p in record.parts
        if not _done(p.status) and _done(part_record(plan, p.index, None)[0].status)
    }


def _run_parts(
    plan: DispatchPlan,
    record: RunRecord,
    indices: list[int],
    executor: Executor,
    *,
    work: Path,
    final: Path,
    report: Reporter,
    fresh: bool = False,
) -> tuple[Path, RunRecord]:
    """Submit, wait, gather and name the run, whatever happens in between."""
    plan_path = plan.write()
    t0 = time.monotonic()
    info = record.dispatch or DispatchRecord(executor=executor.name)
    interrupted = False
    error: BaseException | None = None
    states: dict[int, PartState] = {}
    with interruptible():
        try:
            job = executor.submit(plan, plan_path, indices)
            info.jobs.append(job)
            report(f"submitted {len(indices)} part(s) to {executor.name} (job {job})")
            provisional = gather(plan, {}, record, interrupted=True)
            provisional.dispatch = info
            provisional.message = (
                f"the replay that dispatched this run was stopped before it gathered the parts: "
                f"`repro replay --resume {final}`"
            )
            commit_run(work, provisional)
            states = _wait(executor, indices, report)
        except (KeyboardInterrupt, Interrupted):
            interrupted = True
            if executor.job is not None:
                report("interrupted: cancelling the parts that have not finished")
            states = _cancel(executor, indices)
        except BaseException as exc:  # an error: nothing may keep running unattended
            error = exc
            states = _cancel(executor, indices)
    if executor.job is not None and executor.job not in info.jobs:
        info.jobs.append(executor.job)  # interrupted right after the submission
    submitted = executor.job is not None
    if fresh and not submitted:
        shutil.rmtree(work, ignore_errors=True)  # nothing ran: no run
        if error is not None:
            raise error
        raise KeyboardInterrupt
    _wait_visible(plan, states)
    previous = {p.index: p for p in record.parts}
    words = get_executor(plan.executor)  # the parts' last words, as recorded, in repro's words
    all_states = {
        i: states[i]
        if i in states
        else words.state(
            previous[i].state or FINISHED_UNWATCHED, previous[i].node, previous[i].job_id
        )
        for i in range(plan.parts)
        if i in states or i in previous
    }
    gathered = gather(
        plan, all_states, record, interrupted=interrupted or error is not None, clean=True
    )
    kept_plan: dict[str, Any] = redact(
        plan.model_dump(mode="json", by_alias=True) | {"run_dir": str(final.absolute())}
    )
    gathered.dispatch = info.model_copy(update={"plan": kept_plan})
    gathered.finished_utc = utc_now()
    gathered.duration_s = round((record.duration_s or 0) + time.monotonic() - t0, 3)
    atomic_write_text(plan_path, json.dumps(kept_plan, indent=2) + "\n")
    _redact_folder(plan.dispatch_dir())
    gathered.files_sha256 = digest_files(work)
    commit_run(work, gathered, final=final)
    if error is not None:
        raise error
    if interrupted:
        raise DispatchInterrupted(final, gathered)
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
    """Cancel, then wait (bounded) for the parts to leave the queue; a second Ctrl-C does not
    cut this short (the jobs would run on, unattended). Nothing to do before a submission."""
    if executor.job is None:
        return {}
    with _ignoring_sigint():
        with contextlib.suppress(RunError):  # the states below say what still runs
            executor.cancel()
        deadline = time.monotonic() + CANCEL_WAIT_S
        states = executor.poll()
        while time.monotonic() < deadline:
            if all(_phase(states.get(i)) == "ended" for i in indices):
                break
            time.sleep(POLL_S)
            states = executor.poll()
    return states


@contextlib.contextmanager
def _ignoring_sigint() -> Iterator[None]:
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _wait_visible(plan: DispatchPlan, states: dict[int, PartState]) -> None:
    """Parts the executor says completed, until their run.json shows (bounded)."""
    deadline = time.monotonic() + VISIBLE_WAIT_S
    for index, state in states.items():
        record = layout.record_file(plan.part_dir(index))
        while state.phase == "completed" and not record.is_file():
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)


def _phase(state: PartState | None) -> str:
    if state is None or state.phase == "pending":
        return "pending"
    if state.phase == "running":
        return "running"
    return "ended"


def _redact_folder(folder: Path) -> None:
    """The batch script and the parts' output, with the home directory redacted."""
    for path in folder.iterdir():
        if path.is_file():
            text = path.read_text(errors="replace")
            redacted = redact_text(text)
            if redacted != text:
                atomic_write_text(path, redacted)
