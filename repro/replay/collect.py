"""A test's record from what its worker left: its result file, LoadGen's logs, its exit status;
the accuracy test scored (`repro.replay.scoring`)."""

from __future__ import annotations

from pathlib import Path

from repro.atomic import atomic_write_text
from repro.errors import SpecError
from repro.harness.request import WorkerRequest, WorkerResult
from repro.machine.gpu import energy_metrics
from repro.privacy import redact_text
from repro.replay.scoring import Scorer
from repro.replay.worker_end import worker_failure
from repro.runs import layout
from repro.runs.loadgen_logs import read_logs
from repro.runs.record import TestRecord
from repro.stats.verdicts import test_status


def collect_test(
    req: WorkerRequest,
    out_dir: Path,
    rc: int,
    *,
    rel: str,
    repeat: int,
    scorer: Scorer,
    spec_path: Path,
    compliance: bool,
) -> TestRecord:
    """The record of the test `req` asked for, from what its worker left in `out_dir` (its
    result, LoadGen's logs) and its exit status `rc`: failed with the reason, or judged, its
    accuracy scored. `compliance`: an MLPerf compliance test, whose audit.config is expected."""
    base = {
        "scenario": req.scenario,
        "mode": req.mode,
        "repeat": repeat,
        "dir": rel,
        "settings": req.settings.as_set(),
    }
    result_path = out_dir / layout.WORKER_RESULT
    if not result_path.is_file():
        log = out_dir / layout.WORKER_LOG
        said = worker_failure(log.read_text(errors="replace") if log.is_file() else "")
        how = f"was killed by signal {-rc}" if rc < 0 else f"exited with {rc}"
        return TestRecord(
            **base,
            status="failed",
            error=f"the worker {how} and wrote no result: {said} (its log: "
            f"{rel}/{layout.WORKER_LOG})",
        )
    try:
        result = WorkerResult.model_validate_json(result_path.read_text(errors="replace"))
        atomic_write_text(result_path, redact_text(result.model_dump_json(indent=2)) + "\n")
    except ValueError as exc:
        return TestRecord(
            **base, status="failed", error=f"{result_path}: damaged worker result: {exc}"
        )
    if result.status == "failed" and result.spec_error:
        # the spec names what the model does not have: every test would fail alike
        raise SpecError(f"{spec_path}: {result.error}")
    if result.status == "failed":
        return TestRecord(**base, status="failed", error=result.error)
    metrics = read_logs(out_dir)
    metrics["sut_queries_completed"] = result.queries_completed
    if result.cpu is not None and result.cpu.samples_per_cpu_second:
        metrics["samples_per_cpu_second"] = result.cpu.samples_per_cpu_second
    metrics.update(energy_metrics(result.energy.model_dump() if result.energy else None))
    try:
        accuracy = scorer.score(out_dir, result) if req.mode == "accuracy" else None
    except SpecError as exc:
        return TestRecord(**base, status="failed", metrics=metrics, error=exc.message)
    if result.audit_config_found and not compliance:
        metrics["errors"] = "LoadGen found an audit.config and changed the settings"
    if compliance and not result.audit_config_found:
        return TestRecord(
            **base,
            status="failed",
            metrics=metrics,
            error="the compliance test's audit.config was not read by LoadGen: the run is "
            "the plain test, not the compliance test",
        )
    return TestRecord(
        **base,
        status=test_status(
            mode=req.mode,
            validity=metrics.get("validity"),
            num_errors=metrics.get("num_errors"),
            audit_config_found=result.audit_config_found and not compliance,
        ),
        metrics=metrics,
        accuracy=accuracy,
        backend=result.backend,
        timings_s=result.timings_s,
        energy=result.energy,
        peak_rss_bytes=result.peak_rss_bytes,
        latencies_file=result.latencies_file,
        changed_settings=result.changed_settings,
        cpu=result.cpu,
        cpus=result.cpus,
    )
