"""Tune a TVM experiment with MetaSchedule; the database becomes a pinned artifact.

A TVM result is not reproducible without the schedules it ran, so the database is part of the
experiment: written as one file, pinned by sha256 in the spec like the model.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from repro import _subprocess
from repro.artifacts.cache import ArtifactCache
from repro.artifacts.fetch import materialize
from repro.atomic import atomic_path
from repro.backends.tvm import TvmOptions
from repro.digests import sha256_file
from repro.errors import BackendUnavailableError, ReproError, RunError, SpecError
from repro.spec.io import load_spec, parse_spec, write_spec
from repro.spec.models import ExperimentSpec

Reporter = Callable[[str], None]

DB_ARTIFACT = "tuning_db"


def tune(
    spec: ExperimentSpec,
    spec_path: Path,
    *,
    trials_per_task: int,
    out_path: Path,
    cache: ArtifactCache,
    report: Reporter,
) -> ExperimentSpec:
    """Tune every task of the spec's model for its target and batch sizes; update the spec.

    MetaSchedule runs in a child process in a session of its own: an interruption (Ctrl-C,
    SIGTERM) stops it from here, never inside TVM's thread pools (which crash when a signal
    lands in one), and leaves no database and an unchanged spec."""
    import importlib.util
    import json
    import sys

    opts = spec.backend.options
    if not isinstance(opts, TvmOptions):
        raise SpecError(
            f"{spec_path}: $.backend.name: tuning needs the tvm backend, "
            f"the spec uses {spec.backend.name!r}"
        )
    if importlib.util.find_spec("tvm") is None:
        raise BackendUnavailableError("TVM is not installed", hint="pip install 'repro[tvm]'")
    cmd = [sys.executable, "-m", "repro.backends.tvm.tuning", str(spec_path)]
    cmd += [str(trials_per_task), str(out_path), str(cache.root)]
    found: list[dict[str, Any]] = []

    failed: list[dict[str, Any]] = []

    def echo(line: str) -> None:
        if line.startswith(_RESULT):
            found.append(json.loads(line[len(_RESULT) :]))
        elif line.startswith(_ERROR):
            failed.append(json.loads(line[len(_ERROR) :]))
        elif line.strip():
            report(line)

    status, tail = _subprocess.run_streaming(cmd, echo=echo)
    if failed:  # repro's own error in the child: the same error here (its exit code, its hint)
        import repro.errors

        kind = getattr(repro.errors, str(failed[-1].get("kind")), None)
        if not (isinstance(kind, type) and issubclass(kind, repro.errors.ReproError)):
            kind = RunError
        raise kind(str(failed[-1].get("message")), hint=failed[-1].get("hint"))
    if status != 0 or not found:
        said = next((t for t in reversed(tail) if t.strip()), "no output")
        raise RunError(f"tuning failed (exit {status}): {said[:400]}")
    meta = found[-1]
    data = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("id", None)
    data["artifacts"][DB_ARTIFACT] = {
        "path": os.path.relpath(out_path.resolve(), spec_path.parent.resolve()),
        "sha256": sha256_file(out_path),
        "media_type": "application/json",
        "description": f"MetaSchedule database: {trials_per_task} trials x {meta['tasks']} tasks, "
        f"target {opts.target}, TVM {meta['tvm']}; produced by `repro tune`",
    }
    data["backend"]["options"]["tuning_database"] = DB_ARTIFACT
    return write_spec(parse_spec(data, source=str(spec_path)), spec_path)


#: the child's last line: the database's metadata, or repro's error, as JSON
_RESULT = "repro-tune-result "
_ERROR = "repro-tune-error "


def tune_database(
    spec: ExperimentSpec,
    spec_path: Path,
    *,
    trials_per_task: int,
    out_path: Path,
    cache: ArtifactCache,
    report: Reporter,
) -> dict[str, Any]:
    """MetaSchedule over every task of the spec's model (in the child process); writes the
    database to `out_path` (atomically) and returns its metadata."""
    opts = spec.backend.options
    assert isinstance(opts, TvmOptions)
    try:
        import tvm
        from tvm.s_tir.meta_schedule.relax_integration import extract_tasks, tune_relax
    except ImportError as exc:
        raise BackendUnavailableError(
            f"TVM is not installed: {exc}", hint="pip install 'repro[tvm]'"
        ) from exc
    from repro.backends.tvm.engine import (
        OnnxModel,
        pack_database,
        prepare_for_tuning,
        target_dict,
    )

    wl = spec.workload
    model = materialize(
        wl.model, spec.artifacts[wl.model], base_dir=spec_path.parent, cache=cache, progress=report
    )
    if opts.threads:
        os.environ["TVM_NUM_THREADS"] = str(opts.threads)
    target = tvm.target.Target(target_dict(opts.target, threads=opts.threads))
    onnx_model = OnnxModel.read(model.path)
    try:
        import xgboost  # noqa: F401

        cost_model = "xgb"
    except ImportError:
        cost_model = "random"
        report(
            "xgboost is not installed: MetaSchedule uses a random cost model "
            "(pip install 'repro[tvm-tune]' for XGBoost)"
        )
    t0 = time.monotonic()
    tasks_total = 0
    with tempfile.TemporaryDirectory() as work:
        for batch in sorted({1, wl.batch_size}):
            mod = prepare_for_tuning(onnx_model.to_relax(batch), target)
            tasks = extract_tasks(mod, target)
            tasks_total += len(tasks)
            report(
                f"batch {batch}: {len(tasks)} tasks x {trials_per_task} trials "
                f"({cost_model} cost model)"
            )
            tune_relax(
                mod,
                params={},
                target=target,
                work_dir=work,
                max_trials_global=trials_per_task * len(tasks),
                max_trials_per_task=trials_per_task,
                cost_model=cost_model,
                seed=0,
            )
        meta: dict[str, Any] = {
            "tvm": tvm.__version__,
            "target": opts.target,
            "trials_per_task": trials_per_task,
            "tasks": tasks_total,
            "cost_model": cost_model,
            "model_sha256": model.sha256,
            "batch_sizes": sorted({1, wl.batch_size}),
            "tuned_on": tvm.target.codegen.llvm_get_system_cpu(),
            "tuning_s": round(time.monotonic() - t0, 1),
        }
        with atomic_path(out_path) as tmp:
            pack_database(Path(work), tmp, meta)
    report(f"tuned {tasks_total} tasks in {meta['tuning_s']} s -> {out_path}")
    return meta


def main(argv: list[str]) -> int:
    """`python -m repro.backends.tvm.tuning SPEC TRIALS OUT CACHE_DIR` (run by `tune`)."""
    import json

    spec_path, trials, out_path, cache_dir = argv
    try:
        spec = load_spec(Path(spec_path))
        meta = tune_database(
            spec,
            Path(spec_path),
            trials_per_task=int(trials),
            out_path=Path(out_path),
            cache=ArtifactCache(Path(cache_dir)),
            report=lambda line: print(line, flush=True),
        )
    except ReproError as exc:
        said = {"kind": type(exc).__name__, "message": exc.message, "hint": exc.hint}
        print(_ERROR + json.dumps(said), flush=True)
        return 3
    print(_RESULT + json.dumps(meta), flush=True)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
