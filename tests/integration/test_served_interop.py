"""A repro served run against other harnesses' runs of the same model: AIPerf 0.13, GuideLLM
0.8.1 and vllm bench serve 0.33 against `transformers serve` with the tiny-llama model
(tests/data/served-tools/, made by those tools here: make.py), and the run's own results in
MLCommons endpoints' layout. Every metric of the report is compared on one definition (the
repro run measured again from its requests where the harness defines it otherwise) or left out
with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.formats.served.endpoints import read_result
from repro.formats.served.requests import REQUESTS_FILE, Requests

pytest.importorskip("aiohttp", reason="the served SUT needs repro[serve] (aiohttp)")
pytest.importorskip("tokenizers", reason="the tiny-llama recipe needs repro[serve] (tokenizers)")

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "served-tinyllm.json"
TOOLS = ROOT / "tests" / "data" / "served-tools"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Path:
    """One short Offline run at the harnesses' load (4 requests at a time)."""
    out = tmp_path_factory.mktemp("interop") / "results"
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(SPEC),
            "--env",
            "native",
            "--min-duration-ms",
            "100",
            "-s",
            "Offline",
            "-m",
            "performance",
            "--backend-option",
            "max_connections=4",
            "--repeat",
            "2",
            "-o",
            str(out),
            "--cache-dir",
            str(shared_cache),
        ],
    )
    assert result.exit_code == 0, result.output
    [path] = [p for p in (out / "served-tinyllm").iterdir() if p.is_dir()]
    return path


def test_the_run_keeps_its_requests_and_writes_endpoints_layout(run: Path) -> None:
    requests = Requests.load(run / "Offline" / "performance" / "run_1" / REQUESTS_FILE)
    assert requests is not None
    assert len(requests) >= 64
    assert requests.counter == "server"
    assert requests.tokenizer_tokens is not None
    assert requests.queued_ns is not None
    assert (requests.queued_ns >= 0).all()
    folder = run / "endpoints" / "Offline"
    assert (folder / "config.yaml").is_file()
    got = read_result(folder)
    assert got.metrics["samples_per_second"] > 0
    assert got.metrics["tpot_p50_ns"] > 0


@pytest.mark.parametrize("harness", ["aiperf", "guidellm", "vllm-bench/vllm-bench.json"])
def test_every_metric_is_on_one_definition_or_left_out(
    run: Path, tmp_path: Path, harness: str
) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "report",
            "--compare",
            str(run),
            str(TOOLS / harness),
            "--same-hardware",
            "--format",
            "json",
            "-o",
            str(tmp_path / "rep"),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    [offline] = report["scenarios"]
    rows = {m["metric"]: m for m in offline["metrics"]}
    for key in ("tokens_per_second", "ttft_p50_ns", "tpot_p50_ns"):
        row = rows[key]
        left_out = row["original_value"] == "left out"
        assert left_out == ("left out" in row["reason"]), row
        if not left_out:
            assert isinstance(row["original_value"], float), row
            assert row["verdict"], row
    notes = " ".join(report["notes"])
    # the harnesses time a request from its send: the repro run's TTFT is measured again
    assert "TTFT: the repro run measured again from its requests one by one" in notes
    if harness == "guidellm":  # GuideLLM counts with its tokenizer; repro kept that count too
        assert "output token rate: the repro run measured again" in notes
        assert rows["tokens_per_second"]["judged"]
    assert "the server's software stack is not pinned" in notes
