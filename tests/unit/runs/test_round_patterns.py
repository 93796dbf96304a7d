"""Patterns of whole published rounds, each made by tests/mlperf_gen.py: a genuine result is
read, never refused as edited, and its headline is the one the round's checker takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import SpecError
from repro.runs.mlperf import read_mlperf_result
from tests.mlperf_gen import Result, write_result


def _read(tmp_path: Path, r: Result) -> dict[str, object]:
    record = read_mlperf_result(write_result(tmp_path, r).parent)
    return record.performance(r.scenario)[0].metrics


def test_a_v2_multistream_result_is_its_per_query_p99_not_the_per_sample_one(
    tmp_path: Path,
) -> None:
    r = Result(scenario="MultiStream", loadgen="2.1.0", value=45_433_218, sample_p99_ns=30_000_000)
    metrics = _read(tmp_path, r)
    assert metrics["latency_p99_ns"] == 45_433_218
    assert metrics["sample_latency_p99_ns"] == 30_000_000


def test_a_v6_multistream_log_states_the_figure_once(tmp_path: Path) -> None:
    metrics = _read(tmp_path, Result(scenario="MultiStream", loadgen="6.0.17", value=50_152))
    assert metrics["latency_p99_ns"] == 50_152
    assert "sample_latency_p99_ns" not in metrics


@pytest.mark.parametrize("value", [0.4951, 12.345, 2531.005])
def test_a_server_summary_rounded_to_two_decimals_agrees_with_its_detail_log(
    tmp_path: Path, value: float
) -> None:
    r = Result(scenario="Server", value=value, summary_decimals=2)
    assert _read(tmp_path, r)["samples_per_second"] == value  # the detail log's exact figure


def test_a_summary_that_differs_beyond_its_rounding_is_still_refused(tmp_path: Path) -> None:
    r = Result(scenario="Server", value=0.4951, summary_decimals=2)
    sdir = write_result(tmp_path, r)
    summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace(": 0.50", ": 0.52"))
    with pytest.raises(SpecError, match="disagree on samples_per_second"):
        read_mlperf_result(sdir.parent)
