"""Values that would fail later (a crash, an overflow, a wrong verdict) are refused up front.

Each bad value is planted in a valid spec at its JSON path; `repro validate` must exit 2 and
name the file, the path and what the field accepts. Values on the edge of a range still pass.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from repro.cli import cli
from tests.helpers import portable_spec

UINT64 = 2**64 - 1
NAN = float("nan")
INF = float("inf")

# ort-digits runs SingleStream, MultiStream, Server and Offline, in this order.
SETTINGS = "$.workload.scenarios[{}].settings"
SINGLE, SERVER, OFFLINE = SETTINGS.format(0), SETTINGS.format(2), SETTINGS.format(3)
ORT = "$.backend.options"
PARAMS = "$.artifacts.dataset.params"  # recipe sklearn-digits

#: (JSON path, bad value, words of the accepted range the message must hold)
BAD: list[tuple[str, Any, str]] = [
    ("$.workload.seeds.qsl_rng_seed", UINT64 + 1, "0 to 2**64-1"),
    ("$.workload.seeds.accuracy_log_rng_seed", -1, "0 to 2**64-1"),
    ("$.workload.seeds.schedule_rng_seed", "7", "0 to 2**64-1"),
    (f"{SINGLE}.min_duration_ms", 10**30, "0 to 604800000 (7 days)"),
    (f"{SINGLE}.min_duration_ms", 1e30, "0 to 604800000 (7 days)"),
    (f"{SINGLE}.max_duration_ms", 604_800_001, "up to 604800000 (7 days)"),
    (f"{SINGLE}.min_query_count", UINT64 + 1, "0 to 2**64-1"),
    (f"{SINGLE}.max_query_count", True, "up to 2**64-1"),
    (f"{SINGLE}.single_stream_expected_latency_ns", UINT64 + 1, "1 to 2**64-1"),
    (f"{SERVER}.server_target_qps", 1e10, "> 0 and <= 1e9"),
    (f"{SERVER}.server_target_qps", NAN, "> 0 and <= 1e9"),
    (f"{SERVER}.server_target_latency_ns", 0, "1 to 2**64-1"),
    (f"{OFFLINE}.offline_expected_qps", INF, "> 0 and <= 1e9"),
    (f"{OFFLINE}.offline_expected_qps", "1000", "> 0 and <= 1e9"),
    (f"{ORT}.intra_op_threads", 100_000, "0 (the library chooses) to 1024"),
    (f"{ORT}.inter_op_threads", -1, "0 (the library chooses) to 1024"),
    (f"{ORT}.allow_spinning", "false", "valid boolean"),
    (f"{ORT}.allow_spinning", 0, "valid boolean"),
    ("$.workload.total_sample_count", "450", "1 to 10000000"),
    ("$.workload.total_sample_count", 10_000_001, "1 to 10000000"),
    ("$.workload.performance_sample_count", 450.0, "1 to 10000000"),
    ("$.workload.batch_size", True, "1 to 4096"),
    ("$.workload.batch_size", 4097, "1 to 4096"),
    ("$.workload.accuracy.class_offset", 2**63, "-1000000 to 1000000"),
    ("$.tolerances.throughput_rel", INF, "> 0 and <= 1"),
    ("$.tolerances.throughput_rel", 2.0, "> 0 and <= 1"),
    ("$.tolerances.latency_rel", NAN, "> 0 and <= 1"),
    ("$.tolerances.accuracy_ratio", NAN, "> 0 and <= 1"),
    ("$.tolerances.confidence", 0.5, "between 0.5 and 1"),
    ("$.tolerances.confidence", 1, "between 0.5 and 1"),
    ("$.original.metrics.Offline.samples_per_second", INF, "finite number"),
    (f"{PARAMS}.seed", 2**32, "[0, 4294967295]"),
    (f"{PARAMS}.seed", True, "[0, 4294967295]"),
    (f"{PARAMS}.seed", "0", "[0, 4294967295]"),
    (f"{PARAMS}.test_fraction", 1.5, "[0.01, 0.99]"),
    (f"{PARAMS}.test_fraction", NAN, "finite number"),
]

#: (JSON path, the last value accepted, the first refused, other values the edge needs);
#: strict types still take a JSON integer for a float (server_target_qps, latency_rel)
EDGES: list[tuple[str, Any, Any, dict[str, Any]]] = [
    ("$.workload.seeds.qsl_rng_seed", UINT64, UINT64 + 1, {}),
    (f"{SINGLE}.max_duration_ms", 604_800_000, 604_800_001, {}),
    (f"{SINGLE}.max_query_count", UINT64, UINT64 + 1, {}),
    # 1e9 queries a second plan 1e9 x duration queries: with no minimum duration, only 1024.
    (f"{SERVER}.server_target_qps", 1_000_000_000, 1_000_000_001, {f"{SERVER}.min_duration_ms": 0}),
    (f"{ORT}.intra_op_threads", 1024, 1025, {}),
    ("$.workload.batch_size", 4096, 4097, {}),
    ("$.tolerances.latency_rel", 1, 1.000001, {}),
    ("$.tolerances.confidence", 0.500001, 0.5, {}),
    ("$.workload.accuracy.class_offset", -1_000_000, -1_000_001, {}),
    (f"{PARAMS}.seed", 2**32 - 1, 2**32, {}),
    (f"{PARAMS}.test_fraction", 0.99, 0.991, {}),
]


def _plant(spec: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at a JSON path like `$.a.b[0].c`, creating the last key if needed."""
    steps: list[str | int] = [
        int(index) if index else key for key, index in re.findall(r"\.(\w+)|\[(\d+)\]", path)
    ]
    node: Any = spec
    for step in steps[:-1]:
        node = node[step]
    node[steps[-1]] = value


def _validate(tmp_path: Path, root: Path, plants: dict[str, Any]) -> tuple[Path, Result]:
    spec = portable_spec(root, "ort-digits")
    for path, value in plants.items():
        _plant(spec, path, value)
    target = tmp_path / "spec.json"
    target.write_text(json.dumps(spec))  # NaN and Infinity as Python's JSON writes them
    return target, CliRunner().invoke(cli, ["validate", str(target)])


@pytest.mark.parametrize(("path", "value", "accepted"), BAD, ids=lambda v: str(v)[:40])
def test_a_value_that_would_fail_later_is_refused(
    tmp_path: Path, root: Path, path: str, value: Any, accepted: str
) -> None:
    target, result = _validate(tmp_path, root, {path: value})
    assert result.exit_code == 2, result.output
    assert str(target) in result.stderr
    assert f"{path}:" in result.stderr
    assert accepted in result.stderr
    assert "Traceback" not in result.output + result.stderr


@pytest.mark.parametrize(
    ("path", "last", "first_refused", "also"), EDGES, ids=[e[0] for e in EDGES]
)
def test_the_edge_of_each_range_is_accepted_and_no_further(
    tmp_path: Path, root: Path, path: str, last: Any, first_refused: Any, also: dict[str, Any]
) -> None:
    _, result = _validate(tmp_path, root, {**also, path: last})
    assert result.exit_code == 0, result.stderr
    _, result = _validate(tmp_path, root, {**also, path: first_refused})
    assert result.exit_code == 2, result.output
    assert f"{path}:" in result.stderr


def test_settings_that_make_loadgen_plan_too_many_samples_are_refused(
    tmp_path: Path, root: Path
) -> None:
    # Each value is in its range; together LoadGen would generate 1.1 x 5 s x 1e9 samples.
    _, result = _validate(tmp_path, root, {f"{OFFLINE}.offline_expected_qps": 1e9})
    assert result.exit_code == 2, result.output
    assert f"{OFFLINE}: LoadGen would generate about 5.5e+09 samples" in result.stderr
    assert "at most 100,000,000" in result.stderr
