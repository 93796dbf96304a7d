"""The parts of a dispatched replay gathered into one run record."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from repro.dispatch.executors import ACTIVE, WAITING, PartState
from repro.dispatch.plan import DispatchPlan
from repro.errors import SpecError
from repro.runs import layout
from repro.runs.record import PartRecord, RunRecord, TestRecord
from repro.runs.store import load_run
from repro.verdicts import RunStatus, run_status

#: executor states that say the part was stopped from outside (not a failure of its own)
_STOPPED = frozenset({"CANCELLED", "PREEMPTED", "DEADLINE", "NODE_FAIL", "BOOT_FAIL"})


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
    slurm = state.state if state else None
    status: Any
    if run is not None:
        status = run.status if run.status != "failed" or slurm != "CANCELLED" else "interrupted"
        message = run.message
    elif interrupted and (slurm is None or slurm in WAITING | ACTIVE | {"ENDED"}):
        status, message = "interrupted", "cancelled with the replay before it finished"
    elif slurm is None or slurm in WAITING | ACTIVE:
        status, message = "missing", message or "the part did not run"
    elif slurm in _STOPPED or slurm.startswith("CANCELLED"):
        status, message = "interrupted", f"{slurm}: stopped before it finished"
    elif slurm == "TIMEOUT":
        status, message = "interrupted", "TIMEOUT: the part ran past its --time limit"
    elif slurm == "ENDED":
        status, message = (
            "missing",
            (
                f"it left the queue without a run and Slurm no longer says why (see "
                f"{layout.part_log(index)})"
            ),
        )
    else:
        status, message = (
            "failed",
            message or f"{slurm}: it left no run (see dispatch/part-{index}.out)",
        )
    cpu = run.facts().hardware.cpu if run else None
    return (
        PartRecord(
            index=index,
            dir=rel,
            status=status,
            state=slurm,
            job_id=state.job_id if state else None,
            node=state.node if state else None,
            cpu_model=cpu.model if cpu else None,
            logical_cpus=cpu.logical_cpus if cpu else None,
            message=message,
        ),
        run,
    )


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
