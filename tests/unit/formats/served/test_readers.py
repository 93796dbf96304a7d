"""Other harnesses' served results, read from files those harnesses wrote here
(tests/data/served-tools/make.py: AIPerf 0.13, GuideLLM 0.8.1 and vllm bench serve 0.33 against
`transformers serve`), and the same files made hostile."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from repro.errors import SpecError
from repro.formats.served import definitions as d
from repro.formats.served.aiperf import read_aiperf
from repro.formats.served.guidellm import read_guidellm
from repro.formats.served.requests import Requests
from repro.formats.served.vllm_bench import read_vllm_bench
from repro.mlperf.harness_results import harness_side

DATA = Path(__file__).resolve().parents[3] / "data" / "served-tools"
AIPERF = DATA / "aiperf" / "profile_runs" / "run_0001" / "profile_export_aiperf.json"
GUIDELLM = DATA / "guidellm" / "run-1.json"
VLLM = DATA / "vllm-bench" / "vllm-bench.json"


def test_aiperf_summary_and_requests_as_aiperf_wrote_them() -> None:
    raw = json.loads(AIPERF.read_text())
    run = read_aiperf(AIPERF)
    assert run.scenario == "Offline"
    assert run.load == "concurrency 4"
    assert run.metrics["samples_per_second"] == raw["request_throughput"]["avg"]
    assert run.metrics["tokens_per_second"] == raw["output_token_throughput"]["avg"]
    assert run.metrics["ttft_p99_ns"] == pytest.approx(raw["time_to_first_token"]["p99"] * 1e6)
    assert run.metrics["tpot_p50_ns"] == pytest.approx(raw["inter_token_latency"]["p50"] * 1e6)
    assert run.requests is not None
    assert len(run.requests) == 16
    assert run.facts["version"] == "0.13.0"
    assert run.facts["server_url"].startswith("http://127.0.0.1:")
    assert run.definitions["tpot"].describe().startswith("(latency - TTFT) / (output tokens - 1)")
    assert run.definitions["tpot"].counter == "server"  # --use-server-token-count


def test_aiperf_requests_measure_what_its_summary_says() -> None:
    """The per-request records give AIPerf's own figures back (its mean TTFT and ITL over the
    same requests, by its own definitions)."""
    raw = json.loads(AIPERF.read_text())
    run = read_aiperf(AIPERF)
    assert run.requests is not None
    again = run.requests.measure({k: run.definitions[k] for k in ("ttft", "tpot")})
    assert again["ttft_mean_ns"] == pytest.approx(raw["time_to_first_token"]["avg"] * 1e6)
    assert again["tpot_mean_ns"] == pytest.approx(raw["inter_token_latency"]["avg"] * 1e6)


def test_guidellm_rates_are_requests_over_its_duration() -> None:
    raw = json.loads(GUIDELLM.read_text())["benchmarks"][0]
    [run] = read_guidellm(GUIDELLM)
    done = raw["metrics"]["request_totals"]["successful"]
    assert run.metrics["samples_per_second"] == pytest.approx(done / raw["duration"])
    assert run.definitions["tpot"].formula == "last-first/(n-1)"  # GuideLLM's ITL
    assert run.definitions["tpot"].counter == "tokenizer"  # no usage in its response metrics
    assert run.requests is not None
    assert len(run.requests) == done


def test_vllm_appended_runs_are_two_runs_with_requests() -> None:
    runs = read_vllm_bench(VLLM)
    assert len(runs) == 2
    assert all(r.requests is not None and len(r.requests) == 16 for r in runs)
    # chat: its first chunk is role-only; vLLM's clock stops at the first with content
    assert runs[0].definitions["ttft"].formula == "first-content"
    assert runs[0].definitions["latency"].formula == "last-token"


def test_a_folder_of_runs_is_one_side_with_rounds() -> None:
    side = harness_side(DATA / "aiperf")
    assert side is not None
    assert side.kind == "tool"
    assert [t.repeat for t in side.record.performance("Offline")] == [1, 2]
    assert side.record.environment["server_pinned"] is False
    assert "not pinned" in side.record.notes[0]
    assert set(side.requests) == {("Offline", 1), ("Offline", 2)}


def test_requests_measure_each_definition() -> None:
    """Three requests with known times: each definition's per-request values."""
    r = Requests(
        start_ns=np.array([0.0, 10.0, 20.0]),
        ttft_ns=np.array([10.0, 10.0, 10.0]),
        latency_ns=np.array([100.0, 110.0, 190.0]),
        output_tokens=np.array([10, 11, 19]),
        counter="server",
        last_token_ns=np.array([91.0, 101.0, 181.0]),
        first_chunk_tokens=np.array([2.0, 1.0, 1.0]),
    )
    assert list(r.tpot_values(d.tpot("decode/(n-1)", "server"))) == [10.0, 10.0, 10.0]
    assert list(r.tpot_values(d.tpot("last-first/(n-1)", "server"))) == pytest.approx(
        [9.0, 9.1, 9.5]
    )
    assert list(r.tpot_values(d.tpot("decode/(n-first)", "server"))) == [
        90 / 8,
        10.0,
        10.0,
    ]
    assert list(r.tpot_values(d.tpot("last-start/n", "server"))) == pytest.approx(
        [9.1, 101 / 11, 181 / 19]
    )
    assert r.missing(d.tpot("decode/(n-1)", "tokenizer")) is not None  # no second count
    rates = r.measure({"request_rate": d.request_rate("n/window")})
    assert rates["samples_per_second"] == pytest.approx(3 / 210e-9)


# -- hostile files ---------------------------------------------------------------------------


def _copy(tmp_path: Path, src: Path, edit: object = None, text: str | None = None) -> Path:
    out = tmp_path / src.name
    if text is not None:
        out.write_text(text)
    else:
        raw = json.loads(src.read_text())
        if callable(edit):
            edit(raw)
        out.write_text(json.dumps(raw))
    return out


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda r: r["request_throughput"].update(avg=-3.0), "$.request_throughput.avg"),
        (lambda r: r["request_throughput"].update(avg=1e300), "$.request_throughput.avg"),
        (lambda r: r["request_throughput"].update(avg="fast"), "$.request_throughput.avg"),
        (lambda r: r.update(schema_version="9.0"), "$.schema_version"),
        (lambda r: r.update(was_cancelled=True), "$.is_complete"),
        (lambda r: r["time_to_first_token"].update(unit="fortnights"), "time_to_first_token"),
        (lambda r: r.pop("input_config"), "$.input_config"),
    ],
)
def test_hostile_aiperf_summary_names_file_and_field(
    tmp_path: Path, edit: object, field: str
) -> None:
    path = _copy(tmp_path, AIPERF, edit)
    with pytest.raises(SpecError) as err:
        read_aiperf(path)
    assert str(path) in err.value.message
    assert field in err.value.message


def test_nan_and_truncation_are_errors_naming_the_file(tmp_path: Path) -> None:
    text = AIPERF.read_text()
    nan = _copy(tmp_path, AIPERF, text=text.replace('"avg": ', '"avg": NaN, "x": ', 1))
    with pytest.raises(SpecError, match="NaN is not a JSON number"):
        read_aiperf(nan)
    cut = _copy(tmp_path, AIPERF, text=text[: len(text) // 2])
    with pytest.raises(SpecError, match=r"truncated\?"):
        read_aiperf(cut)
    vcut = _copy(tmp_path, VLLM, text=VLLM.read_text()[:-200])
    with pytest.raises(SpecError, match=r"vllm-bench.json: invalid JSON"):
        read_vllm_bench(vcut)


def test_hostile_guidellm_and_vllm(tmp_path: Path) -> None:
    def unknown(raw: dict) -> None:
        raw["metadata"]["version"] = 99

    with pytest.raises(SpecError, match=r"\$\.metadata\.version: 99"):
        read_guidellm(_copy(tmp_path, GUIDELLM, unknown))

    def zero_duration(raw: dict) -> None:
        raw["benchmarks"][0]["duration"] = 0

    with pytest.raises(SpecError, match=r"\$\.benchmarks\[0\]\.duration"):
        read_guidellm(_copy(tmp_path, GUIDELLM, zero_duration))
    docs = [json.loads(line) for line in VLLM.read_text().splitlines() if line.strip()]
    docs[1]["ttfts"] = docs[1]["ttfts"][:-1]
    bad = tmp_path / "v.json"
    bad.write_text("\n".join(json.dumps(x) for x in docs))
    with pytest.raises(SpecError, match=r"\$\[1\]: its per-request arrays differ in length"):
        read_vllm_bench(bad)


def test_a_fifo_or_a_device_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "profile_export_aiperf.json"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="not a regular file"):
        read_aiperf(fifo)


def test_no_credentials_leave_with_a_url(tmp_path: Path) -> None:
    def secret(raw: dict) -> None:
        raw["input_config"]["endpoint"]["urls"] = ["https://user:hunter2@example.com:8443/v1?key=s"]

    run = read_aiperf(_copy(tmp_path, AIPERF, secret))
    assert run.facts["server_url"] == "https://example.com:8443"
    assert not any("hunter2" in str(v) for v in run.facts.values())


def test_every_figure_is_finite() -> None:
    for run in [read_aiperf(AIPERF), *read_guidellm(GUIDELLM), *read_vllm_bench(VLLM)]:
        for key, value in run.metrics.items():
            if isinstance(value, float):
                assert math.isfinite(value), (run.tool, key)
                assert value >= 0, (run.tool, key)
