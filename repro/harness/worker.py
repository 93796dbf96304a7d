"""The worker process: `python -m repro.harness REQUEST.json` runs one LoadGen test.

It runs inside the realized environment, imports the backend and LoadGen, and writes
`worker.json` (atomically) beside LoadGen's logs; the orchestrator reads both. The model and the
data set are read once into memory and checked against the request's sha256 before use: the
orchestrator verified the cache entries, but only the bytes this process loads are what runs.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from repro.artifacts.cache import read_verified
from repro.atomic import atomic_write_text
from repro.backends.base import Engine, Profiler
from repro.backends.registry import get_backend
from repro.errors import ReproError, SpecError
from repro.harness.cputime import CpuClock
from repro.harness.dataset import npz_array_from_bytes
from repro.harness.gate import pin, wait_at_gate
from repro.harness.profiled_pass import profiler_of, run_profiled_pass
from repro.harness.progress import ProgressFile
from repro.harness.request import WorkerRequest, WorkerResult
from repro.harness.sizing import run_sized
from repro.machine.gpu import EnergyMeter
from repro.runs.layout import (
    DETAIL,
    HIST_FILE,
    INFERENCE_FILE,
    LATENCIES_FILE,
    PROGRESS_FILE,
    WORKER_RESULT,
)
from repro.runs.record import CpuTime
from repro.spec.models import LoadGenSettings
from repro.stats.histogram import LatencyHistogram


def _write(out_dir: Path, result: WorkerResult) -> None:
    atomic_write_text(out_dir / WORKER_RESULT, result.model_dump_json(indent=2) + "\n")


def load_backend(req: WorkerRequest) -> Engine:
    """The request's engine, loaded with its options from the model's verified bytes (the
    plain-loop benchmark uses it too)."""

    model = Path(req.model_path)
    data = read_verified(model, req.model_sha256, what="model")
    engine = get_backend(req.backend.name).load_engine()()
    engine.load(
        model,
        req.backend.options,
        runtime=req.runtime,
        input_name=req.input_name,
        output_name=req.output_name,
        model_bytes=data,
    )
    return engine


def load_dataset(req: WorkerRequest) -> np.ndarray:
    """The request's input array, from the data set's verified bytes."""

    path = Path(req.dataset_path)
    data = read_verified(path, req.dataset_sha256, what="dataset")
    return npz_array_from_bytes(data, req.inputs_key, name=path.name)


def warm_up(
    backend: Engine | Profiler,
    source: np.ndarray,
    batch_size: int,
    scenario: str,
    *,
    samples_per_query: int | None = None,
    timed: dict[int, float] | None = None,
) -> np.ndarray:
    """Inference outside any clock at each batch shape the scenario uses (batch 1 for
    SingleStream, the batch size for Offline, the batch size or a smaller query for MultiStream,
    both 1 and the batch size for Server): the first call of a shape allocates (arenas,
    kernels), which is not the steady state; a shape the scenario never uses would only delay
    the first query. Returns one sample's output.

    With `timed`, each shape's call time goes there (for the progress estimate): a first call
    faster than TIME_AGAIN_S is timed once more, as it is mostly allocation (a µs-scale model's
    cold call is several times its steady one); a slower one is the estimate as it is.
    """
    if scenario == "MultiStream" and samples_per_query:
        batch_size = min(batch_size, samples_per_query)
    shapes = {1} if scenario == "SingleStream" or batch_size == 1 else {batch_size}
    if scenario == "Server":
        shapes.add(1)
    out = None
    for n in sorted(shapes):
        batch = np.ascontiguousarray(source[:n])
        t = time.perf_counter()
        out = np.asarray(backend.predict(batch))
        seconds = time.perf_counter() - t
        if timed is not None and seconds < TIME_AGAIN_S:
            t = time.perf_counter()
            backend.predict(batch)
            seconds = time.perf_counter() - t
        if timed is not None:
            timed[n] = seconds
    assert out is not None
    return out[:1].copy()


#: a warm-up call faster than this is timed a second time (see `warm_up`)
TIME_AGAIN_S = 0.05


def _warm(
    req: WorkerRequest,
    engine: Engine | Profiler,
    source: np.ndarray,
    timed: dict[int, float] | None = None,
) -> np.ndarray:
    """`warm_up` at the request's batch size and scenario."""
    return warm_up(
        engine,
        source,
        req.batch_size,
        req.scenario,
        samples_per_query=req.settings.multi_stream_samples_per_query,
        timed=timed,
    )


def execute(req: WorkerRequest) -> WorkerResult:
    """Load the backend and data, run LoadGen, and describe what ran."""
    # the process's CPU (user+sys, every thread) at each mark: its start-up's cost, steadier than
    # the wall clock on a shared machine (`bench/start_speed.py` prints both)
    timings: dict[str, float] = {"started_unix": time.time(), "started_cpu_s": time.process_time()}
    import mlperf_loadgen as lg  # noqa: F401  (fail early, before the model loads)

    from repro.harness.loadgen import LatencyLog, run_test

    out_dir = Path(req.output_dir)
    if req.served is not None:
        from repro.harness.served import execute_served

        result = execute_served(req, timings)
        return result.model_copy(update={"peak_rss_bytes": _peak_rss_bytes()})
    if req.generation is not None:
        from repro.harness.generation import execute_generation

        result = execute_generation(req, timings)
        return result.model_copy(update={"peak_rss_bytes": _peak_rss_bytes()})
    t = time.perf_counter()
    backend = load_backend(req)
    timings["load_s"] = time.perf_counter() - t
    t = time.perf_counter()
    source = load_dataset(req)
    timings["dataset_s"] = time.perf_counter() - t
    if source.shape[0] < req.total_sample_count:
        raise ValueError(
            f"the dataset has {source.shape[0]} samples, the spec's total_sample_count is "
            f"{req.total_sample_count}"
        )
    t = time.perf_counter()
    calls: dict[int, float] = {}
    probe = _warm(req, backend, source, calls)
    timings["warm_up_s"] = time.perf_counter() - t
    if req.profile:
        return _profiled(req, backend, source, out_dir, timings)
    audit = None
    if req.audit_config is not None:
        audit = out_dir / "audit.config"
        audit.write_text(req.audit_config)
    progress = ProgressFile(out_dir / PROGRESS_FILE)
    done = [0]  # Offline: samples done, counted per batch
    clock = [CpuClock()]  # the last test's: a test run again replaces an earlier attempt
    # the GPU's energy counter around the test (a CUDA engine only; None without NVML)
    meter = EnergyMeter.for_device(str(getattr(backend, "device", "cpu")))
    metering = [False]

    def test(settings: LoadGenSettings) -> LatencyLog:
        """One LoadGen test; its timings, progress and energy replace an earlier attempt's."""
        done[0] = 0
        progress.started(calls)
        if meter is not None:
            if metering[0]:
                meter.stop(0)  # a test run again: its energy is the last attempt's
            meter.start()
            metering[0] = True
        # the wall clock as LoadGen starts: `bench/start_speed.py` measures the time to it
        timings["loadgen_start_unix"] = time.time()
        timings.setdefault("ready_cpu_s", time.process_time())  # the first attempt's
        t = time.perf_counter()
        counting = progress.counting(done) if req.scenario == "Offline" else nullcontext()
        clock[0] = CpuClock().start()
        with counting:
            log = run_test(
                predict=backend.predict,
                source=source,
                scenario=req.scenario,
                mode=req.mode,
                settings=settings,
                seeds=req.seeds.model_dump(),
                batch_size=req.batch_size,
                total_count=req.total_sample_count,
                perf_count=req.performance_sample_count,
                output_dir=out_dir,
                probe=probe,
                audit_config=audit,
                done=done,
            )
        timings["loadgen_s"] = time.perf_counter() - t
        return log

    call_s = calls.get(req.batch_size)
    rate = req.batch_size / call_s if call_s else None  # the warm-up's samples per second
    if req.start_gate is not None:
        # a duet round's: start with the other side, and size a short query from the faster
        # side's warm-up as it does (both sides of the round run the same query)
        rate = wait_at_gate(Path(req.start_gate), rate=rate)
    log, changed, discarded_s = run_sized(req, out_dir, test, rate=rate)
    cpu = CpuTime.model_validate(clock[0].stop(log.samples))
    if discarded_s:
        timings["resized_s"] = discarded_s  # the tests LoadGen judged too short, run again
    # per query too where a query is not one batch of the whole set (MLPerf's SingleStream and
    # MultiStream energy is per query)
    per_query = len(log.values) if req.scenario in ("SingleStream", "MultiStream") else None
    energy = meter.stop(log.samples, per_query) if meter is not None else None
    latencies = None
    if log.values:
        LatencyHistogram.from_latencies(log.array()).save(out_dir / HIST_FILE)
        latencies = HIST_FILE
    if req.record_latencies and log.values:
        np.save(out_dir / LATENCIES_FILE, log.array())
        if log.inference:
            np.save(out_dir / INFERENCE_FILE, np.asarray(log.inference, dtype=np.int64))
    detail = (out_dir / DETAIL).read_text(errors="replace")
    return WorkerResult(
        status="complete",
        backend=backend.describe(),
        timings_s=timings,
        peak_rss_bytes=_peak_rss_bytes(),
        queries_completed=len(log.values),
        samples_completed=log.samples,
        latencies_file=latencies,
        audit_config_found="Found Audit Config" in detail,
        output_dtype=probe.dtype.str,
        output_shape=list(probe.shape[1:]),
        energy=energy,
        changed_settings=changed,
        cpu=cpu,
        cpus=sorted(os.sched_getaffinity(0)) if req.cpus else None,
    )


def _profiled(
    req: WorkerRequest,
    backend: Engine,
    source: np.ndarray,
    out_dir: Path,
    timings: dict[str, float],
) -> WorkerResult:
    """The profiled pass instead of a measured test."""

    t = time.perf_counter()
    profiler = profiler_of(backend, out_dir, req.backend.name)
    probe = _warm(req, profiler, source)
    timings["profiler_load_s"] = time.perf_counter() - t
    t = time.perf_counter()
    profile = run_profiled_pass(
        engine=backend,
        profiler=profiler,
        backend=req.backend.name,
        source=source,
        scenario=req.scenario,
        settings=req.settings,
        seeds=req.seeds.model_dump(),
        batch_size=req.batch_size,
        total_count=req.total_sample_count,
        perf_count=req.performance_sample_count,
        output_dir=out_dir,
    )
    timings["profiled_pass_s"] = time.perf_counter() - t
    return WorkerResult(
        status="complete",
        backend=backend.describe(),
        timings_s=timings,
        peak_rss_bytes=_peak_rss_bytes(),
        queries_completed=profile.queries,
        samples_completed=profile.samples,
        output_dtype=probe.dtype.str,
        output_shape=list(probe.shape[1:]),
    )


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m repro.harness REQUEST.json", file=sys.stderr)
        return 2
    req = WorkerRequest.model_validate(json.loads(Path(argv[0]).read_text()))
    out_dir = Path(req.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        if req.cpus:
            try:
                pin(req.cpus)  # before anything starts a thread: they inherit it
            except OSError as exc:
                allowed = sorted(os.sched_getaffinity(0))
                raise RuntimeError(
                    f"the worker cannot run on CPUs {req.cpus} (it may use {allowed}): {exc}"
                ) from None
        result = execute(req)
    except Exception as exc:
        traceback.print_exc()
        # a spec's error is the user's to fix and says so itself; others say what they are
        error = exc.message if isinstance(exc, SpecError) else f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ReproError) and exc.hint:
            error += f" (hint: {exc.hint})"
        spec_error = isinstance(exc, SpecError)
        _write(out_dir, WorkerResult(status="failed", error=error, spec_error=spec_error))
        return 3
    _write(out_dir, result)
    return 0


def _peak_rss_bytes() -> int | None:
    """The worker's peak resident memory (Linux reports kilobytes)."""
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    except (ImportError, OSError):  # pragma: no cover - not Linux
        return None
