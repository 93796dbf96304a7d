"""The generative SUT (worker only): prompts through continuous batching, tokens to LoadGen.

Each request's first token goes to LoadGen with `FirstTokenComplete` as soon as its prefill
gives it (LoadGen's time to first token, TTFT); the whole generation goes with
`QuerySamplesComplete` and its token count (`QuerySampleResponse(id, data, size, n_tokens)`),
from which LoadGen derives the time per output token (TPOT) and tokens per second. That needs
`use_token_latencies` in the TestSettings, which the spec requires of a generation task.
The response data are the generated token ids (int32), which LoadGen keeps in its accuracy log.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import numpy as np

from repro.artifacts.cache import read_verified
from repro.artifacts.lm_recipes import prompt_problems
from repro.backends.base import GenerativeEngine
from repro.backends.registry import get_backend
from repro.errors import SpecError
from repro.harness.batching import ContinuousBatcher, GenerationLog
from repro.harness.dataset import npz_array_from_bytes
from repro.harness.loadgen import flush, test_settings
from repro.harness.request import WorkerRequest, WorkerResult
from repro.harness.sizing import run_sized
from repro.runs.layout import DETAIL, HIST_FILE, LATENCIES_FILE
from repro.spec.models import LoadGenSettings
from repro.stats.histogram import LatencyHistogram

#: decode steps before the test, outside any clock (the first calls allocate)
WARM_UP_STEPS = 4


def load_generator(req: WorkerRequest) -> GenerativeEngine:
    """The request's generative engine with `batch_size` slots, from the verified bytes."""
    model = Path(req.model_path)
    data = read_verified(model, req.model_sha256, what="model")
    engine = get_backend(req.backend.name).load_generator()()
    engine.load(model, req.backend.options, slots=req.batch_size, model_bytes=data)
    return engine


def load_prompts(req: WorkerRequest, engine: GenerativeEngine) -> list[np.ndarray]:
    """The prompts as int64 arrays of their lengths, checked against the model."""
    gen = req.generation
    assert gen is not None
    path = Path(req.dataset_path)
    data = read_verified(path, req.dataset_sha256, what="dataset")
    try:
        ids = npz_array_from_bytes(data, req.inputs_key, name=path.name)
        lengths = npz_array_from_bytes(data, gen.lengths_key, name=path.name)
    except (KeyError, ValueError) as exc:
        raise SpecError(f"$.workload.generation.lengths_key: {exc}") from None
    problems = prompt_problems(
        ids,
        lengths,
        config=engine.config,
        max_new_tokens=gen.max_new_tokens,
        eos_token_id=gen.eos_token_id,
        dataset=req.dataset_name,
        samples=req.total_sample_count,
    )
    if problems:
        where, message = problems[0]
        raise SpecError(f"{where}: {message}")
    return [ids[i, : int(lengths[i])].astype(np.int64) for i in range(req.total_sample_count)]


def warm_up(engine: GenerativeEngine, prompt: np.ndarray) -> float:
    """A prefill and a few steps outside the clock; the seconds they took."""
    t = time.perf_counter()
    dec = engine.decoder
    token = dec.prefill(0, prompt)
    tokens = np.zeros(dec.slots, dtype=np.int64)
    positions = np.zeros(dec.slots, dtype=np.int64)
    tokens[0], positions[0] = token, len(prompt)
    for _ in range(WARM_UP_STEPS):
        dec.step(tokens, positions)
    return time.perf_counter() - t


class LoadGenReports:
    """The batcher's reports as LoadGen calls, on the slots' token buffers `out` (int32, a row
    a slot, kept here while LoadGen may read them): each row's address is taken once, not at
    every call."""

    def __init__(self, out: np.ndarray) -> None:
        if out.dtype != np.int32 or out.ndim != 2 or not out.flags.c_contiguous:
            raise ValueError("the token buffers: a C-contiguous int32 array, a row a slot")
        self.out = out
        self.addresses = [row.ctypes.data for row in out]

    def first(self, qid: int, slot: int) -> None:
        lg.FirstTokenComplete([lg.QuerySampleResponse(qid, self.addresses[slot], 4)])

    def done(self, ended: list[tuple[int, int, int]]) -> None:
        """The queries that ended in one decode step: one call to LoadGen for all of them."""
        at = self.addresses
        lg.QuerySamplesComplete([lg.QuerySampleResponse(q, at[s], 4 * n, n) for q, s, n in ended])


def run_generation_test(
    req: WorkerRequest,
    engine: GenerativeEngine,
    prompts: list[np.ndarray],
    *,
    settings: LoadGenSettings | None = None,
) -> GenerationLog:
    """One LoadGen test of the request's scenario (with `settings`, not the request's);
    LoadGen's logs go to its output folder."""
    gen = req.generation
    assert gen is not None
    log = GenerationLog()
    out = np.zeros((engine.decoder.slots, gen.max_new_tokens), dtype=np.int32)
    reports = LoadGenReports(out)
    batcher = ContinuousBatcher(
        engine.decoder,
        prompts,
        max_new_tokens=gen.max_new_tokens,
        eos_token_id=gen.eos_token_id,
        first=reports.first,
        done=reports.done,
        log=log,
        out=out,
    )
    batcher.start()
    sut = lg.ConstructFastSUT(batcher.submit, flush)
    # the prompts are in memory already (a few KB): nothing to load per sample
    qsl = lg.ConstructQSL(req.total_sample_count, req.performance_sample_count, _noop, _noop)
    ts = test_settings(
        req.scenario,
        req.mode,
        req.settings if settings is None else settings,
        req.seeds.model_dump(),
        req.performance_sample_count,
    )
    out_dir = Path(req.output_dir)
    log_output = lg.LogOutputSettings()
    log_output.outdir = str(out_dir)
    log_output.copy_summary_to_stdout = False
    log_settings = lg.LogSettings()
    log_settings.log_output = log_output
    log_settings.enable_trace = False  # LoadGen 6.0.17's trace file is not valid JSON
    try:
        # NOTE: a path that cannot exist, or LoadGen reads ./audit.config (see loadgen.py)
        lg.StartTestWithLogSettings(sut, qsl, ts, log_settings, str(out_dir / "no-audit.config"))
    finally:
        batcher.stop()
        lg.DestroyFastSUT(sut)
        lg.DestroyQSL(qsl)
    return log


def _noop(indices: list[int]) -> None:
    pass


def execute_generation(req: WorkerRequest, timings: dict[str, float]) -> WorkerResult:
    """Load the LM and the prompts, run LoadGen, and describe what ran."""
    t = time.perf_counter()
    engine = load_generator(req)
    timings["load_s"] = time.perf_counter() - t
    t = time.perf_counter()
    prompts = load_prompts(req, engine)
    timings["dataset_s"] = time.perf_counter() - t
    timings["warm_up_s"] = warm_up(engine, prompts[0])
    out_dir = Path(req.output_dir)

    def test(settings: LoadGenSettings) -> GenerationLog:
        """One LoadGen test; its timings replace an earlier attempt's."""
        timings["loadgen_start_unix"] = time.time()
        t = time.perf_counter()
        log = run_generation_test(req, engine, prompts, settings=settings)
        timings["loadgen_s"] = time.perf_counter() - t
        return log

    log, changed, discarded_s = run_sized(req, out_dir, test)
    if discarded_s:
        timings["resized_s"] = discarded_s  # the tests LoadGen judged too short, run again
    latencies = None
    if log.latencies_ns:
        LatencyHistogram.from_latencies(log.array()).save(out_dir / HIST_FILE)
        latencies = HIST_FILE
        if req.record_latencies:
            np.save(out_dir / LATENCIES_FILE, log.array())
    detail = (out_dir / DETAIL).read_text(errors="replace")
    backend: dict[str, Any] = engine.describe()
    backend["decode_steps"] = log.steps
    backend["decode_s"] = round(log.decode_ns / 1e9, 6)  # inside prefill and step calls
    return WorkerResult(
        status="complete",
        backend=backend,
        timings_s=timings,
        queries_completed=len(log.latencies_ns),
        samples_completed=log.samples,
        latencies_file=latencies,
        audit_config_found="Found Audit Config" in detail,
        output_dtype="<i4",
        output_shape=[],
        tokens_completed=log.tokens,
        changed_settings=changed,
    )
