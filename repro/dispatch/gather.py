"""The parts of a dispatched replay gathered into one run record."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from repro.dispatch.executors.base import UNFINISHED, PartState
from repro.dispatch.plan import DispatchPlan
from repro.errors import SpecError
from repro.runs import layout
from repro.runs.record import PartRecord, PartStatus, RunRecord, TestRecord
from repro.runs.store import load_run
from repro.stats.verdicts import RunStatus, run_status


def part_record(
    plan: DispatchPlan,
    index: int,
    state: PartState | None,
    *,
    interrupted: bool = False,
    clean: bool = False,
) -> tuple[PartRecord, RunRecord | None]:
    """A part as its folder and the executor leave it."""
    rel = layout.part_dir(index)
    folder = plan.part_dir(index)
    run: RunRecord | None = None
    message = None
    absent = not layout.record_file(folder).is_file()
    if absent and clean:
        # a part killed outright leaves its hidden partial: it is no run
        shutil.rmtree(layout.partial_of(folder), ignore_errors=True)
    if not absent:
        try:
            run = load_run(folder)
        except SpecError as exc:
            message = exc.message
    status, message = _status(run, state, index, message, interrupted=interrupted)
    cpu = run.facts().hardware.cpu if run else None
    return (
        PartRecord(
            index=index,
            dir=rel,
            status=status,
            state=state.state if state else None,
            job_id=state.job_id if state else None,
            node=state.node if state else None,
            cpu_model=cpu.model if cpu else None,
            logical_cpus=cpu.logical_cpus if cpu else None,
            message=message,
        ),
        run,
    )


def _status(
    run: RunRecord | None,
    state: PartState | None,
    index: int,
    message: str | None,
    *,
    interrupted: bool,
) -> tuple[PartStatus, str | None]:
    """A part's status, and what to say of it: its run's, else what its executor says of how
    it ended (in repro's words; the executor's own word heads the message)."""
    phase = state.phase if state else None
    log = layout.part_log(index)
    if run is not None:
        stopped = run.status == "failed" and phase == "cancelled"
        return ("interrupted" if stopped else run.status), run.message
    if interrupted and (state is None or phase in UNFINISHED or phase == "gone"):
        return "interrupted", "cancelled with the replay before it finished"
    if state is None or phase in UNFINISHED:
        return "missing", message or "the part did not run"
    if phase in ("cancelled", "stopped"):
        return "interrupted", f"{state.state}: {state.why or 'stopped before it finished'}"
    if phase == "gone":
        return (
            "missing",
            f"{state.why or 'it ended without a run, and nothing says how'} (see {log})",
        )
    return "failed", message or f"{state.state}: {state.why or 'it left no run'} (see {log})"


def gather(
    plan: DispatchPlan,
    states: dict[int, PartState],
    record: RunRecord,
    *,
    interrupted: bool,
    clean: bool = False,
) -> RunRecord:
    """`record` (the run's own fields) with every part's tests and state; complete only when
    every part is."""
    parts: list[PartRecord] = []
    tests: list[TestRecord] = []
    first: RunRecord | None = None
    for index in range(plan.parts):
        part, run = part_record(
            plan, index, states.get(index), interrupted=interrupted, clean=clean
        )
        parts.append(part)
        if run is None:
            continue
        first = first or run
        for t in run.tests:
            tests.append(
                t.model_copy(
                    update={
                        "dir": f"{part.dir}/{t.dir}",
                        "repeat": index + 1 if t.mode == "performance" else t.repeat,
                        "part": index,
                    }
                )
            )
    status: RunStatus
    missing = [p for p in parts if p.status in ("missing", "interrupted", "failed")]
    if not missing:
        status = run_status(t.status for t in tests)
        message = None
    else:
        failed = [p for p in missing if p.status == "failed"]
        status = "failed" if failed and not interrupted else "interrupted"
        listing = ", ".join(
            f"{p.index} ({p.status}{': ' + p.state if p.state else ''})" for p in missing
        )
        message = (
            f"{len(missing)} of {plan.parts} part(s) did not finish: {listing}; "
            f"resume with `repro replay --resume {layout.final_of(Path(plan.run_dir))}`"
        )
    updates: dict[str, Any] = {"tests": tests, "parts": parts, "status": status, "message": message}
    if first is not None:
        updates |= {"fingerprint": first.fingerprint, "environment": first.environment}
        if first.probes_version:
            updates["probes_version"] = first.probes_version
    return record.model_copy(update=updates)
