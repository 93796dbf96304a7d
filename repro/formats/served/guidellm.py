"""GuideLLM's results (`guidellm run --output kind=json`; 0.8 writes `metadata.version` 2): one
benchmark per load it ran (a sweep runs several), each with its metrics and (a sample of) its
requests.

Definitions (GuideLLM 0.8's sources): TTFT from the request's start to its first token
iteration; ITL (reported here as TPOT) is (last token - first token) / (output tokens - 1);
GuideLLM's own TPOT, (last token - start) / tokens with the first token included, is not
compared. Its `requests_per_second` and `output_tokens_per_second` are means of a rate series:
the rates compared here are the benchmark's completed requests and output tokens over its
duration, as every other harness reckons them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import numpy as np

from repro.errors import SpecError
from repro.formats.served import definitions as d
from repro.formats.served.files import Fields, bad, load_json, server_url
from repro.formats.served.requests import Requests
from repro.formats.served.toolrun import ToolRun

TOOL: Final = "GuideLLM"
KNOWN_VERSIONS: Final = (2,)


def is_guidellm(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and "benchmarks" in doc
        and "guidellm_version" in (doc.get("metadata") or {})
    )


def read_guidellm(path: Path, doc: Any | None = None) -> list[ToolRun]:
    """Every benchmark of a GuideLLM result file, in its order."""
    top = Fields(path, load_json(path, TOOL) if doc is None else doc, tool=TOOL)
    meta = top.need("metadata")
    version = meta.obj.get("version")
    if version not in KNOWN_VERSIONS:
        raise SpecError(
            f"{path}: $.metadata.version: {version!r}, a format this repro does not read "
            f"(it reads {', '.join(map(str, KNOWN_VERSIONS))}: GuideLLM 0.8)",
            hint="compare it with a repro that knows the format, or rerun with GuideLLM 0.8",
        )
    benchmarks = top.items("benchmarks", required=True)
    if not benchmarks:
        raise bad(path, "$.benchmarks", "empty: the run made no benchmark", TOOL)
    spec = (top.child("config") or top).child("spec")
    backend = spec.child("backend") if spec is not None else None
    prefer = spec.child("metrics") if spec is not None else None
    prefer_server = bool(prefer.flag("prefer_response_metrics")) if prefer is not None else False
    seed = spec.child("seed") if spec is not None else None
    common = {
        "version": meta.text("guidellm_version"),
        "model": backend.text("model") if backend else None,
        "server_url": server_url(backend.text("target")) if backend else None,
        "api": backend.text("request_format") if backend else None,
        "streaming": backend.flag("stream") if backend else None,
        "random_seed": seed.obj.get("value") if seed is not None else None,
    }
    return [
        _benchmark(path, Fields(path, b, f"$.benchmarks[{k}]", tool=TOOL), common, prefer_server)
        for k, b in enumerate(benchmarks)
    ]


def _benchmark(path: Path, b: Fields, common: dict[str, Any], prefer_server: bool) -> ToolRun:
    config = b.need("config")
    strategy = config.need("strategy")
    scenario, load = _load(strategy)
    duration = b.num("duration", zero=False)
    metrics_f = b.need("metrics")
    totals = metrics_f.need("request_totals")
    done = totals.count("successful") or 0
    errored = totals.count_or_none("errored") or 0
    incomplete = totals.count_or_none("incomplete") or 0
    requests = _requests(path, b, prefer_server)
    counter: d.Counter = (
        requests.counter if requests is not None else ("server" if prefer_server else "tokenizer")
    )
    metrics: dict[str, Any] = {
        "samples_per_second": done / duration,
        "sut_queries_completed": done,
        "request_errors": errored + incomplete,
    }
    out_tokens = _stat(metrics_f, "output_token_count", "total_sum")
    if out_tokens is not None:
        metrics["tokens_per_second"] = out_tokens / duration
    for name, key, scale in (
        ("ttft", "time_to_first_token_ms", 1e6),
        ("tpot", "inter_token_latency_ms", 1e6),
        ("latency", "request_latency", 1e9),
    ):
        metrics.update(_spread(metrics_f, key, name, scale))
    defs: d.Definitions = {
        "request_rate": d.request_rate("n/window"),
        "latency": d.latency("sent"),
        "token_rate": d.token_rate(counter),
        "ttft": d.ttft("first-content"),
        "tpot": d.tpot("last-first/(n-1)", counter),
    }
    notes = []
    if requests is None:
        notes.append(f"{path.name}: {b.where}: no requests kept: GuideLLM's summary only")
    elif len(requests) < done:
        notes.append(
            f"{path.name}: {b.where}: {len(requests)} of its {done} requests kept (a "
            "sample): per-request figures are the sample's"
        )
    facts = {
        **common,
        "tokens_counted_by": counter,
        "run_id": config.text("run_id"),
        "run_index": config.obj.get("run_index"),
    }
    return ToolRun(
        "guidellm",
        path,
        scenario,
        load,
        metrics,
        defs,
        requests,
        {k: v for k, v in facts.items() if v is not None},
        notes,
    )


def _load(strategy: Fields) -> tuple[Any, str]:
    kind = strategy.need_text("type_")
    if kind == "synchronous":
        return "SingleStream", "one request at a time"
    if kind == "concurrent":
        return "Offline", f"concurrency {strategy.obj.get('streams')}"
    if kind == "throughput":
        return "Offline", "all at once" + (
            f" (at most {strategy.obj['max_concurrency']} concurrent)"
            if strategy.obj.get("max_concurrency")
            else ""
        )
    if kind in ("poisson", "constant", "async"):
        return "Server", f"{kind}, {strategy.obj.get('rate')} requests/s"
    raise bad(
        strategy.path,
        f"{strategy.where}.type_",
        f"{kind!r}: a load this repro does not map to LoadGen's scenarios",
        TOOL,
    )


def _stat(metrics: Fields, key: str, stat: str) -> float | None:
    m = metrics.child(key)
    ok = m.child("successful") if m is not None else None
    return ok.num_or_none(stat) if ok is not None else None


def _spread(metrics: Fields, key: str, name: str, scale: float) -> dict[str, float]:
    m = metrics.child(key)
    ok = m.child("successful") if m is not None else None
    if ok is None or not ok.num_or_none("count"):
        return {}
    out = {}
    mean = ok.num_or_none("mean")
    if mean:
        out[f"{name}_mean_ns"] = mean * scale
    pct = ok.child("percentiles")
    for label in ("p50", "p90", "p99"):
        value = pct.num_or_none(label) if pct is not None else None
        if value:
            out[f"{name}_{label}_ns"] = value * scale
    return out


def _requests(path: Path, b: Fields, prefer_server: bool) -> Requests | None:
    reqs = b.child("requests")
    rows = reqs.items("successful") if reqs is not None else []
    start, ttft, latency, last, tokens = [], [], [], [], []
    server = False
    for k, raw in enumerate(rows):
        r = Fields(path, raw, f"{b.where}.requests.successful[{k}]", tool=TOOL)
        info = r.need("info")
        timings = info.need("timings")
        t0 = timings.num("request_start")
        end = timings.num("request_end")
        first = timings.num_or_none("first_token_iteration")
        final = timings.num_or_none("last_token_iteration")
        n = r.num_or_none("output_tokens")
        if t0 is None or end is None or n is None or end < t0:
            continue
        if (
            isinstance(raw.get("response_metrics"), dict)
            and raw["response_metrics"].get("text_tokens") is not None
        ):
            server = True
        start.append(t0)
        latency.append(end - t0)
        ttft.append(first - t0 if first is not None else np.nan)
        last.append(final - t0 if final is not None else np.nan)
        tokens.append(n)
    if len(latency) < 2:
        return None
    s = np.asarray(start) * 1e9
    return Requests(
        start_ns=s - s.min(),
        ttft_ns=np.asarray(ttft) * 1e9,
        latency_ns=np.asarray(latency) * 1e9,
        output_tokens=np.asarray(tokens, dtype=np.int64),
        counter="server" if (server and prefer_server) else "tokenizer",
        last_token_ns=np.asarray(last) * 1e9,
    )
