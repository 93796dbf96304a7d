"""The profiled pass (worker only): LoadGen drives the backend's profiled twin, every query and
every predict() is timed on the wall clock, the profiler's kernel calls are matched to them.

It runs after, and apart from, the measured tests: the numbers a report judges never come from
a profiled run. Queries run inline in LoadGen's issue thread in every scenario (one inference
at a time, so the layers of one inference are not mixed with another's); the pass is about
where an inference's time goes, not about queueing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import numpy as np

from repro.atomic import atomic_write_text
from repro.backends.base import Engine, Profiler
from repro.errors import BackendUnavailableError
from repro.harness.dataset import SampleStore
from repro.harness.loadgen import flush, respond, test_settings
from repro.profiles.build import build_profile, overhead_of
from repro.profiles.model import Overhead, Profile, Span
from repro.profiles.timeline import chrome_trace, dumps
from repro.runs.layout import PROFILE_FILE, TIMELINE_FILE
from repro.spec.models import LoadGenSettings

#: inferences timed with and without the profiler for the overhead, in alternating blocks
OVERHEAD_INFERENCES = 64
OVERHEAD_BLOCK = 8

Predict = Callable[[np.ndarray], np.ndarray]


def profiler_of(engine: Engine, out_dir: Path, backend: str) -> Profiler:
    """The engine's profiled twin; a backend without a profiler is told plainly."""
    make = getattr(engine, "profiler", None)
    if make is None:
        from repro.backends.registry import backends_with_profilers

        raise BackendUnavailableError(
            f"backend {backend!r} has no layer profiler in repro",
            hint=f"profile a spec of a backend that has one: {backends_with_profilers()}",
        )
    profiler: Profiler = make(out_dir)
    return profiler


def timed(predict: Predict, spans: list[Span]) -> Predict:
    """`predict` that appends its wall-clock span to `spans`."""
    clock = time.time_ns

    def run(batch: np.ndarray) -> np.ndarray:
        t0 = clock()
        out = predict(batch)
        spans.append(Span(t0, clock(), int(batch.shape[0])))
        return out

    return run


def inline_sut(predict: Predict, store: SampleStore, batch_size: int, queries: list[Span]) -> Any:
    """Every query inline, in batches of `batch_size`, its span recorded."""
    clock = time.time_ns

    def issue(ids: list[int], indices: list[int]) -> None:
        t0 = clock()
        idx = np.asarray(indices, dtype=np.int64)
        for start in range(0, len(ids), batch_size):
            out = predict(store.batch(idx[start : start + batch_size]))
            respond(ids[start : start + batch_size], out)
        queries.append(Span(t0, clock(), len(ids)))

    return lg.ConstructFastSUT(issue, flush)


def run_profiled_pass(
    *,
    engine: Engine,
    profiler: Profiler,
    backend: str,
    source: np.ndarray,
    scenario: str,
    settings: LoadGenSettings,
    seeds: dict[str, int],
    batch_size: int,
    total_count: int,
    perf_count: int,
    output_dir: Path,
) -> Profile:
    """LoadGen over the profiled twin, then the profiler's overhead, then the table and the
    trace written into `output_dir`."""
    store = SampleStore(source)
    queries: list[Span] = []
    inferences: list[Span] = []
    qsl = lg.ConstructQSL(total_count, perf_count, store.load, store.unload)
    sut = inline_sut(timed(profiler.predict, inferences), store, batch_size, queries)
    out = lg.LogOutputSettings()
    out.outdir = str(output_dir)
    out.copy_summary_to_stdout = False
    log_settings = lg.LogSettings()
    log_settings.log_output = out
    log_settings.enable_trace = False
    ts = test_settings(scenario, "performance", settings, seeds, perf_count)
    try:
        lg.StartTestWithLogSettings(sut, qsl, ts, log_settings, str(output_dir / "no-audit.config"))
    finally:
        lg.DestroyFastSUT(sut)
        lg.DestroyQSL(qsl)
    overhead = measure_overhead(engine.predict, profiler.predict, source, inferences)
    calls, raw = profiler.finish()
    trace = chrome_trace(queries, inferences, calls, backend=backend, profiler=profiler.source)
    atomic_write_text(output_dir / TIMELINE_FILE, dumps(trace))
    profile = build_profile(
        calls,
        inferences,
        backend=backend,
        profiler=profiler.source,
        scenario=scenario,
        queries=len(queries),
        overhead=overhead,
        raw_trace=raw,
        timeline=TIMELINE_FILE,
        notes=[
            "queries ran inline in LoadGen's issue thread, one inference at a time; the "
            "measured tests of the run were not profiled"
        ],
    )
    atomic_write_text(output_dir / PROFILE_FILE, profile.dump())
    return profile


def measure_overhead(
    plain: Predict, profiled: Predict, source: np.ndarray, inferences: list[Span]
) -> Overhead:
    """The pass's batch sizes again, in alternating blocks without and with the profiler, so
    that a phase of the machine lands on both. Blocks, not single calls: the two sessions have
    thread pools of their own, and a pool that spins after its call would slow the other's next
    call; the first call of each block is not counted."""
    sizes = [s.samples for s in inferences[:OVERHEAD_INFERENCES]] or [1]
    without: list[Span] = []
    with_: list[Span] = []
    for b, first in enumerate(range(0, len(sizes), OVERHEAD_BLOCK)):
        block = sizes[first : first + OVERHEAD_BLOCK]
        order = ((plain, without), (profiled, with_))
        for predict, into in order if b % 2 == 0 else order[::-1]:
            timings: list[Span] = []
            run = timed(predict, timings)
            for i, n in enumerate(block):
                start = ((first + i) * n) % max(source.shape[0] - n + 1, 1)
                run(np.ascontiguousarray(source[start : start + n]))
            into += timings[1:] if len(timings) > 1 else timings
    return overhead_of(
        with_,
        without,
        f"{len(sizes)} inferences of the pass's batch sizes in alternating blocks of "
        f"{OVERHEAD_BLOCK} without and with the profiler (the first of each block not counted), "
        "one process; medians",
    )
