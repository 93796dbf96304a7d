"""Published MLPerf result trees read as run records."""

from __future__ import annotations

from pathlib import Path

from repro.mlperf.accuracy_txt import parse_accuracy_text
from repro.mlperf.tree import is_mlperf_result, read_mlperf_result


def test_accuracy_txt() -> None:
    reading = parse_accuracy_text("accuracy=76.456%, good=38228, total=50000\nhash=abc", "resnet50")
    assert reading is not None
    assert (reading.metric, reading.value) == ("top1", 0.76456)
    assert parse_accuracy_text("no number here", "resnet50") is None


def test_every_published_benchmark_folder_reads(shared_fixtures: Path) -> None:
    folders = sorted(
        {
            p.parents[3]
            for p in shared_fixtures.rglob("results/*/*/*/performance/run_1/mlperf_log_summary.txt")
        }
    )
    assert folders
    for folder in folders:
        assert is_mlperf_result(folder), folder
        record = read_mlperf_result(folder)
        perf = [t for t in record.tests if t.mode == "performance"]
        assert perf, folder
        assert all(t.metrics.get("validity") in ("VALID", "INVALID") for t in perf)
        assert record.run_id.startswith("mlperf:")


def test_system_description_becomes_a_fingerprint(shared_fixtures: Path) -> None:
    folder = next(shared_fixtures.rglob("Intel/results/1-node-2S-EMR-PyTorch/resnet50"))
    record = read_mlperf_result(folder)
    assert record.environment["submitter"] == "Intel"
    assert record.fingerprint["hardware"]["cpu"]["model"]
    offline_acc = next(t for t in record.tests if t.scenario == "Offline" and t.mode == "accuracy")
    assert offline_acc.accuracy is not None
    assert 0.7 < offline_acc.accuracy["value"] < 0.8
