"""A served comparison pairs a metric only on one definition: measured again from the requests
where a side kept them, else left out with both definitions in the reason. The sides are real
files (other harnesses' outputs made here, MLPerf v6.1's published endpoints results) and a
repro served run's record with its requests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from repro.compare.definitions import align, definitions_of
from repro.formats.served.requests import REQUESTS_FILE, Requests
from repro.mlperf.harness_results import harness_side
from repro.mlperf.sides import open_sides
from repro.runs.record import RunRecord, TestRecord
from repro.runs.store import LoadedRun

DATA = Path(__file__).resolve().parents[2] / "data"
TOOLS = DATA / "served-tools"
ENDPOINTS = (
    DATA
    / "inference_results_v6.1"
    / "closed"
    / "NVIDIA"
    / "results"
    / "VR-NVL72_VR-288GB_aarch64x72_TRT"
    / "deepseek-r1"
    / "Server"
)


def _tool(name: str) -> LoadedRun:
    side = harness_side(TOOLS / name)
    assert side is not None
    return side


def _as_server(side: LoadedRun) -> LoadedRun:
    """The side's runs taken as a Server run (a Poisson load): to pair it with one."""
    tests = [t.model_copy(update={"scenario": "Server"}) for t in side.record.tests]
    requests = {("Server", k): v for (_, k), v in side.requests.items()}
    return LoadedRun(
        side.path, side.kind, side.record.model_copy(update={"tests": tests}), requests
    )


def _repro_run(tmp_path: Path, scenario: str = "Offline", *, tokenizer: bool = True) -> LoadedRun:
    """A repro served run's record and its requests one by one, as the served harness keeps
    them (both token counts, the first chunk's tokens)."""
    rng = np.random.default_rng(0)
    tests = []
    for k in (1, 2):
        rel = f"{scenario}/performance/run_{k}"
        (tmp_path / rel).mkdir(parents=True)
        n = 16
        ttft = rng.uniform(2e8, 3e8, n)
        tokens = np.full(n, 32)
        Requests(
            start_ns=np.sort(rng.uniform(0, 1e9, n)),
            ttft_ns=ttft,
            latency_ns=ttft + 31 * 2e6,
            output_tokens=tokens,
            counter="server",
            last_token_ns=ttft + 31 * 2e6 - 1e5,
            first_chunk_tokens=np.full(n, 2.0) if tokenizer else None,
            queued_ns=rng.uniform(0, 1e8, n),
            tokenizer_tokens=tokens.astype(float) if tokenizer else None,
        ).save(tmp_path / rel / REQUESTS_FILE)
        tests.append(
            TestRecord(
                scenario=scenario,
                mode="performance",
                repeat=k,
                dir=rel,
                status="valid",
                metrics={
                    "validity": "VALID",
                    "samples_per_second": 13.0,
                    "tokens_per_second": 416.0,
                },
                backend={"name": "served", "tokens_counted_by": "server"},
            )
        )
    record = RunRecord(
        run_id="r",
        spec_name="served-tinyllm",
        spec_id="a" * 64,
        spec_path="",
        status="complete",
        started_utc="",
        repro_version="0",
        tests=tests,
    )
    return LoadedRun(tmp_path, "repro", record)


def test_aiperf_and_guidellm_leave_out_what_they_count_differently() -> None:
    """AIPerf counted the server's tokens, GuideLLM its tokenizer's: neither kept the other
    count, so TPOT and the token rate are left out, each reason naming both definitions; TTFT
    (one definition) is compared."""
    got = align(_tool("aiperf"), [_tool("guidellm")])
    tpot = got.left_out[("Offline", "tpot_p99_ns")]
    assert "AIPerf measures it as (latency - TTFT) / (output tokens - 1)" in tpot
    assert "GuideLLM measures it as (last token - first token) / (output tokens - 1)" in tpot
    assert "counted by the tokenizer, not the server" in tpot
    assert ("Offline", "tokens_per_second") in got.left_out
    assert not any(k[1].startswith("ttft") for k in got.left_out)


def test_endpoints_tpot_against_aiperf_is_left_out_with_both_definitions() -> None:
    """The issue's case: endpoints counts tokens after the first chunk (its tokenizer), AIPerf
    after the first token (the server's); endpoints kept no requests, AIPerf not the first
    chunk's tokens."""
    [published] = open_sides(ENDPOINTS)
    got = align(published, [_as_server(_tool("aiperf"))])
    why = got.left_out[("Server", "tpot_p50_ns")]
    assert (
        "the endpoints result measures it as (completion - first chunk) / the tokens after" in why
    )
    assert "AIPerf measures it as (latency - TTFT) / (output tokens - 1)" in why
    assert "kept no requests one by one" in why


def test_a_repro_run_is_measured_by_aiperfs_definitions(tmp_path: Path) -> None:
    repro = _repro_run(tmp_path)
    assert definitions_of(repro, "Offline")["ttft"].formula == "issued"  # LoadGen's clock
    got = align(repro, [_tool("aiperf")])
    assert got.left_out == {}
    ttft = next(n for n in got.notes if "TTFT" in n)
    assert "the repro run" in ttft
    assert "request sent to the first chunk holding" in ttft
    tests = got.orig.record.performance("Offline")
    assert all(t.metrics["ttft_p50_ns"] < 3e8 for t in tests)  # from the send, queue left out
    assert all(t.metrics["tpot_p50_ns"] > 0 for t in tests)


def test_a_repro_run_is_measured_by_endpoints_tpot(tmp_path: Path) -> None:
    """repro keeps its tokenizer's counts of each answer and its first chunk: endpoints' TPOT
    is computed for it; endpoints' TTFT (to the stream's first chunk) is not, and says why."""
    [published] = open_sides(ENDPOINTS)
    got = align(published, [_repro_run(tmp_path, "Server")])
    assert ("Server", "tpot_p50_ns") not in got.left_out
    assert any("TPOT: the repro run measured again" in n for n in got.notes)
    rep = got.reps[0].record.performance("Server")[0].metrics
    assert rep["tpot_p50_ns"] == 62e6 / 30  # (latency - TTFT) / (32 - 2 first-chunk tokens)
    ttft = got.left_out[("Server", "ttft_p50_ns")]
    assert "the time of the stream's first chunk was not kept" in ttft


def test_without_its_tokenizer_counts_a_repro_run_cannot_meet_guidellm(tmp_path: Path) -> None:
    got = align(_repro_run(tmp_path, tokenizer=False), [_tool("guidellm")])
    assert ("Offline", "tokens_per_second") in got.left_out


def test_two_repro_runs_are_measured_alike(tmp_path: Path) -> None:
    """LoadGen's Offline summary has no TTFT: both runs' are measured from their requests, by
    LoadGen's own definition (from its issue of each request)."""
    repro = _repro_run(tmp_path)
    got = align(repro, [repro])
    assert got.left_out == {}
    tests = got.orig.record.performance("Offline")
    assert all("ttft_p99_ns" in t.metrics for t in tests)
    assert any("as LoadGen's issue of the request to its first text" in n for n in got.notes)
