"""The submission's rules on synthetic inputs: truncation, compliance verification, the
structural check."""

from __future__ import annotations

import json
from pathlib import Path

from repro.mlperf.submission import _truncate, check_tree, verify_accuracy, verify_performance
from repro.runs.record import TestRecord


def _test(scenario: str, **metrics: float) -> TestRecord:
    return TestRecord(
        scenario=scenario,
        mode="performance",
        dir="d",
        status="valid",
        metrics={"validity": "VALID", **metrics},
    )


def test_an_accuracy_log_keeps_its_first_and_last_4096_bytes_and_the_full_hash(
    tmp_path: Path,
) -> None:
    src, dest = tmp_path / "log.json", tmp_path / "out.json"
    src.write_bytes(bytes(range(256)) * 100)
    digest = _truncate(src, dest)
    data = dest.read_bytes()
    assert data == src.read_bytes()[:4096] + b"\n\n...\n\n" + src.read_bytes()[-4096:]
    import hashlib

    assert digest == hashlib.sha256(src.read_bytes()).hexdigest()
    src.write_bytes(b"[]\n")  # small logs stay whole
    _truncate(src, dest)
    assert dest.read_bytes() == b"[]\n"


def test_compliance_performance_rules() -> None:
    ref = _test("Offline", samples_per_second=1000.0)
    assert "TEST PASS" in verify_performance(
        "TEST01", ref, _test("Offline", samples_per_second=1050.0)
    )
    assert "TEST FAIL" in verify_performance(
        "TEST01", ref, _test("Offline", samples_per_second=800.0)
    )
    # TEST04 repeats one sample: much faster means results are cached
    assert "TEST FAIL" in verify_performance(
        "TEST04", ref, _test("Offline", samples_per_second=1300.0)
    )
    assert "TEST PASS" in verify_performance(
        "TEST04", ref, _test("Offline", samples_per_second=700.0)
    )
    lat = _test("SingleStream", latency_p90_ns=1_000_000.0)
    assert "TEST FAIL" in verify_performance(
        "TEST04", lat, _test("SingleStream", latency_p90_ns=500_000.0)
    )
    # a µs-scale SingleStream gets the compliance scripts' 20 %
    tiny = _test("SingleStream", latency_p90_ns=10_000.0)
    assert "TEST PASS" in verify_performance(
        "TEST01", tiny, _test("SingleStream", latency_p90_ns=8_500.0)
    )
    invalid = _test("Offline", samples_per_second=1000.0)
    invalid.metrics["validity"] = "INVALID"
    assert "TEST FAIL" in verify_performance("TEST01", ref, invalid)


def test_sampled_responses_must_equal_the_accuracy_runs(tmp_path: Path) -> None:
    acc, sampled = tmp_path / "acc.json", tmp_path / "s.json"
    acc.write_text(json.dumps([{"seq_id": i, "qsl_idx": i, "data": f"{i:02x}"} for i in range(10)]))
    sampled.write_text(json.dumps([{"seq_id": 0, "qsl_idx": 3, "data": "03"}]))
    assert "TEST PASS" in verify_accuracy(sampled, acc)
    sampled.write_text(json.dumps([{"seq_id": 0, "qsl_idx": 3, "data": "ff"}]))
    assert "TEST FAIL" in verify_accuracy(sampled, acc)
    assert "TEST FAIL" in verify_accuracy(tmp_path / "missing.json", acc)


def test_the_check_lists_every_missing_piece(tmp_path: Path) -> None:
    root = tmp_path / "closed" / "Org"
    (root / "results" / "sys" / "bench" / "Offline" / "performance" / "run_1").mkdir(parents=True)
    rules = {(v.rule, v.why.split(" ")[0]) for v in check_tree(root, division="closed")}
    assert ("layout", "no") in rules  # no systems/*.json
    assert any(r == "files" for r, _ in rules)
