"""NVIDIA AIPerf's results: `profile_export_aiperf.json` (the summary) and, beside it,
`profile_export.jsonl` (one record a request); a multi-run profile keeps one of each per run
under `profile_runs/run_NNNN/`.

Definitions (AIPerf 0.13's sources): TTFT from the request's start to its first response with
content; ITL (reported here as TPOT) is (request latency - TTFT) / (output tokens - 1) (with
`--per-chunk-usage`, minus the first chunk's tokens); tokens are the server's with
`--use-server-token-count`, else AIPerf's tokenizer's; request and output-token throughput are
over the benchmark's duration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import numpy as np

from repro.errors import SpecError
from repro.formats.served import definitions as d
from repro.formats.served.files import Fields, bad, jsonl, load_json, server_url
from repro.formats.served.requests import Requests
from repro.formats.served.toolrun import ToolRun

SUMMARY: Final = "profile_export_aiperf.json"
RECORDS: Final = "profile_export.jsonl"
TOOL: Final = "AIPerf"
_TO_NS: Final = {"ns": 1.0, "us": 1e3, "ms": 1e6, "sec": 1e9, "s": 1e9}
#: the schema versions this reader was written against (0.13 writes 1.4)
KNOWN_SCHEMAS: Final = ("1.",)


def is_aiperf(path: Path) -> bool:
    return path.name == SUMMARY


def read_aiperf(path: Path) -> ToolRun:
    """One AIPerf run from its summary (and its per-request records beside it)."""
    top = Fields(path, load_json(path, TOOL), tool=TOOL)
    schema = top.need_text("schema_version") or ""
    if not schema.startswith(KNOWN_SCHEMAS):
        raise SpecError(
            f"{path}: $.schema_version: {schema!r}, a version this repro does not read "
            f"(it reads {', '.join(v + 'x' for v in KNOWN_SCHEMAS)})",
            hint="compare it with a repro that knows the version, or export it with AIPerf 0.13",
        )
    if top.flag("was_cancelled") or top.flag("is_complete") is False:
        raise bad(path, "$.is_complete", "false: the run was cancelled before its end", TOOL)
    config = top.need("input_config")
    endpoint = config.need("endpoint")
    streaming = endpoint.flag("streaming")
    server_counts = bool(endpoint.flag("use_server_token_count"))
    counter: d.Counter = "server" if server_counts else "tokenizer"
    per_chunk = bool(endpoint.flag("per_chunk_usage"))
    scenario, load = _load(path, config)
    metrics: dict[str, Any] = {}
    rate = _avg(top, "request_throughput")
    if rate is not None:
        metrics["samples_per_second"] = rate
    tokens = _avg(top, "output_token_throughput")
    if tokens is not None:
        metrics["tokens_per_second"] = tokens
    for name, key in (
        ("latency", "request_latency"),
        ("ttft", "time_to_first_token"),
        ("tpot", "inter_token_latency"),
    ):
        metrics.update(_spread(top, key, name))
    completed = _avg(top, "completed_request_count") or _avg(top, "request_count")
    errors = len(top.items("error_summary"))
    metrics["sut_queries_completed"] = int(completed or 0)
    metrics["request_errors"] = (
        sum(_error_count(e) for e in top.items("error_summary")) if errors else 0
    )
    if not streaming:
        for k in [k for k in metrics if k.startswith(("ttft_", "tpot_"))]:
            del metrics[k]
    defs: d.Definitions = {
        "request_rate": d.request_rate("n/window"),
        "latency": d.latency("sent"),
        "token_rate": d.token_rate(counter),
    }
    if streaming:
        defs["ttft"] = d.ttft("first-content")
        defs["tpot"] = d.tpot("decode/(n-first)" if per_chunk else "decode/(n-1)", counter)
    models = config.child("models")
    model = None
    if models is not None and models.items("items"):
        first = models.items("items")[0]
        model = first.get("name") if isinstance(first, dict) else None
    urls = endpoint.items("urls")
    run_info = top.child("run_info")
    datasets = config.items("datasets")
    prompts = datasets[0].get("prompts") if datasets and isinstance(datasets[0], dict) else None
    facts = {
        "version": top.text("aiperf_version"),
        "model": model if isinstance(model, str) else None,
        "server_url": server_url(urls[0]) if urls and isinstance(urls[0], str) else None,
        "api": endpoint.text("type"),
        "streaming": streaming,
        "tokens_counted_by": counter,
        "random_seed": run_info.obj.get("random_seed") if run_info else None,
        "trial": run_info.obj.get("trial") if run_info else None,
        "benchmark_id": run_info.text("benchmark_id") if run_info else None,
        "started": top.text("start_time"),
        "prompts": prompts if isinstance(prompts, dict) else None,
    }
    records = path.with_name(RECORDS)
    requests = _requests(records, counter) if records.is_file() else None
    notes = (
        []
        if requests is not None
        else [
            f"{path.name}: no {RECORDS} beside it: AIPerf's summary only (percentiles, no requests)"
        ]
    )
    return ToolRun(
        "aiperf",
        path,
        scenario,
        load,
        metrics,
        defs,
        requests,
        {k: v for k, v in facts.items() if v is not None},
        notes,
    )


def _load(path: Path, config: Fields) -> tuple[Any, str]:
    phases = [p for p in config.items("phases") if isinstance(p, dict)]
    profiling = next((p for p in phases if p.get("kind", p.get("name")) == "profiling"), None)
    if profiling is None:
        raise bad(path, "$.input_config.phases", "no profiling phase", TOOL)
    kind = profiling.get("type")
    if kind == "concurrency":
        return "Offline", f"concurrency {profiling.get('concurrency')}"
    if kind in ("request_rate", "poisson", "constant"):
        rate = profiling.get("request_rate") or profiling.get("rate")
        pattern = profiling.get("arrival_pattern") or kind
        return "Server", f"{pattern}, {rate} requests/s"
    raise bad(
        path,
        "$.input_config.phases[profiling].type",
        f"{kind!r}: a load this repro does not map to LoadGen's scenarios",
        TOOL,
    )


def _avg(top: Fields, key: str) -> float | None:
    metric = top.child(key)
    return metric.num_or_none("avg") if metric is not None else None


def _spread(top: Fields, key: str, name: str) -> dict[str, float]:
    metric = top.child(key)
    if metric is None:
        return {}
    unit = metric.need_text("unit") or ""
    scale = _TO_NS.get(unit)
    if scale is None:
        raise bad(top.path, f"{metric.where}.unit", f"{unit!r}: not a unit of time", TOOL)
    out = {}
    for stat, suffix in (("avg", "mean"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99")):
        value = metric.num_or_none(stat)
        if value is not None and value > 0:
            out[f"{name}_{suffix}_ns"] = value * scale
    return out


def _error_count(entry: Any) -> int:
    if isinstance(entry, dict) and isinstance(entry.get("count"), int):
        return max(int(entry["count"]), 0)
    return 1


def _requests(path: Path, counter: d.Counter) -> Requests | None:
    """The completed requests of `profile_export.jsonl` (errors and warm-up left out)."""
    start, ttft, latency, tokens = [], [], [], []
    for n, record in jsonl(path, TOOL):
        if not isinstance(record, dict):
            raise bad(path, f"line {n}", "must be an object", TOOL)
        meta = record.get("metadata") or {}
        if record.get("error") or meta.get("benchmark_phase", "profiling") != "profiling":
            continue
        if meta.get("was_cancelled"):
            continue
        fields = Fields(path, record.get("metrics"), f"line {n}.metrics", tool=TOOL)
        row = Fields(path, meta, f"line {n}.metadata", tool=TOOL)
        t0 = row.num("request_start_ns")
        lat = _value_ns(fields, "request_latency")
        first = _value_ns(fields, "time_to_first_token", required=False)
        osl = fields.child("output_sequence_length")
        count = osl.num("value") if osl is not None else None
        if lat is None or count is None:
            continue
        start.append(t0)
        latency.append(lat)
        ttft.append(first if first is not None else np.nan)
        tokens.append(count)
    if len(latency) < 2:
        return None
    s = np.asarray(start, dtype=np.float64)
    return Requests(
        start_ns=s - s.min(),
        ttft_ns=np.asarray(ttft, dtype=np.float64),
        latency_ns=np.asarray(latency, dtype=np.float64),
        output_tokens=np.asarray(tokens, dtype=np.int64),
        counter=counter,
    )


def _value_ns(fields: Fields, key: str, *, required: bool = True) -> float | None:
    metric = fields.need(key) if required else fields.child(key)
    if metric is None:
        return None
    scale = _TO_NS.get(metric.need_text("unit") or "")
    if scale is None:
        raise bad(fields.path, f"{metric.where}.unit", "not a unit of time", TOOL)
    value = metric.num("value")
    return None if value is None else value * scale
