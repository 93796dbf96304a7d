"""LoadGen log parsing: our own runs' wording and published logs from LoadGen 4.0 to 6.0."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.runs.loadgen_logs import parse_detail_text, parse_summary_text, read_logs

SUMMARY_V6 = """\
================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : SingleStream
Mode     : PerformanceOnly
90.0th percentile latency (ns) : 17527
Result is : VALID
  Min duration satisfied : Yes
  Min queries satisfied : Yes
  Early stopping satisfied: Yes
Early Stopping Result:
 * Early stopping 90.0th percentile estimate: 17690
 * Early stopping 99.0th percentile estimate: 30001

QPS w/ loadgen overhead         : 70430.70
50.00 percentile latency (ns)   : 9000
99.90 percentile latency (ns)   : 41000

No warnings encountered during test.

1 ERROR encountered. See detailed log.
"""


def test_summary_v6_wording() -> None:
    m = parse_summary_text(SUMMARY_V6)
    assert m["scenario"] == "SingleStream"
    assert m["mode"] == "performance"
    assert m["validity"] == "VALID"
    assert m["latency_p90_ns"] == 17527
    assert m["latency_p50_ns"] == 9000
    assert m["latency_p99.9_ns"] == 41000
    assert m["early_stopping_p90_ns"] == 17690
    assert m["early_stopping_p99_ns"] == 30001
    assert m["queries_per_second"] == pytest.approx(70430.7)
    assert m["min_duration_met"] is True
    assert m["num_warnings"] == 0
    assert m["num_errors"] == 1


def test_summary_v4_wording_without_the_decimal() -> None:
    m = parse_summary_text(
        "99th percentile latency (ns) : 45433218\nResult is : INVALID\n"
        "  Early stopping satisfied: NO\n"
    )
    assert m["latency_p99_ns"] == 45433218
    assert m["validity"] == "INVALID"
    assert m["early_stopping_met"] is False


def test_detail_records_and_error_count() -> None:
    text = "\n".join(
        [
            ':::MLLOG {"key": "result_validity", "value": "VALID", "time_ms": 1}',
            ':::MLLOG {"key": "result_samples_per_second", "value": 12.5, "time_ms": 1}',
            ':::MLLOG {"key": "result_99.90_percentile_latency_ns", "value": 7, "time_ms": 1}',
            ':::MLLOG {"key": "error_invalid_config", "value": "Multiple conf files are used"}',
            ':::MLLOG {"key": "effective_test_mode", "value": "AccuracyOnly"}',
            ":::MLLOG {not json",
        ]
    )
    m = parse_detail_text(text)
    assert m["validity"] == "VALID"
    assert m["samples_per_second"] == 12.5
    assert m["latency_p99.9_ns"] == 7
    assert m["num_errors"] == 1
    assert "Multiple conf files" in str(m["errors"])
    assert m["mode"] == "accuracy"


def test_every_published_performance_log_parses(shared_fixtures: Path) -> None:
    folders = sorted(
        {
            p.parent
            for p in shared_fixtures.rglob("mlperf_log_summary.txt")
            if p.parent.parent.name == "performance"
        }
    )
    assert len(folders) >= 10
    for folder in folders:
        m = read_logs(folder)
        assert m["validity"] in ("VALID", "INVALID"), folder
        assert m["scenario"] in ("SingleStream", "MultiStream", "Server", "Offline"), folder
        headline = {
            "SingleStream": "latency_p90_ns",
            "MultiStream": "latency_p99_ns",
            "Server": "samples_per_second",
            "Offline": "samples_per_second",
        }
        assert isinstance(m[headline[str(m["scenario"])]], int | float), folder


def test_published_v5_detail_log(shared_fixtures: Path) -> None:
    detail = next(shared_fixtures.rglob("Asus_Tuf*/resnet50/singlestream/performance/run_1"))
    m = read_logs(detail)
    assert m["loadgen_version"] == "5.0.15 @ aea55edb04"
    assert m["latency_p90_ns"] == 87756879
    assert m["early_stopping_p90_ns"] == 88252341
    assert m["qsl_rng_seed"] == 6023615788873153749


def test_a_zero_early_stopping_estimate_means_none() -> None:
    """LoadGen logs 0 when a run had too few queries for early stopping: no estimate, not a
    damaged log (the report then judges the plain percentile)."""
    detail = (
        ':::MLLOG {"key": "early_stopping_latency_ss", "value": 0, "time_ms": 1.0}\n'
        ':::MLLOG {"key": "early_stopping_latency_ms", "value": 0, "time_ms": 1.0}\n'
        ':::MLLOG {"key": "result_90.00_percentile_latency_ns", "value": 34000, "time_ms": 1.0}\n'
    )
    m = parse_detail_text(detail)
    assert "early_stopping_p90_ns" not in m
    assert "early_stopping_p99_ns" not in m
    assert m["latency_p90_ns"] == 34000


def test_why_early_stopping_failed_is_read_from_the_summary() -> None:
    """ "early stopping needs 64 queries" was only in LoadGen's summary file."""
    from repro.cli.run_output import _why_invalid
    from repro.runs.loadgen_logs import parse_summary_text

    text = (
        "Result is : INVALID\n  Min duration satisfied : Yes\n  Min queries satisfied : Yes\n"
        "  Early stopping satisfied: NO\nRecommendations:\n"
        " * The test exited early, before enough queries were issued.\n"
        "Early Stopping Result:\n * Only processed 32 queries.\n"
        " * Need to process at least 64 queries for early stopping.\n"
    )
    m = parse_summary_text(text)
    assert (m["early_stopping_queries_needed"], m["early_stopping_queries_done"]) == (64, 32)
    assert _why_invalid(m) == "early stopping needs 64 queries, 32 ran"
