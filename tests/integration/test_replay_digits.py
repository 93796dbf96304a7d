"""Real LoadGen with real onnxruntime on the digits model: every scenario, both modes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.store import load_run
from tests.helpers import assert_replayed


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = Path(__file__).resolve().parents[2]
    out = tmp_path_factory.mktemp("results")
    cache = tmp_path_factory.mktemp("cache")
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(root / "specs" / "ort-digits.json"),
            "--env",
            "native",
            "--min-duration-ms",
            "300",
            "--results-dir",
            str(out),
            "--cache-dir",
            str(cache),
            "--run-id",
            "t1",
            "--json",
        ],
    )
    record = json.loads(result.stdout)
    assert_replayed(result.exit_code, record, result.stderr)
    return out / "ort-digits" / "t1", record


def test_all_four_scenarios_run_in_both_modes(digits_run: tuple[Path, dict]) -> None:
    _run_dir, record = digits_run
    pairs = {(t["scenario"], t["mode"]): t for t in record["tests"]}
    for scenario in ("SingleStream", "MultiStream", "Server", "Offline"):
        for mode in ("performance", "accuracy"):
            test = pairs[(scenario, mode)]
            # LoadGen's verdict on a latency bound depends on the machine's load; that the
            # harness ran the test to the end and LoadGen judged it does not
            assert test["status"] in ("valid", "invalid"), (scenario, mode)
            if mode == "performance":
                assert test["metrics"]["validity"] in ("VALID", "INVALID"), scenario
            assert test["metrics"]["sut_queries_completed"] > 0, (scenario, mode)


def test_loadgen_files_are_there_untouched(digits_run: tuple[Path, dict]) -> None:
    run_dir, _ = digits_run
    perf = run_dir / "Offline" / "performance" / "run_1"
    assert (perf / "mlperf_log_summary.txt").read_text().startswith("=====")
    assert ":::MLLOG" in (perf / "mlperf_log_detail.txt").read_text()
    acc = json.loads((run_dir / "Offline" / "accuracy" / "mlperf_log_accuracy.json").read_text())
    assert len(acc) == 450


def test_real_top1_accuracy_on_held_out_digits(digits_run: tuple[Path, dict]) -> None:
    _, record = digits_run
    for t in record["tests"]:
        if t["mode"] == "accuracy":
            assert t["accuracy"]["metric"] == "top1"
            assert t["accuracy"]["total"] == 450
            assert t["accuracy"]["value"] >= 0.95
    digests = {t["accuracy"]["predictions_sha256"] for t in record["tests"] if t["accuracy"]}
    assert len(digests) == 1  # every scenario predicts the same classes


def test_settings_and_seeds_reach_loadgen(digits_run: tuple[Path, dict]) -> None:
    _, record = digits_run
    ss = next(
        t for t in record["tests"] if t["scenario"] == "SingleStream" and t["mode"] == "performance"
    )
    assert ss["metrics"]["qsl_rng_seed"] == 6023615788873153749
    assert ss["metrics"]["schedule_rng_seed"] == 9933818062894767841
    assert ss["metrics"]["min_duration_ms"] == 300
    assert ss["metrics"]["num_errors"] == 0


def test_backend_options_and_versions_are_recorded(digits_run: tuple[Path, dict]) -> None:
    _, record = digits_run
    backend = record["tests"][0]["backend"]
    assert backend["name"] == "onnxruntime"
    assert backend["providers_used"] == ["CPUExecutionProvider"]
    assert backend["options"]["allow_spinning"] is False
    assert backend["options"]["intra_op_threads"] == 1
    assert "error" not in record["fingerprint"], record["fingerprint"].get("error")
    assert record["fingerprint"]["packages"]["onnxruntime"] == backend["version"]


def test_run_json_is_a_valid_record(digits_run: tuple[Path, dict]) -> None:
    run_dir, _ = digits_run
    record = load_run(run_dir)
    assert record.spec_name == "ort-digits"
    assert len(record.spec_id) == 64
    assert not list(run_dir.parent.glob(".*.partial"))
