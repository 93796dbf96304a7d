"""The LoadGen SUTs and QSL: one inference at a time, the least Python per query.

Runs inside the worker process only (it imports mlperf_loadgen). One LoadGen test per request
(more only when an Offline query was too short for the machine: `repro.harness.sizing`):
LoadGen's embedded mlperf.conf is loaded by the first FromConfig of a process, and a second one
corrupts the settings; we never call FromConfig and set every field and seed explicitly.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import numpy as np

from repro.harness.dataset import SampleStore
from repro.spec.models import LoadGenSettings

Predict = Callable[[np.ndarray], np.ndarray]

SCENARIOS = {
    "SingleStream": lg.TestScenario.SingleStream,
    "MultiStream": lg.TestScenario.MultiStream,
    "Server": lg.TestScenario.Server,
    "Offline": lg.TestScenario.Offline,
}
MODES = {"performance": lg.TestMode.PerformanceOnly, "accuracy": lg.TestMode.AccuracyOnly}


class LatencyLog:
    """SUT-side latency of each query (issue callback entry to completion), in ns.

    SingleStream also records the time inside `predict` of each query, so that the harness's
    own cost per query (latency minus inference) is measured in the same run.
    """

    def __init__(self) -> None:
        self.values: list[int] = []
        self.inference: list[int] = []
        self.samples = 0

    def array(self) -> np.ndarray:
        return np.asarray(self.values, dtype=np.int64)


def respond(ids: list[int], out: np.ndarray) -> None:
    """Complete samples with their rows of `out`; `out` stays alive until LoadGen returns."""
    out = np.ascontiguousarray(out)
    base = out.ctypes.data
    row = out.nbytes // max(len(ids), 1)
    lg.QuerySamplesComplete(
        [lg.QuerySampleResponse(qid, base + i * row, row) for i, qid in enumerate(ids)]
    )


#: up to this many loaded samples, SingleStream looks each one up once after a query completes
#: (~3 us for 64, ~50 us for 1024: against a query of milliseconds, where the caches matter,
#: that delays the next issue by a few per cent at most; a µs-scale model keeps its caches)
WARM_VIEWS = 1024


def single_stream_sut(
    predict: Predict,
    store: SampleStore,
    log: LatencyLog,
    probe: np.ndarray,
    *,
    keep_outputs: bool = True,
) -> Any:
    """Inline in LoadGen's issue thread, through ConstructFastSUT (no QuerySample objects).

    The least Python between issue and completion. Right after a large model's inference the
    interpreter's data has left the caches and each Python operation is slow (15-80 us for
    `out.ctypes.data` here, in a plain loop too), so the path is a dict lookup of a ready view
    of the sample and one attribute set on a response object made once (one query is in flight
    and LoadGen copies the responses it is given), measured 35 -> 11 us before inference; and
    11 -> 1 us when what those lines touch is brought back into the caches after each
    completion, outside the latency. In performance mode LoadGen never reads a response's
    data, so the completion follows the inference directly (`keep_outputs` False); in accuracy
    mode the output is copied into the buffer the response points at first.
    """
    perf = time.perf_counter_ns
    lat, inf = log.values, log.inference
    views, one = store.views, store.one
    complete = lg.QuerySamplesComplete
    buf = np.empty_like(probe[:1])
    resp = lg.QuerySampleResponse(0, buf.ctypes.data, buf.nbytes)
    done = [resp]

    def issue(ids: list[int], indices: list[int]) -> None:
        t0 = perf()
        try:
            x = views[indices[0]]
        except KeyError:  # more samples than MAX_VIEWS
            x = one(indices[0])
        resp.id = ids[0]
        t1 = perf()
        if keep_outputs:
            buf[...] = predict(x)
        else:
            predict(x)
        t2 = perf()
        complete(done)
        lat.append(perf() - t0)
        inf.append(t2 - t1)
        # Outside the query's latency (it is complete) and before the next one is issued:
        # bring back into the caches what the next query's first lines touch, which this
        # inference evicted (measured on resnet50: 9 -> 1 us before inference).
        resp.id = 0
        if len(views) <= WARM_VIEWS:
            for key in views:
                views[key]

    return lg.ConstructFastSUT(issue, flush)


def batched_inline_sut(
    predict: Predict,
    store: SampleStore,
    log: LatencyLog,
    batch_size: int,
    done: list[int] | None = None,
) -> Any:
    """MultiStream and Offline: run each query's samples inline, in batches of `batch_size`.

    ConstructFastSUT hands over ids and indices as lists: building a QuerySample object per
    sample halves LoadGen's Offline rate for small models (measured: 0.57 vs 1.18 M samples/s).
    With `done` (Offline), `done[0]` counts the samples completed, for the progress file
    (MultiStream's µs-scale queries go without the count).
    """
    perf = time.perf_counter_ns

    def issue(ids: list[int], indices: list[int]) -> None:
        t0 = perf()
        n = len(ids)
        idx = np.asarray(indices, dtype=np.int64)
        for start in range(0, n, batch_size):
            out = predict(store.batch(idx[start : start + batch_size]))
            respond(ids[start : start + batch_size], out)
        log.values.append(perf() - t0)
        log.samples += n

    def counted(ids: list[int], indices: list[int]) -> None:
        assert done is not None
        t0 = perf()
        n = len(ids)
        idx = np.asarray(indices, dtype=np.int64)
        for start in range(0, n, batch_size):
            out = predict(store.batch(idx[start : start + batch_size]))
            respond(ids[start : start + batch_size], out)
            done[0] += min(batch_size, n - start)
        log.values.append(perf() - t0)
        log.samples += n

    return lg.ConstructFastSUT(issue if done is None else counted, flush)


class ServerSut:
    """Server: the issue callback only enqueues; one worker thread batches what is waiting.

    One thread runs inference, so two calls never compete for the same cores.
    """

    def __init__(self, predict: Predict, store: SampleStore, log: LatencyLog, batch_size: int):
        self.predict = predict
        self.store = store
        self.log = log
        self.batch_size = batch_size
        self.pending: queue.SimpleQueue[tuple[int, int, int] | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="repro-server", daemon=True)
        self.thread.start()
        self.sut = lg.ConstructFastSUT(self._issue, flush)

    def _issue(self, ids: list[int], indices: list[int]) -> None:
        t0 = time.perf_counter_ns()
        put = self.pending.put
        for qid, index in zip(ids, indices, strict=True):
            put((qid, index, t0))

    def _serve(self) -> None:
        get, get_nowait = self.pending.get, self.pending.get_nowait
        perf = time.perf_counter_ns
        lat = self.log.values
        while True:
            first = get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.batch_size:
                try:
                    item = get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self.pending.put(None)
                    break
                batch.append(item)
            out = self.predict(self.store.batch([b[1] for b in batch]))
            respond([b[0] for b in batch], out)
            now = perf()
            lat.extend(now - b[2] for b in batch)

    def stop(self) -> None:
        self.pending.put(None)
        self.thread.join()


def flush() -> None:
    pass


def test_settings(
    scenario: str, mode: str, settings: LoadGenSettings, seeds: dict[str, int], perf_count: int
) -> Any:
    """TestSettings with every field from the spec and the seeds set explicitly."""
    ts = lg.TestSettings()
    ts.scenario = SCENARIOS[scenario]
    ts.mode = MODES[mode]
    for key, value in settings.as_set().items():
        setattr(ts, key, value)
    for key, value in seeds.items():
        setattr(ts, key, value)
    ts.performance_sample_count_override = perf_count
    return ts


def run_test(
    *,
    predict: Predict,
    source: np.ndarray,
    scenario: str,
    mode: str,
    settings: LoadGenSettings,
    seeds: dict[str, int],
    batch_size: int,
    total_count: int,
    perf_count: int,
    output_dir: Path,
    probe: np.ndarray,
    audit_config: Path | None = None,
    done: list[int] | None = None,
) -> LatencyLog:
    """Run one LoadGen test; LoadGen writes its logs untouched into `output_dir`. Offline
    counts its samples done in `done[0]` (see `batched_inline_sut`)."""
    store = SampleStore(source)
    log = LatencyLog()
    qsl = lg.ConstructQSL(total_count, perf_count, store.load, store.unload)
    server: ServerSut | None = None
    if scenario == "SingleStream":
        # LoadGen reads a response's data in accuracy mode, and in performance mode when it
        # samples responses for its accuracy log: compliance TEST01's audit.config asks for
        # that (TEST04's does not; a spec's settings cannot)
        sampled = audit_config is not None and "accuracy_log" in audit_config.read_text()
        sut = single_stream_sut(
            predict, store, log, probe, keep_outputs=mode == "accuracy" or sampled
        )
    elif scenario == "Server":
        server = ServerSut(predict, store, log, batch_size)
        sut = server.sut
    else:
        counted = done if scenario == "Offline" else None
        sut = batched_inline_sut(predict, store, log, batch_size, counted)
    ts = test_settings(scenario, mode, settings, seeds, perf_count)
    out = lg.LogOutputSettings()
    out.outdir = str(output_dir)
    out.copy_summary_to_stdout = False
    log_settings = lg.LogSettings()
    log_settings.log_output = out
    log_settings.enable_trace = False  # LoadGen 6.0.17's trace file is not valid JSON
    # NOTE: LoadGen reads ./audit.config when it exists; name a path that cannot exist, unless
    # a compliance test gives one on purpose.
    audit = str(audit_config or output_dir / "no-audit.config")
    try:
        lg.StartTestWithLogSettings(sut, qsl, ts, log_settings, audit)
    finally:
        if server is not None:
            server.stop()
        lg.DestroyFastSUT(sut)
        lg.DestroyQSL(qsl)
    if scenario == "SingleStream" or scenario == "Server":
        log.samples = len(log.values)
    return log
