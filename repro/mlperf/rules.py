"""The figure of a published result that its round's submission checker takes as the metric.

From the checkers' own tables (mlcommons/inference `tools/submission`, `RESULT_FIELD_NEW` and
`RESULT_FIELD_BENCHMARK_OVERWRITE`), as summary metrics of `repro.runs.loadgen_logs`:

- Offline: samples/s; an LLM's tokens/s where its round's table says so (`OVERWRITE`: GPT-J's
  inferred tokens/s in v4.1 and v5.0), its samples/s where the round lists no rule for it (a
  v4.0 GPT-J); in a round the tables do not cover, tokens/s where the log gives them.
- Server: the scheduled rate up to v4.0, the completed rate since v4.1 (whatever the
  summary's headline says: some v4.1 results ran LoadGen 4.0, which headlines the scheduled
  rate); an LLM's completed tokens/s by its round's table (v4.0's Llama 2 70B: completed
  samples/s).
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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: benchmarks whose SingleStream metric is the latency percentile, not its estimate
_SS_LATENCY = ("llama3.1-8b-edge",)

_TOKENS = {"Offline": "result_tokens_per_second", "Server": "result_completed_tokens_per_second"}
_INFERRED = {
    "Offline": "result_inferred_tokens_per_second",
    "Server": "result_inferred_completed_tokens_per_second",
}
_EDGE = {
    "Offline": "result_tokens_per_second",
    "SingleStream": "result_90.00_percentile_latency_ns",
}
_V40 = {"Offline": "result_tokens_per_second", "Server": "result_completed_samples_per_sec"}
_GPTJ = ("gptj-99", "gptj-99.9")
_LLAMA2 = ("llama2-70b-99", "llama2-70b-99.9")
_V51 = (*_LLAMA2, "llama3.1-8b", "mixtral-8x7b", "llama3.1-405b", "deepseek-r1")
_V5_EDGE = {"llama3.1-8b-edge": _EDGE, "whisper": {"Offline": "result_tokens_per_second"}}
#: the submission checkers' RESULT_FIELD_BENCHMARK_OVERWRITE, round by round, as LoadGen's
#: detail keys: v4.0 and v4.1 from the v4.1 checker (mlcommons/inference r4.1,
#: tools/submission/submission_checker.py), v5.0 on from the pinned one
#: (tools/submission/submission_checker/constants.py; tests/unit/mlperf/test_rules.py holds
#: this table to it). A benchmark a round does not list takes the round's default.
OVERWRITE: dict[str, dict[str, dict[str, str]]] = {
    "v4.0": dict.fromkeys(_LLAMA2, _V40),
    "v4.1": {
        **dict.fromkeys((*_LLAMA2, "mixtral-8x7b"), _TOKENS),
        **dict.fromkeys(_GPTJ, _INFERRED),
    },
    "v5.0": {
        **dict.fromkeys(
            (
                *_LLAMA2,
                "llama2-70b-interactive-99",
                "llama2-70b-interactive-99.9",
                "mixtral-8x7b",
                "llama3.1-405b",
            ),
            _TOKENS,
        ),
        **dict.fromkeys(_GPTJ, _INFERRED),
    },
    "v5.1": {**dict.fromkeys(_V51, _TOKENS), **_V5_EDGE},
    "v6.0": {**dict.fromkeys(("gpt-oss-120b", *_V51), _TOKENS), **_V5_EDGE},
    "v6.1": {**dict.fromkeys(("gpt-oss-120b", *_V51), _TOKENS), **_V5_EDGE},
}
#: the detail keys of OVERWRITE as this reader's metrics (`repro.runs.loadgen_logs`)
FIELDS: dict[str, tuple[str, str]] = {
    "result_tokens_per_second": ("tokens_per_second", "tokens/s"),
    "result_completed_tokens_per_second": ("tokens_per_second", "tokens/s"),
    "result_inferred_tokens_per_second": ("inferred_tokens_per_second", "tokens/s"),
    "result_inferred_completed_tokens_per_second": ("inferred_tokens_per_second", "tokens/s"),
    "result_completed_samples_per_sec": ("samples_per_second", "samples/s"),
    "result_90.00_percentile_latency_ns": ("latency_p90_ns", "ns"),
}


#: the names a round's checker maps to its benchmarks' (MODEL_CONFIG[round]["model_mapping"]
#: of the pinned checker, the entries that meet OVERWRITE; tests/unit/mlperf/test_rules.py holds
#: them to it): a v5.1 folder `llama3_1-8b` is llama3.1-8b, whose Offline metric is tokens/s
_LLAMA31 = {
    "llama3_1-405b": "llama3.1-405b",
    "llama3_1-8b": "llama3.1-8b",
    "llama3_1-8b-edge": "llama3.1-8b-edge",
}
ALIASES: dict[str, dict[str, str]] = {
    "v5.0": {"llama3_1-405b": "llama3.1-405b"},
    "v5.1": _LLAMA31,
    "v6.0": _LLAMA31,
    "v6.1": _LLAMA31,
}


def mlperf_model(
    round_name: str | None, benchmark: str, submitter_mapping: Mapping[str, Any] | None = None
) -> str:
    """The benchmark a result folder is, as the round's checker names it: the folder's name,
    else the round's alias of it, else the submitter's `model_mapping.json` (an open division's
    `llama3_1-70b-fp8_dyn` -> `llama2-70b-99.9`), else the checker's guess (`llama3_1-405b`
    in the name; `bert-99` in an open variant's)."""
    interactive = benchmark.endswith("-interactive")
    base = benchmark.removesuffix("-interactive")
    known = round_number(round_name)
    table = OVERWRITE.get(f"v{known[0]}.{known[1]}", {}) if known else {}
    aliases = ALIASES.get(f"v{known[0]}.{known[1]}", {}) if known else {}
    if base in table:
        name = base
    elif base in aliases:
        name = aliases[base]
    elif submitter_mapping and isinstance(submitter_mapping.get(base), str):
        name = submitter_mapping[base]
    elif "llama3_1-405b" in base:
        name = "llama3.1-405b"
    elif "bert-99" in base and not base.startswith("bert-99"):
        # the checker's guess for an open variant (`obert-large-base-none-bert-99`): its
        # accuracy is BERT's F1
        name = "bert-99.9" if "bert-99.9" in base else "bert-99"
    else:
        name = base
    return f"{name}-interactive" if interactive else name


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


def _latency_key(metrics: Mapping[str, Any], default: str) -> str:
    """The percentile the summary headlines (`latency_p99.9_ns`), or `default`."""
    headline = metrics.get("mlperf_metric")
    if isinstance(headline, str) and re.fullmatch(r"latency_p[\d.]+_ns", headline):
        return headline
    return default


def checker_metric(
    round_name: str | None, benchmark: str, scenario: str, metrics: Mapping[str, Any]
) -> CheckerMetric:
    """The metric the checker of `round_name` takes for this scenario's run (`metrics`)."""
    known = round_number(round_name)
    base = benchmark.removesuffix("-interactive")
    table = OVERWRITE.get(f"v{known[0]}.{known[1]}") if known else None
    field = (table.get(benchmark) or table.get(base) or {}).get(scenario) if table else None
    if field is not None:
        key, unit = FIELDS[field]
        said = metrics.get("mlperf_metric")
        rule = None
        if scenario == "SingleStream" and key.startswith("latency_"):
            rule = f"{base}: the checker takes the {key[9:-3]}th percentile latency"
        elif said is not None and said != key:
            rule = f"{round_name} rule: {benchmark} {scenario} is {field} (the summary headlines "
            rule += f"{said})"
        return CheckerMetric(key, unit, rule)
    tokens = metrics.get("tokens_per_second") is not None
    if scenario in ("Offline", "Server") and tokens and table is None:
        return CheckerMetric("tokens_per_second", "tokens/s")  # a round the tables predate
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
    known: tuple[int, int] | None, round_name: str | None, metrics: Mapping[str, Any]
) -> CheckerMetric:
    headline = metrics.get("mlperf_metric")
    scheduled = metrics.get("scheduled_samples_per_second") is not None
    if known is None:
        if headline == "scheduled_samples_per_second" and scheduled:
            return CheckerMetric(
                "scheduled_samples_per_second",
                "samples/s",
                "round unknown: the summary's headline (the scheduled rate)",
            )
        return CheckerMetric("samples_per_second", "samples/s")
    if known <= (4, 0) and scheduled:
        return CheckerMetric("scheduled_samples_per_second", "samples/s")
    if headline == "scheduled_samples_per_second":
        return CheckerMetric(
            "samples_per_second",
            "samples/s",
            f"{round_name} rule: the completed rate (the summary headlines the scheduled rate)",
        )
    return CheckerMetric("samples_per_second", "samples/s")


def endpoints_metric(
    round_name: str | None, benchmark: str, scenario: str, interactive: bool
) -> CheckerMetric:
    """The metric the checker takes for an MLCommons endpoints result (v6.1 on: no LoadGen log;
    its endpoints parser maps the summary's fields to LoadGen's keys).

    The checker names an endpoints result's scenario by its config's `type`: `offline` stays
    lower-case and so never meets the round's benchmark table (an Offline result is always
    samples per second, the issued samples over the duration), `online` becomes Server (the
    table applies: tokens per second for the LLMs it lists), a folder named Interactive stays
    Interactive (not in the table: samples per second) and SingleStream takes the mean latency
    (the table's 90th percentile for llama3.1-8b-edge, from the early-stopping percentiles)."""
    known = round_number(round_name)
    table = OVERWRITE.get(f"v{known[0]}.{known[1]}") if known else None
    base = benchmark.removesuffix("-interactive")
    if scenario == "SingleStream":
        if table is not None and (table.get(base) or {}).get("SingleStream"):
            return CheckerMetric(
                "latency_early_stopping_p90_ns",
                "ns",
                f"{round_name} rule: {base} SingleStream is the 90th percentile latency (an "
                "endpoints result's early-stopping estimate)",
            )
        return CheckerMetric("latency_mean_ns", "ns", "endpoints: SingleStream is the mean latency")
    if scenario == "Server" and not interactive and table is not None:
        field = (table.get(base) or {}).get("Server")
        if field is not None:
            key, unit = FIELDS[field]
            return CheckerMetric(key, unit, f"{round_name} rule: {base} Server is {field}")
    if scenario == "Offline":
        return CheckerMetric(
            "samples_per_second",
            "samples/s",
            "endpoints: the checker takes an offline result's issued samples over its "
            "duration (its benchmark table does not apply to the lower-case scenario)",
        )
    return CheckerMetric("samples_per_second", "samples/s")
