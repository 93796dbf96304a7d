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

from repro.artifacts.cache import ArtifactCache, sha256_file
from repro.artifacts.fetch import materialize
from repro.atomic import atomic_path
from repro.backends.tvm import TvmOptions
from repro.errors import BackendUnavailableError, SpecError
from repro.spec.io import parse_spec, write_spec
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
    """Tune every task of the spec's model for its target and batch sizes; update the spec."""
    opts = spec.backend.options
    if not isinstance(opts, TvmOptions):
        raise SpecError(
            f"{spec_path}: $.backend.name: tuning needs the tvm backend, "
            f"the spec uses {spec.backend.name!r}"
        )
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
    data = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("id", None)
    data["artifacts"][DB_ARTIFACT] = {
        "path": os.path.relpath(out_path.resolve(), spec_path.parent.resolve()),
        "sha256": sha256_file(out_path),
        "media_type": "application/json",
        "description": f"MetaSchedule database: {trials_per_task} trials x {tasks_total} tasks, "
        f"target {opts.target}, TVM {tvm.__version__}; produced by `repro tune`",
    }
    data["backend"]["options"]["tuning_database"] = DB_ARTIFACT
    return write_spec(parse_spec(data, source=str(spec_path)), spec_path)
