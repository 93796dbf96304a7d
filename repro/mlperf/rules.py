"""The figure of a published result that its round's submission checker takes as the metric.

From the checkers' own tables (mlcommons/inference `tools/submission`, `RESULT_FIELD_NEW` and
`RESULT_FIELD_BENCHMARK_OVERWRITE`), as summary metrics of `repro.mlperf.loadgen_logs`:

- Offline: samples/s; an LLM's tokens/s.
- Server: the scheduled rate up to v4.0, the completed rate since v4.1 (whatever the
  summary's headline says: some v4.1 results ran LoadGen 4.0, which headlines the scheduled
  rate); an LLM's completed tokens/s.
- SingleStream: since v2.0 LoadGen's early-stopping estimate of the target percentile (the
  90th; the 99.9th for 3D-UNet and PointPainting, whose summary headlines it), before v2.0 the
  percentile itself; llama3.1-8b-edge takes the 90th percentile latency (its early-stopping
  estimate is of the time per output token).
- MultiStream: since v2.0 the early-stopping estimate of the 99th percentile per query, the
  percentile before, and samples per query in v1.x (the summary's headline).

A round that no folder names is read by its summary's headline, and said so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: benchmarks whose SingleStream metric is the latency percentile, not its estimate
_SS_LATENCY = ("llama3.1-8b-edge",)


@dataclass(frozen=True)
class CheckerMetric:
    """The metric taken, its unit, and the rule that chose it when the rule is the round's."""

    key: str
    unit: str
    rule: str | None = None


def round_number(round_name: str | None) -> tuple[int, int] | None:
    """`v4.1` -> (4, 1); None for a name that is not a round."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)", round_name or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _latency_key(metrics: dict[str, Any], default: str) -> str:
    """The percentile the summary headlines (`latency_p99.9_ns`), or `default`."""
    headline = metrics.get("mlperf_metric")
    if isinstance(headline, str) and re.fullmatch(r"latency_p[\d.]+_ns", headline):
        return headline
    return default


def checker_metric(
    round_name: str | None, benchmark: str, scenario: str, metrics: dict[str, Any]
) -> CheckerMetric:
    """The metric the checker of `round_name` takes for this scenario's run (`metrics`)."""
    known = round_number(round_name)
    base = benchmark.removesuffix("-interactive")
    if scenario in ("Offline", "Server") and metrics.get("tokens_per_second") is not None:
        return CheckerMetric("tokens_per_second", "tokens/s")
    if scenario == "Offline":
        return CheckerMetric("samples_per_second", "samples/s")
    if scenario == "Server":
        return _server(known, round_name, metrics)
    latency = _latency_key(metrics, "latency_p90_ns" if scenario == "SingleStream" else "")
    if scenario == "MultiStream":
        if metrics.get("mlperf_metric") == "samples_per_query":
            return CheckerMetric("samples_per_query", "samples/query")
        latency = latency or "latency_p99_ns"
    if scenario == "SingleStream" and any(base.startswith(b) for b in _SS_LATENCY):
        return CheckerMetric(
            "latency_p90_ns", "ns", f"{base}: the checker takes the 90th percentile latency"
        )
    estimate = "early_stopping_" + latency.removeprefix("latency_")
    if (known is None or known >= (2, 0)) and metrics.get(estimate) is not None:
        return CheckerMetric(estimate, "ns")
    return CheckerMetric(latency, "ns")


def _server(
    known: tuple[int, int] | None, round_name: str | None, metrics: dict[str, Any]
) -> CheckerMetric:
    headline = metrics.get("mlperf_metric")
    scheduled = metrics.get("scheduled_samples_per_second") is not None
    if known is None:
        if headline == "scheduled_samples_per_second" and scheduled:
            return CheckerMetric(
                "scheduled_samples_per_second", "samples/s",
                "round unknown: the summary's headline (the scheduled rate)",
            )  # fmt: skip
        return CheckerMetric("samples_per_second", "samples/s")
    if known <= (4, 0) and scheduled:
        return CheckerMetric("scheduled_samples_per_second", "samples/s")
    if headline == "scheduled_samples_per_second":
        return CheckerMetric(
            "samples_per_second", "samples/s",
            f"{round_name} rule: the completed rate (the summary headlines the scheduled rate)",
        )  # fmt: skip
    return CheckerMetric("samples_per_second", "samples/s")
